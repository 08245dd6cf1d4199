package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// A fixed test key, so checkpoint notes are reproducible (Ed25519 signing
// is deterministic).
const (
	testSignerKey   = "PRIVATE+KEY+joule.test+65c71855+ASBYEUqSTB/oyY6foGgJgdBWgiN9ltwM3uZcQ0krA4x1"
	testVerifierKey = "joule.test+65c71855+AX9IGY909SJoUmAbc7vJAveoptNkQbgJwcqQ+ugb7qOh"
)

func testSigner(t testing.TB) note.Signer {
	t.Helper()
	s, err := note.NewSigner(testSignerKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testVerifier(t testing.TB) note.Verifier {
	t.Helper()
	v, err := note.NewVerifier(testVerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fixedClock returns a clock that advances one second per call, so
// timestamps are reproducible and ordered.
func fixedClock() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func openTest(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "joule.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func putGrant(t testing.TB, s *Store, id, parent string, budget uint64) {
	t.Helper()
	rec := GrantRecord{ID: id, Parent: parent, Signed: []byte("signed:" + id), BudgetUJ: budget}
	if err := s.PutGrant(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// envelopeFor is a stand-in receipt that records the position it was
// built for, so tests can check Build saw the position the entry got.
func envelopeFor(pos Position, tag string) []byte {
	return fmt.Appendf(nil, "receipt|%s|%d|%x|%d|%s", pos.Session, pos.Seq, pos.Prev, pos.Index, tag)
}

// parseEnvelope inverts envelopeFor.
func parseEnvelope(b []byte) (Position, string, error) {
	f := strings.Split(string(b), "|")
	if len(f) != 6 || f[0] != "receipt" {
		return Position{}, "", fmt.Errorf("bad envelope %q", b)
	}
	seq, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return Position{}, "", err
	}
	var prev [32]byte
	raw, err := hex.DecodeString(f[3])
	if err != nil || len(raw) != len(prev) {
		return Position{}, "", fmt.Errorf("bad prev %q in envelope", f[3])
	}
	copy(prev[:], raw)
	idx, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return Position{}, "", err
	}
	return Position{Session: f[1], Seq: seq, Prev: prev, Index: idx}, f[5], nil
}

// allowBuild keeps the debit when it can be paid.
func allowBuild(tag string) func(Position, error) ([]byte, bool, error) {
	return func(pos Position, debitErr error) ([]byte, bool, error) {
		if debitErr != nil {
			return envelopeFor(pos, "deny:"+tag), false, nil
		}
		return envelopeFor(pos, "allow:"+tag), true, nil
	}
}

func seal(t testing.TB, s *Store, session string, debit []string, amount uint64, tag string) Entry {
	t.Helper()
	e, err := s.Seal(context.Background(), SealRequest{Session: session, Debit: debit, AmountUJ: amount, Build: allowBuild(tag)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// rootFromLeaves computes the RFC 6962 root of leaves without the store's
// stored hashes, as an independent check.
func rootFromLeaves(leaves [][]byte) tlog.Hash {
	if len(leaves) == 0 {
		h, _ := tlog.TreeHash(0, nil)
		return h
	}
	var rec func(l [][]byte) tlog.Hash
	rec = func(l [][]byte) tlog.Hash {
		if len(l) == 1 {
			return tlog.RecordHash(l[0])
		}
		k := 1
		for k*2 < len(l) {
			k *= 2
		}
		return tlog.NodeHash(rec(l[:k]), rec(l[k:]))
	}
	return rec(leaves)
}

// checkConsistent asserts every store invariant a test can see from
// outside: Verify, gap-free linked chains whose envelopes name their own
// positions, unique log indexes, and the tree hash against recomputation.
func checkConsistent(t testing.TB, s *Store) (entries []Entry) {
	t.Helper()
	ctx := context.Background()
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("verify: %v", err)
	}
	size, err := s.LogSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := s.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[int64]bool)
	var total uint64
	for _, si := range sessions {
		es, err := s.Session(ctx, si.ID)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(es)) != si.Count {
			t.Fatalf("session %q: %d entries, info says %d", si.ID, len(es), si.Count)
		}
		var prev [32]byte
		for i, e := range es {
			if e.Seq != uint64(i+1) {
				t.Fatalf("session %q: entry %d has seq %d", si.ID, i, e.Seq)
			}
			if e.Prev != prev {
				t.Fatalf("session %q seq %d: prev does not link", si.ID, e.Seq)
			}
			if seen[e.Index] {
				t.Fatalf("log index %d used twice", e.Index)
			}
			seen[e.Index] = true
			if bytes.HasPrefix(e.Envelope, []byte("receipt|")) {
				pos, _, err := parseEnvelope(e.Envelope)
				if err != nil {
					t.Fatal(err)
				}
				if pos != e.Position {
					t.Fatalf("entry at %+v was built for %+v", e.Position, pos)
				}
			}
			prev = e.Hash
		}
		if si.Head != prev {
			t.Fatalf("session %q head does not match its last entry", si.ID)
		}
		total += si.Count
	}
	if total != uint64(size) {
		t.Fatalf("sessions hold %d entries, log size %d", total, size)
	}
	leaves := make([][]byte, size)
	for i := range size {
		e, err := s.EntryAt(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		leaves[i] = e.Envelope
		entries = append(entries, e)
	}
	got, err := s.TreeHash(ctx, size)
	if err != nil {
		t.Fatal(err)
	}
	if want := rootFromLeaves(leaves); got != want {
		t.Fatalf("tree hash %v, recomputed %v", got, want)
	}
	return entries
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}
