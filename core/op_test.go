package core

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func testKey(label string) ed25519.PrivateKey {
	seed := Sum([]byte("core test key " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

func pubOf(k ed25519.PrivateKey) PublicKey {
	var p PublicKey
	copy(p[:], k.Public().(ed25519.PublicKey))
	return p
}

func sampleOp() *CodingOp {
	prior := Sum([]byte("prior"))
	return &CodingOp{
		Prior:  prior,
		Author: pubOf(testKey("author")),
		Intent: "rename x to y",
		Tier:   L1,
		Edits: []Edit{
			{Path: "a.go", Anchor: RangeAnchor(3, 4), Replacement: Bytes("y")},
			{Path: "b.go", Anchor: HunkAnchor([]byte("x")), Replacement: Bytes("y")},
		},
	}
}

// TestCanonicalGolden pins the canonical bytes of each encoder.
func TestCanonicalGolden(t *testing.T) {
	op := sampleOp()
	signed, err := SignOp(testKey("author"), op)
	if err != nil {
		t.Fatal(err)
	}
	measured := uint64(42)
	cases := map[string]func() ([]byte, error){
		"coding_op":         op.Canonical,
		"signed_op":         signed.Encode,
		"receipt_estimator": (&OpReceipt{Profile: Profile, OpID: Sum(nil).String(), Tier: L2, EstimatedUJ: 1000, Provenance: Estimator, Sequence: 7, Nonce: strings.Repeat("0a", 16), Steward: "s.example"}).Canonical,
		"receipt_hwshunt":   (&OpReceipt{Profile: Profile, OpID: Sum(nil).String(), Tier: L3, EstimatedUJ: 1 << 40, MeasuredUJ: &measured, Provenance: HwShunt, Sequence: 1 << 32, Nonce: strings.Repeat("ff", 16), Steward: "s.example"}).Canonical,
		"tree": func() ([]byte, error) {
			t, _ := Files{"z": nil, "aa/b": []byte("b"), "c": []byte("c")}.Tree()
			return t.Canonical()
		},
	}
	for name, enc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := enc()
			if err != nil {
				t.Fatal(err)
			}
			got := hex.EncodeToString(b) + "\n"
			path := filepath.Join("testdata", "golden", name+".hex")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Fatalf("canonical bytes changed:\n got  %s want %s", got, want)
			}
		})
	}
}

func TestOpValidate(t *testing.T) {
	h := Sum(nil)
	tests := []struct {
		name   string
		mutate func(op *CodingOp)
		want   string
	}{
		{"valid", func(*CodingOp) {}, ""},
		{"no edits", func(op *CodingOp) { op.Edits = nil }, "edits must not be empty"},
		{"bad tier", func(op *CodingOp) { op.Tier = "L5" }, "tier"},
		{"lowercase tier", func(op *CodingOp) { op.Tier = "l1" }, "tier"},
		{"both anchors", func(op *CodingOp) { op.Edits[0].Anchor.Hunk = &h }, "both"},
		{"no anchor", func(op *CodingOp) { op.Edits[0].Anchor = Anchor{} }, "neither"},
		{"reversed range", func(op *CodingOp) { op.Edits[0].Anchor = RangeAnchor(5, 4) }, "start after end"},
		{"bad path", func(op *CodingOp) { op.Edits[1].Path = "../x" }, `".." segment`},
		{"invalid intent", func(op *CodingOp) { op.Intent = "\xff" }, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := sampleOp()
			tt.mutate(op)
			err := op.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.want)
			}
			if _, err := op.ID(); err == nil {
				t.Fatal("ID() of an invalid op succeeded")
			}
		})
	}
}

func TestDecodeOpRoundTrip(t *testing.T) {
	for _, b := range vectorBytes(t, "coding_op_vectors.json", "canonical_cbor_hex") {
		op, err := DecodeOp(b)
		if err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		again, err := op.Canonical()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("round trip differs: %v", err)
		}
	}
}

func FuzzDecodeOp(f *testing.F) {
	for _, b := range vectorBytes(f, "coding_op_vectors.json", "canonical_cbor_hex") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		op, err := DecodeOp(data)
		if err != nil {
			return
		}
		again, err := op.Canonical()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decode-encode not identical (%v):\n in  %x\n out %x", err, data, again)
		}
	})
}
