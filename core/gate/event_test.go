package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// sameAsMap checks inputFields and stringField, whose plain-ASCII fast
// path skips encoding/json, against decoding the input with encoding/json.
func sameAsMap(t *testing.T, in []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	mapErr := json.Unmarshal(in, &m)
	f, err := (&Event{Input: in}).inputFields()
	if (err == nil) != (mapErr == nil) {
		t.Fatalf("%q: inputFields error %v, encoding/json error %v", in, err, mapErr)
	}
	if err != nil {
		if want := malformed("input is not a JSON object: %v", mapErr).Error(); err.Error() != want {
			t.Fatalf("%q: error %q, want %q", in, err, want)
		}
		return
	}
	if len(f) != len(m) {
		t.Fatalf("%q: %d names, encoding/json has %d", in, len(f), len(m))
	}
	for k, want := range m {
		got, ok := f[k]
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("%q: member %q = %q, %v; encoding/json gives %q", in, k, got, ok, want)
		}
		for _, required := range []bool{false, true} {
			s, err := stringField(f, k, required)
			var ws string
			var werr error
			switch {
			case string(want) == "null" && required:
				werr = malformed("input.%s is missing", k)
			case string(want) == "null":
			case json.Unmarshal(want, &ws) != nil:
				werr = malformed("input.%s must be a string", k)
			}
			if s != ws || fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("%q: stringField(%q) = %q, %v; want %q, %v", in, k, s, err, ws, werr)
			}
		}
	}
}

func TestInputFields(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `, `{"command":"ls"}`, "\t{\"a\" : 1 ,\n\"b\":[1,{\"c\":\"}\"}],\"d\":null}\r\n",
		`{"command":"a","command":"b"}`, `{"comm\u0061nd":"x","command":"y"}`, `{"command":"y","comm\u0061nd":"x"}`,
		`{"Command":"curl x"}`, `{"command":"\"q\" \\ \u00e9 \ud83d\ude00"}`, `{"command":"é"}`,
		"{\"command\":\"\x7f\"}", "{\"c\xffd\":\"x\",\"command\":\"\xfe\"}", `{"a":"\\","b":"\\\""}`,
		`{"n":-1.5e+3,"t":true,"f":false,"z":null,"o":{"x":{"y":[]}},"s":"{[\"]}"}`,
		`{"command":7}`, `{"command":["ls"]}`, `{"command":{"x":1}}`, `{"command":null}`,
		``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1}}`, `{"a":1} x`, `[]`, `"s"`, `null`, `{'a':1}`,
		"\v{\"a\":1}", `{"a":1e}`, `{"a":tru}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`,
	} {
		t.Run(in, func(t *testing.T) { sameAsMap(t, []byte(in)) })
	}
}

// FuzzInputFields compares the tool input's fields and strings with encoding/json.
func FuzzInputFields(f *testing.F) {
	for _, s := range []string{`{"command":"go test ./..."}`, `{"a":[1,{"b":"\"}"}],"a":"x"}`, `{"file_path":"/x","content":"\u00e9\n"}`, `{"a":1,}`, " {\"x\":null} "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { sameAsMap(t, in) })
}
