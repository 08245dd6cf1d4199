package core

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"lukechampine.com/blake3"
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

// TestSumIsBLAKE3: Sum, which feeds long inputs a chunk at a time to a
// pooled hasher, gives blake3.Sum256's digest at every length around the
// chunk and block boundaries, also from concurrent callers.
func TestSumIsBLAKE3(t *testing.T) {
	data := make([]byte, 70_000)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	lengths := []int{0, 1, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 4095, 4096, 4097, 19_422, 65_536, 70_000}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range lengths {
				if got, want := Sum(data[:n]), ID(blake3.Sum256(data[:n])); got != want {
					t.Errorf("Sum of %d bytes = %s, blake3.Sum256 %s", n, got, want)
				}
			}
		}()
	}
	wg.Wait()
}
