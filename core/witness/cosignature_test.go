package witness

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

func TestNewVerifier(t *testing.T) {
	s := newTestSigner(t, "witness.example/w1")
	good := s.Verifier().String()
	pub := s.Verifier().key
	vkey := func(name string, typ byte, key []byte) string {
		k := append([]byte{typ}, key...)
		return fmt.Sprintf("%s+%08x+%s", name, keyHash(name, k), base64.StdEncoding.EncodeToString(k))
	}
	_, plain, _ := note.GenerateKey(rand.Reader, "log.example")
	for _, tc := range []struct {
		name, vkey, err string
	}{
		{"cosignature key", good, ""},
		{"surrounding space", " " + good + "\n", ""},
		{"plain note key", plain, "a plain Ed25519 note key"},
		{"ML-DSA-44", vkey("w", algMLDSA44, make([]byte, 1312)), "ML-DSA-44"},
		{"short key", vkey("w", algCosignature, pub[:31]), "not an Ed25519 cosignature key"},
		{"unknown type", vkey("w", 0x09, pub), "not an Ed25519 cosignature key"},
		{"wrong hash", strings.Replace(good, fmt.Sprintf("+%08x+", s.KeyHash()), "+00000000+", 1), "does not match"},
		{"hash not hex", "w+zzzzzzzz+" + base64.StdEncoding.EncodeToString(append([]byte{4}, pub...)), "8 hex digits"},
		{"two parts", "w+AAAA", "NAME+HASH+KEY"},
		{"space in name", "a b+00000000+AAAA", "without spaces"},
		{"not base64", "w+00000000+!!!!", "not base64"},
		{"empty", "", "NAME+HASH+KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewVerifier(tc.vkey)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if v.String() != good || v.Name() != "witness.example/w1" || v.KeyHash() != s.KeyHash() {
					t.Fatalf("parsed %s (%08x), want %s", v, v.KeyHash(), good)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
		})
	}
}

// A cosignature verifies through note.Open on the checkpoint it signed,
// and on nothing else: not another text, not another time, not a zero
// time, not another key.
func TestCosignature(t *testing.T) {
	l := newMemLog(t)
	l.append(5)
	s := newTestSigner(t, "witness.example/w1")
	msg := l.checkpoint(5)
	n, err := note.Open(msg, note.VerifierList(mustVerifier(t, l.vkey)))
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(n, s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := note.Open(cosigned, note.VerifierList(s.Verifier()))
	if err != nil {
		t.Fatalf("cosignature does not verify: %v\n%s", err, cosigned)
	}
	var sig note.Signature
	for _, g := range got.Sigs {
		if g.Name == s.Name() {
			sig = g
		}
	}
	if at, err := SignatureTime(sig); err != nil || !at.Equal(time.Unix(1_800_000_000, 0)) {
		t.Fatalf("cosignature time %v, %v", at, err)
	}
	raw, _ := base64.StdEncoding.DecodeString(sig.Base64)
	text := []byte(n.Text)
	if !s.Verifier().Verify(text, raw[4:]) {
		t.Fatal("Verify refuses the cosignature")
	}
	for _, tc := range []struct {
		name string
		text []byte
		sig  func([]byte) []byte
		v    *Verifier
	}{
		{"another text", []byte(strings.Replace(n.Text, "\n5\n", "\n6\n", 1)), nil, nil},
		{"another time", text, func(b []byte) []byte { binary.BigEndian.PutUint64(b, 1_800_000_001); return b }, nil},
		{"zero time", text, func(b []byte) []byte { binary.BigEndian.PutUint64(b, 0); return b }, nil},
		{"time beyond int64", text, func(b []byte) []byte { binary.BigEndian.PutUint64(b, 1<<63); return b }, nil},
		{"short", text, func(b []byte) []byte { return b[:len(b)-1] }, nil},
		{"another key", text, nil, newTestSigner(t, s.Name()).Verifier()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte{}, raw[4:]...)
			if tc.sig != nil {
				b = tc.sig(b)
			}
			v := s.Verifier()
			if tc.v != nil {
				v = tc.v
			}
			if v.Verify(tc.text, b) {
				t.Fatal("verified")
			}
		})
	}
	// A zero time is refused even when the signature over it is genuine.
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	zero, _ := NewSigner("w", key, func() time.Time { return time.Unix(0, 0) })
	if _, err := zero.Sign(text); err == nil {
		t.Fatal("signed at time 0")
	}
}

func mustVerifier(t testing.TB, vkey string) note.Verifier {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseSignatures(t *testing.T) {
	s := newTestSigner(t, "witness.example/w1")
	sig, _ := s.Sign([]byte("o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"))
	line := "— witness.example/w1 " + base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, s.KeyHash())) + ""
	full := "— witness.example/w1 " + base64.StdEncoding.EncodeToString(append(binary.BigEndian.AppendUint32(nil, s.KeyHash()), sig...)) + "\n"
	for _, tc := range []struct {
		name, body string
		n          int
		err        string
	}{
		{"one", full, 1, ""},
		{"two", full + full, 2, ""},
		{"no newline", strings.TrimSuffix(full, "\n"), 0, "newline"},
		{"empty", "", 0, "newline"},
		{"blank line", full + "\n", 0, "not a signature line"},
		{"dash not em dash", "- w AAAAAAAA\n", 0, "not a signature line"},
		{"no signature", "— w\n", 0, "bad key name"},
		{"short signature", line + "\n", 0, "not base64 of a key hash"},
		{"bad base64", "— w !!!\n", 0, "not base64"},
		{"too many", strings.Repeat(full, maxSignatureLines+1), 0, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs, err := ParseSignatures([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(sigs) != tc.n || sigs[0].Hash != s.KeyHash() {
				t.Fatalf("%d signatures, %v", len(sigs), err)
			}
			if got := signatureLine(sigs[0]); got != full {
				t.Fatalf("line %q, want %q", got, full)
			}
		})
	}
}
