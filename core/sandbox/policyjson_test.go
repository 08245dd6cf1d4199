package sandbox

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// decodeStd is how ReadPolicy decoded a policy before decodePolicy.
func decodeStd(b []byte) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&p)
	return p, err
}

var policyJSONSeeds = []string{
	`{"links":[{"allow":["Read","Write"],"deny":["Read(.env)"]}],"roots":["/ws"],"home":"/home/u","protected":null,"private":null,"not_after":4102444800}`,
	`{"links":[],"roots":[],"home":"","protected":[],"private":[]}`,
	` { "links" : null , "roots" : [ "/a" , "/b" ] , "not_after" : -12 } ` + "\n",
	`{"links":[{"allow":["Bash(echo \"a\\b\" \u003c\u003e\u0026 \u2028 \n\t\/)"],"ask":[],"deny":null}],"home":"/h\u00e9\ud83d\ude00"}`,
	`{}`,
	// Refused by decodePolicy (some accepted by encoding/json):
	`{"links":[],"wide":true}`,
	`{"Links":[]}`,
	`{"roots":["/a"],"roots":["/b"]}`,
	`{"links":[{"allow":["x"],"other":1}]}`,
	`{"not_after":1.5}`, `{"not_after":1e3}`, `{"not_after":01}`, `{"not_after":99999999999999999999}`, `{"not_after":"1"}`,
	`{"home":"\ud800"}`, `{"home":"\udc00\ud800"}`, `{"home":"a` + "\x01" + `"}`, `{"home":"` + "\xff" + `"}`, `{"home":"\x"}`,
	`{"home":"unterminated`, `{"roots":["a" "b"]}`, `{"roots":["a",]}`, `{"roots":[1]}`, `{"roots":"a"}`,
	`{"links":[]} trailing`, `{"links":[]}{}`, `[]`, ``, `null`, `{"home":nul}`, `{"home":null}`,
}

// TestDecodePolicy: what Encode writes decodes as encoding/json decodes
// it, and whatever decodePolicy accepts, encoding/json (as ReadPolicy
// called it before) accepts and reads the same.
func TestDecodePolicy(t *testing.T) {
	p := Policy{Links: []PolicyLink{{Allow: []string{"Read", `Bash(printf '%s\n' "<a&b>" \ é 😀 ` + "\u2028\x7f\t)"}, Deny: []string{"Read(.env)"}}, {}},
		Roots: []string{"/ws"}, Home: "/home/u", Protected: []string{"/p"}, NotAfter: 4102444800}
	b, _, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePolicy(b)
	want, _ := decodeStd(b)
	if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, p) {
		t.Fatalf("decodePolicy(Encode(p)) = %+v, %v\nencoding/json: %+v\np: %+v", got, err, want, p)
	}
	accepted := 0
	for _, s := range policyJSONSeeds {
		if sameAsStd(t, []byte(s)) {
			accepted++
		}
	}
	if accepted != 6 {
		t.Errorf("decodePolicy accepted %d of the seeds, want the first 6 and the null home", accepted)
	}
}

func FuzzDecodePolicy(f *testing.F) {
	for _, s := range policyJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsStd(t, b) })
}

// sameAsStd fails t when decodePolicy accepts b but encoding/json refuses
// it or reads it otherwise, and reports whether decodePolicy accepted it.
func sameAsStd(t *testing.T, b []byte) bool {
	t.Helper()
	got, err := decodePolicy(b)
	if err != nil {
		return false
	}
	want, werr := decodeStd(b)
	if werr != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%q: decodePolicy read %+v, encoding/json %+v, %v", b, got, want, werr)
	}
	return true
}
