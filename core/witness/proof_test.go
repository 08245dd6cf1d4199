package witness

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// cosignedProof is a proof of entry idx of l at size n, cosigned by ws.
func cosignedProof(t *testing.T, l *memLog, idx, n int64, ws ...*Signer) Proof {
	t.Helper()
	msg := l.checkpoint(n)
	if len(ws) > 0 {
		nt, err := note.Open(msg, note.VerifierList(mustVerifier(t, l.vkey)))
		if err != nil {
			t.Fatal(err)
		}
		signers := make([]note.Signer, len(ws))
		for i, w := range ws {
			signers[i] = w
		}
		if msg, err = note.Sign(nt, signers...); err != nil {
			t.Fatal(err)
		}
	}
	p, err := tlog.ProveRecord(n, idx, l)
	if err != nil {
		t.Fatal(err)
	}
	return Proof{Extra: l.records[idx], Index: idx, Inclusion: p, Checkpoint: msg}
}

func TestProof(t *testing.T) {
	l := newMemLog(t)
	l.append(11)
	w1, w2, w3 := newTestSigner(t, "w1.test"), newTestSigner(t, "w2.test"), newTestSigner(t, "w3.test")
	p := cosignedProof(t, l, 6, 11, w1, w2)
	b := p.Marshal()
	if !bytes.HasPrefix(b, []byte(ProofHeader+"\nextra ")) {
		t.Fatalf("proof starts %q", b[:40])
	}
	got, err := ParseProof(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Marshal(), b) {
		t.Fatalf("round trip changed the proof:\n%s\n%s", b, got.Marshal())
	}
	pol := Policy{Origin: l.origin, Log: mustVerifier(t, l.vkey), Witnesses: []note.Verifier{w1.Verifier(), w2.Verifier(), w3.Verifier()}, Quorum: 2}
	v, err := got.Verify(got.Extra, pol)
	if err != nil {
		t.Fatal(err)
	}
	if v.Checkpoint.Size != 11 || len(v.Cosigned) != 2 || v.Cosigned[0].Witness != "w1.test" || v.Cosigned[0].Time.IsZero() {
		t.Fatalf("verified %+v", v)
	}
	// No extra line, no witnesses.
	bare := cosignedProof(t, l, 0, 1)
	bare.Extra = nil
	if again, err := ParseProof(bare.Marshal()); err != nil || again.Extra != nil || len(again.Inclusion) != 0 {
		t.Fatalf("bare proof: %+v %v", again, err)
	}

	for _, tc := range []struct {
		name   string
		record []byte
		mut    func(p *Proof, pol *Policy)
		err    string
	}{
		{"another record", []byte("receipt 5"), nil, "does not lead"},
		{"another index", nil, func(p *Proof, _ *Policy) { p.Index = 7 }, "does not lead"},
		{"index past the tree", nil, func(p *Proof, _ *Policy) { p.Index = 11 }, "outside"},
		{"a proof hash changed", nil, func(p *Proof, _ *Policy) { p.Inclusion[1][3] ^= 1 }, "does not lead"},
		{"a quorum of three", nil, func(_ *Proof, pol *Policy) { pol.Quorum = 3 }, "2 of the 3 witnesses"},
		{"another log's key", nil, func(_ *Proof, pol *Policy) { pol.Log = mustVerifier(t, newMemLog(t).vkey) }, "checkpoint"},
		{"another origin", nil, func(_ *Proof, pol *Policy) { pol.Origin = "joule receipts log other" }, "not \"joule receipts log other\""},
		{"a witness's key swapped", nil, func(_ *Proof, pol *Policy) {
			pol.Witnesses = []note.Verifier{newTestSigner(t, "w1.test").Verifier()}
			pol.Quorum = 1
		}, "checkpoint"},
		{"a cosignature edited", nil, func(p *Proof, _ *Policy) {
			i := bytes.Index(p.Checkpoint, []byte("— w2.test "))
			c := append([]byte{}, p.Checkpoint...)
			c[i+len("— w2.test ")+10] ^= 'A' ^ 'B'
			p.Checkpoint = c
		}, "checkpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := ParseProof(b)
			pl := pol
			pl.Witnesses = append([]note.Verifier(nil), pol.Witnesses...)
			if tc.mut != nil {
				tc.mut(&q, &pl)
			}
			rec := q.Extra
			if tc.record != nil {
				rec = tc.record
			}
			if _, err := q.Verify(rec, pl); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}

	h := l.root(1).String()
	for _, tc := range []struct{ name, body, err string }{
		{"no header", "index 0\n\ncp\n", "first line"},
		{"another version", "c2sp.org/tlog-proof@v2\nindex 0\n\ncp\n", "first line"},
		{"no index", ProofHeader + "\n\ncp\n", "no index"},
		{"extra without index", ProofHeader + "\nextra AAAA\n\ncp\n", "no index"},
		{"bad extra", ProofHeader + "\nextra !!\nindex 0\n\ncp\n", "not base64"},
		{"index leading zero", ProofHeader + "\nindex 01\n\ncp\n", "canonical"},
		{"negative index", ProofHeader + "\nindex -1\n\ncp\n", "canonical"},
		{"bad hash", ProofHeader + "\nindex 1\nAAAA\n\ncp\n", "canonical base64"},
		{"64 hashes", ProofHeader + "\nindex 1\n" + strings.Repeat(h+"\n", 64) + "\ncp\n", "at most 63"},
		{"no checkpoint", ProofHeader + "\nindex 1\n\n", "no checkpoint"},
		{"too large", ProofHeader + "\nindex 1\n\n" + strings.Repeat("x", MaxProofSize), "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseProof([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}
