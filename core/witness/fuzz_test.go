package witness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"reflect"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// FuzzParseSignatures feeds arbitrary witness answers to the parser of
// cosignature lines: no panic, and what it accepts formats back to the
// input byte for byte; the client takes from it only a cosignature that
// verifies with the witness's key.
func FuzzParseSignatures(f *testing.F) {
	l := newMemLog(f)
	l.append(3)
	s := newTestSigner(f, "w.test")
	text, _ := noteText(l.checkpoint(3))
	signed, _ := note.Sign(&note.Note{Text: string(text)}, s)
	_, good, _ := bytes.Cut(signed, []byte("\n\n"))
	f.Add(good)
	f.Add(append(append([]byte{}, good...), good...))
	f.Add([]byte("— w.test AAAAAAAA\n"))
	f.Add([]byte("— \n"))
	f.Add([]byte{})
	c := &Client{URL: "http://w.test", Key: s.Verifier()}
	f.Fuzz(func(t *testing.T, b []byte) {
		sigs, err := ParseSignatures(b)
		if err == nil {
			var again []byte
			for _, sig := range sigs {
				again = append(again, signatureLine(sig)...)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("accepted %q, formats back as %q", b, again)
			}
		}
		lines, err := c.cosignatures(text, b)
		if err != nil {
			return
		}
		if _, err := note.Open(append(append([]byte{}, text...), append([]byte("\n"), lines...)...), note.VerifierList(s.Verifier())); err != nil {
			t.Fatalf("the client took %q, which does not verify: %v", lines, err)
		}
	})
}

// FuzzAddCheckpoint feeds arbitrary request bodies to the parser and to
// joule's witness: no panic; what parses encodes back to itself; the
// witness cosigns nothing its log's key did not sign, and never goes
// back in size.
func FuzzAddCheckpoint(f *testing.F) {
	l := newMemLog(f)
	l.append(8)
	f.Add(add(0, nil, l.checkpoint(3)))
	f.Add(add(3, l.prove(3, 5), l.checkpoint(5)))
	f.Add(add(5, l.prove(5, 8), l.checkpoint(8)))
	f.Add([]byte("old 0\n\n"))
	f.Add([]byte("old 1\nAAAA\n\nx\n"))
	dir := f.TempDir()
	if _, err := InitServer(dir, "fuzz.test/w"); err != nil {
		f.Fatal(err)
	}
	srv, err := OpenServer(dir, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.AddLog(l.origin, []string{l.vkey}); err != nil {
		f.Fatal(err)
	}
	logV := mustVerifier(f, l.vkey)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseAddCheckpoint(b)
		if err == nil && !bytes.Equal(r.Body(), b) {
			t.Fatalf("parsed %q, encodes back as %q", b, r.Body())
		}
		before, _ := readLog(srv.logPath(l.origin))
		sigs, _, err := srv.AddCheckpoint(b)
		after, _ := readLog(srv.logPath(l.origin))
		if after.Size < before.Size {
			t.Fatalf("the witness went back from %d to %d", before.Size, after.Size)
		}
		var ref *refusal
		if err != nil && !errors.As(err, &ref) {
			t.Fatalf("not a refusal: %v", err)
		}
		if err != nil {
			if !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused request changed the state: %+v -> %+v", before, after)
			}
			return
		}
		if _, err := note.Open(r.Checkpoint, note.VerifierList(logV)); err != nil {
			t.Fatalf("cosigned a checkpoint the log did not sign: %v", err)
		}
		if len(sigs) == 0 || after.Checkpoint == "" {
			t.Fatal("cosigned without a signature or a record")
		}
	})
}

// FuzzParseProof feeds arbitrary tlog proofs to the parser and the
// verifier: no panic, what parses encodes back to itself, and nothing
// verifies that the log did not sign with the entry in its tree.
func FuzzParseProof(f *testing.F) {
	l := newMemLog(f)
	l.append(5)
	incl, err := tlog.ProveRecord(5, 2, l)
	if err != nil {
		f.Fatal(err)
	}
	good := Proof{Extra: l.records[2], Index: 2, Inclusion: incl, Checkpoint: l.checkpoint(5)}
	f.Add(good.Marshal())
	f.Add([]byte(ProofHeader + "\nextra " + base64.StdEncoding.EncodeToString([]byte("r")) + "\nindex 0\n\nx\n"))
	f.Add([]byte(ProofHeader + "\n"))
	pol := Policy{Origin: l.origin, Log: mustVerifier(f, l.vkey)}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProof(b)
		if err != nil {
			return
		}
		if !bytes.Equal(p.Marshal(), b) {
			t.Fatalf("parsed %q, encodes back as %q", b, p.Marshal())
		}
		v, err := p.Verify(p.Extra, pol)
		if err != nil {
			return
		}
		if v.Checkpoint.Size != 5 || p.Index >= 5 || !bytes.Equal(p.Extra, l.records[p.Index]) {
			t.Fatalf("verified entry %d (%q) of a log of size %d", p.Index, p.Extra, v.Checkpoint.Size)
		}
	})
}

// FuzzNewVerifier feeds arbitrary verifier keys to the parser of a
// witness's key (config.json's vkey, --witness-key): no panic, and what
// it accepts is a cosignature key that formats back to itself.
func FuzzNewVerifier(f *testing.F) {
	f.Add(newTestSigner(f, "w.test/1").Verifier().String())
	f.Add("w+00000000+BAAA")
	f.Add("a+b+c+d")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := NewVerifier(s)
		if err != nil {
			return
		}
		again, err := NewVerifier(v.String())
		if err != nil || again.String() != v.String() || v.KeyHash() != again.KeyHash() {
			t.Fatalf("accepted %q as %s, which does not parse back: %v", s, v, err)
		}
	})
}
