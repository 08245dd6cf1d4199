package core

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseID(t *testing.T) {
	good := Sum([]byte("joule")).String()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"canonical", good, true},
		{"padded", good + "=", false},
		{"too short", good[:42], false},
		{"too long", good + "A", false},
		{"std alphabet", strings.NewReplacer("-", "+", "_", "/").Replace("-_" + good[2:]), false},
		{"non-zero trailing bits", good[:42] + "B", good[42] == 'B'},
		{"empty", "", false},
		{"spaces", " " + good[1:], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := ParseID(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseID(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if err == nil && id.String() != tt.in {
				t.Fatalf("round trip: %s != %s", id, tt.in)
			}
		})
	}
}

func TestIDTrailingBitsRejected(t *testing.T) {
	// 32 bytes use 256 of the 258 bits of 43 characters: the last character
	// may only carry values whose low two bits are zero.
	id := Sum(nil).String()
	last := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", id[42])
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	bad := id[:42] + string(alphabet[last|1])
	if _, err := ParseID(bad); err == nil {
		t.Fatalf("ParseID accepted %q with non-zero trailing bits", bad)
	}
}

func TestIDJSON(t *testing.T) {
	id := Sum([]byte("x"))
	b, err := json.Marshal(struct{ ID ID }{id})
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ ID ID }
	if err := json.Unmarshal(b, &back); err != nil || back.ID != id {
		t.Fatalf("JSON round trip: %v %s", err, b)
	}
	if err := json.Unmarshal([]byte(`{"ID":"AAAA"}`), &back); err == nil {
		t.Fatal("short id accepted")
	}
}

func TestBytesJSONStrict(t *testing.T) {
	var b Bytes
	for _, in := range []string{`"am91bGU="`, `"am91bGV"`, `"a+b/"`} {
		if err := json.Unmarshal([]byte(in), &b); err == nil {
			t.Errorf("accepted non-canonical base64url %s", in)
		}
	}
	if err := json.Unmarshal([]byte(`"am91bGU"`), &b); err != nil || string(b) != "joule" {
		t.Fatalf("got %q, %v", b, err)
	}
}
