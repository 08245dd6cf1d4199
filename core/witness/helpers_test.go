package witness

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core/store"
)

// testOrigin has spaces, as joule's origins do ("joule receipts log
// STEWARD"): a witness must take it as one line.
const testOrigin = "joule receipts log joule.test"

// memLog is a Merkle log in memory, signed by its own key.
type memLog struct {
	t       testing.TB
	hashes  map[int64]tlog.Hash
	records [][]byte
	signer  note.Signer
	vkey    string
	origin  string
	salt    string // tells apart the records of two logs of one size
}

func newMemLog(t testing.TB) *memLog {
	skey, vkey, err := note.GenerateKey(rand.Reader, "joule.test")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &memLog{t: t, hashes: map[int64]tlog.Hash{}, signer: signer, vkey: vkey, origin: testOrigin}
}

func (l *memLog) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, id := range idx {
		h, ok := l.hashes[id]
		if !ok {
			return nil, fmt.Errorf("no hash %d", id)
		}
		out[i] = h
	}
	return out, nil
}

func (l *memLog) append(n int) {
	for range n {
		i := int64(len(l.records))
		rec := fmt.Appendf(nil, "receipt %d%s", i, l.salt)
		hs, err := tlog.StoredHashes(i, rec, l)
		if err != nil {
			l.t.Fatal(err)
		}
		for k, h := range hs {
			l.hashes[tlog.StoredHashIndex(0, i)+int64(k)] = h
		}
		l.records = append(l.records, rec)
	}
}

func (l *memLog) size() int64 { return int64(len(l.records)) }

func (l *memLog) root(n int64) tlog.Hash {
	h, err := tlog.TreeHash(n, l)
	if err != nil {
		l.t.Fatal(err)
	}
	return h
}

// checkpoint is the signed note of the log at size n.
func (l *memLog) checkpoint(n int64) []byte {
	return l.sign(store.Checkpoint{Origin: l.origin, Size: n, Root: l.root(n)})
}

func (l *memLog) sign(cp store.Checkpoint) []byte {
	msg, err := note.Sign(&note.Note{Text: string(cp.Text())}, l.signer)
	if err != nil {
		l.t.Fatal(err)
	}
	return msg
}

func (l *memLog) prove(old, n int64) tlog.TreeProof {
	p, err := tlog.ProveTree(n, old, l)
	if err != nil {
		l.t.Fatal(err)
	}
	return p
}

func (l *memLog) prover(n int64) func(int64) (tlog.TreeProof, error) {
	return func(old int64) (tlog.TreeProof, error) { return tlog.ProveTree(n, old, l) }
}

// newTestSigner is a cosigner with a fresh key at a fixed time.
func newTestSigner(t testing.TB, name string) *Signer {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(name, key, func() time.Time { return time.Unix(1_800_000_000, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return s
}
