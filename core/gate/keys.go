package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// CheckKeys checks the top-level keys of the JSON object b against the
// struct v decodes it into. encoding/json matches keys to fields without
// regard to case and keeps the last of duplicate keys, so {"tool_name":
// "Read", "Tool_Name": "Bash"} would be decoded as Bash while a host, which
// reads keys exactly, ran Read. A key that appears twice, or that differs
// from one of v's field names only in case, is an error. Keys v does not
// know are left to the caller.
func CheckKeys(b []byte, v any) error {
	names := fieldNames(reflect.TypeOf(v))
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil // not an object: the decoder says so
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		if !names[key] {
			for name := range names {
				if strings.EqualFold(name, key) {
					return fmt.Errorf("key %q is not %q: keys are case-sensitive", key, name)
				}
			}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

var fieldCache sync.Map // reflect.Type → map[string]bool

// fieldNames returns the JSON names of t's fields, embedded structs'
// included.
func fieldNames(t reflect.Type) map[string]bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]bool)
	}
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			for n := range fieldNames(f.Type) {
				names[n] = true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		names[tag] = true
	}
	fieldCache.Store(t, names)
	return names
}
