package core

import (
	"bytes"
	"errors"
	"testing"
)

func TestSignOpVerify(t *testing.T) {
	key := testKey("author")
	op := sampleOp()
	s, err := SignOp(key, op)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, id, err := OpenSignedOp(b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := op.ID()
	if id != want || got.Op.Intent != op.Intent {
		t.Fatalf("op_id %s want %s", id, want)
	}
	if _, err := SignOp(testKey("someone else"), op); err == nil {
		t.Fatal("signed with a key that is not the author's")
	}
}

func TestSignedOpRejections(t *testing.T) {
	key := testKey("author")
	tests := []struct {
		name   string
		mutate func(s *SignedOp)
		target error
	}{
		{"alg 2", func(s *SignedOp) { s.Alg = 2 }, ErrUnsupportedAlg},
		{"other prior", func(s *SignedOp) { s.Op.Prior = Sum([]byte("elsewhere")) }, ErrBadSignature},
		{"other intent", func(s *SignedOp) { s.Op.Intent = "x" }, ErrBadSignature},
		{"other replacement", func(s *SignedOp) { s.Op.Edits[0].Replacement = Bytes("z") }, ErrBadSignature},
		{"other author", func(s *SignedOp) { s.Op.Author = pubOf(testKey("x")) }, ErrBadSignature},
		{"reordered edits", func(s *SignedOp) { s.Op.Edits[0], s.Op.Edits[1] = s.Op.Edits[1], s.Op.Edits[0] }, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := SignOp(key, sampleOp())
			if err != nil {
				t.Fatal(err)
			}
			s.Op.Edits = append([]Edit(nil), s.Op.Edits...)
			tt.mutate(s)
			b, err := s.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := OpenSignedOp(b); !errors.Is(err, tt.target) {
				t.Fatalf("OpenSignedOp() = %v, want %v", err, tt.target)
			}
		})
	}
}

// TestSignedOpEveryByteFlip flips each bit position's byte of a valid signed
// op: every variant must be rejected, whatever part of it changed.
func TestSignedOpEveryByteFlip(t *testing.T) {
	s, err := SignOp(testKey("author"), sampleOp())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Encode()
	for i := range b {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			c := bytes.Clone(b)
			c[i] ^= mask
			if _, _, err := OpenSignedOp(c); err == nil {
				t.Fatalf("byte %d ^ %#x accepted", i, mask)
			}
		}
	}
	// Truncations and extensions too.
	for n := 0; n < len(b); n++ {
		if _, _, err := OpenSignedOp(b[:n]); err == nil {
			t.Fatalf("truncation to %d bytes accepted", n)
		}
	}
	if _, _, err := OpenSignedOp(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

func FuzzDecodeSignedOp(f *testing.F) {
	for _, b := range vectorBytes(f, "signature_vectors.json", "signed_op_cbor_hex") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, id, err := OpenSignedOp(data)
		if err != nil {
			return
		}
		again, err := s.Encode()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decode-encode not identical (%v)", err)
		}
		if want, _ := s.Op.ID(); want != id {
			t.Fatal("op_id mismatch")
		}
	})
}
