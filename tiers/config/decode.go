package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// decode reads data, which must be one JSON object, into v (a pointer to a
// struct) strictly: a syntax error gives its line and column, and an object
// key v has no field for (matched exactly, case included) or a value of
// the wrong type is named by its dotted path (witness.files[1]).
func decode(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("the file is empty; want a JSON object ({} for the defaults)")
	}
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			return fmt.Errorf("line %d, column %d: %s", line, col, strings.TrimPrefix(se.Error(), "json: "))
		}
		return err
	}
	if _, ok := raw.(map[string]any); !ok {
		return fmt.Errorf("the file holds a JSON %s; want an object", kind(raw))
	}
	if err := shape(raw, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) { // what shape lets through: a number out of range
			return fmt.Errorf("%s: a JSON %s; want %s", te.Field, te.Value, want(te.Type))
		}
		return err
	}
	return nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// shape walks the decoded JSON raw beside the Go type t it will be decoded
// into and reports, by its dotted path, the first value (keys in sorted
// order) t has no field for or whose JSON type t cannot take. A null is
// taken as the zero value, as encoding/json takes it.
func shape(raw any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage || raw == nil {
		return nil // a section another package reads (tiers), or a null
	}
	mismatch := func() error {
		if path == "" {
			return fmt.Errorf("the file holds a JSON %s; want %s", kind(raw), want(t))
		}
		return fmt.Errorf("%s: a JSON %s; want %s", path, kind(raw), want(t))
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return mismatch()
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for _, k := range sortedKeys(m) {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: unknown field (known: %s)", join(path, k), strings.Join(sortedKeys(fields), ", "))
			}
			if err := shape(m[k], ft, join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		m, ok := raw.(map[string]any)
		if !ok {
			return mismatch()
		}
		for _, k := range sortedKeys(m) {
			if err := shape(m[k], t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		s, ok := raw.([]any)
		if !ok {
			return mismatch()
		}
		for i, e := range s {
			if err := shape(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := raw.(string); !ok {
			return mismatch()
		}
	case reflect.Bool:
		if _, ok := raw.(bool); !ok {
			return mismatch()
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n, ok := raw.(float64); !ok || n < 0 || n != math.Trunc(n) {
			return mismatch()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := raw.(float64); !ok || n != math.Trunc(n) {
			return mismatch()
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := raw.(float64); !ok {
			return mismatch()
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// kind names the JSON type of a decoded value.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// want says in JSON's words what a Go type takes.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(want(t.Elem()), "a "), "an ") + "s"
	}
	return "an object"
}

// position is the 1-based line and column of the byte a syntax error
// reported at offset off in data (off bytes read, the last one wrong).
func position(data []byte, off int64) (line, col int) {
	if off > 0 {
		off--
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
