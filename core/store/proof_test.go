package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func TestProveInclusionAndConsistency(t *testing.T) {
	forBackends(t, testProveInclusionAndConsistency)
}

func testProveInclusionAndConsistency(t *testing.T, b backend) {
	s := b.open(t)
	ctx := context.Background()
	var leaves [][]byte
	for i := range 5 {
		leaves = append(leaves, seal(t, s, "s", nil, 0, fmt.Sprint(i)).Envelope)
	}
	for _, tt := range []struct{ index, size, wantSize int64 }{
		{1, 0, 5}, // 0: the whole log
		{4, 5, 5},
		{0, 1, 1},
		{2, 3, 3},
	} {
		in, err := s.ProveInclusion(ctx, tt.index, tt.size)
		if err != nil {
			t.Fatalf("ProveInclusion(%d, %d): %v", tt.index, tt.size, err)
		}
		root := rootFromLeaves(leaves[:tt.wantSize])
		if in.Size != tt.wantSize || in.Root != root || in.Index != tt.index || string(in.Envelope) != string(leaves[tt.index]) || in.Leaf != tlog.RecordHash(leaves[tt.index]) {
			t.Errorf("ProveInclusion(%d, %d) = size %d root %v index %d leaf %v; want size %d root %v", tt.index, tt.size, in.Size, in.Root, in.Index, in.Leaf, tt.wantSize, root)
		}
		if err := tlog.CheckRecord(in.Proof, in.Size, root, tt.index, tlog.RecordHash(leaves[tt.index])); err != nil {
			t.Errorf("ProveInclusion(%d, %d): the proof does not check: %v", tt.index, tt.size, err)
		}
	}
	if _, err := s.ProveInclusion(ctx, 3, 3); err == nil || !strings.Contains(err.Error(), "outside the tree of size 3") {
		t.Errorf("an index past the tree: %v", err)
	}
	if _, err := s.ProveInclusion(ctx, 1, 9); err == nil || !strings.Contains(err.Error(), "outside the log") {
		t.Errorf("a tree past the log: %v", err)
	}
	for _, tt := range []struct{ old, size, wantSize int64 }{{2, 0, 5}, {1, 5, 5}, {3, 4, 4}, {5, 5, 5}} {
		c, err := s.ProveConsistency(ctx, tt.old, tt.size)
		if err != nil {
			t.Fatalf("ProveConsistency(%d, %d): %v", tt.old, tt.size, err)
		}
		oldRoot, root := rootFromLeaves(leaves[:tt.old]), rootFromLeaves(leaves[:tt.wantSize])
		if c.OldSize != tt.old || c.OldRoot != oldRoot || c.Size != tt.wantSize || c.Root != root {
			t.Errorf("ProveConsistency(%d, %d) = %d %v -> %d %v; want %d %v -> %d %v", tt.old, tt.size, c.OldSize, c.OldRoot, c.Size, c.Root, tt.old, oldRoot, tt.wantSize, root)
		}
		if err := tlog.CheckTree(c.Proof, c.Size, root, tt.old, oldRoot); err != nil {
			t.Errorf("ProveConsistency(%d, %d): the proof does not check: %v", tt.old, tt.size, err)
		}
	}
	if _, err := s.ProveConsistency(ctx, 4, 3); err == nil {
		t.Error("a consistency proof from a larger tree to a smaller one")
	}
}

// ProveExtends takes the old root from the checkpoint, so a store whose
// log is not an extension of it is reported rolled back.
func TestProveExtends(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for i := range 5 {
		seal(t, s, "s", nil, 0, fmt.Sprint(i))
	}
	root3, err := s.TreeHash(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.ProveExtends(ctx, Checkpoint{Origin: "o", Size: 3, Root: root3}, "witness", 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.OldSize != 3 || c.OldRoot != root3 || c.Size != 5 || len(c.Proof) == 0 {
		t.Errorf("ProveExtends of a true checkpoint: %+v", c)
	}
	if c, err := s.ProveExtends(ctx, Checkpoint{Origin: "o"}, "witness", 4); err != nil || c.Proof != nil || c.Size != 4 {
		t.Errorf("ProveExtends of the empty tree: %+v, %v; want an empty proof", c, err)
	}
	forged := root3
	forged[0] ^= 1
	for _, tt := range []struct {
		name string
		old  Checkpoint
		size int64
		want string
	}{
		{"another root", Checkpoint{Origin: "o", Size: 3, Root: forged}, 0, "the log of size 5 is not an extension of the checkpoint of cp.note (size 3, root "},
		{"ahead of the log", Checkpoint{Origin: "o", Size: 9, Root: root3}, 0, "the checkpoint of cp.note is of log size 9, but the store holds 5 receipts"},
		{"ahead of the tree asked for", Checkpoint{Origin: "o", Size: 3, Root: root3}, 2, "the checkpoint of cp.note is of log size 3, but the store holds 2 receipts"},
	} {
		_, err := s.ProveExtends(ctx, tt.old, "cp.note", tt.size)
		if !errors.Is(err, ErrRolledBack) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrRolledBack saying %q", tt.name, err, tt.want)
		}
	}
}

func TestVerifyLatestCheckpoint(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	v := testVerifier(t)
	if err := s.VerifyLatestCheckpoint(ctx, v); err != nil {
		t.Fatalf("a store with no checkpoint: %v", err)
	}
	for i := range 3 {
		seal(t, s, "s", nil, 0, fmt.Sprint(i))
	}
	if _, err := s.Checkpoint(ctx, "o", testSigner(t)); err != nil {
		t.Fatal(err)
	}
	seal(t, s, "s", nil, 0, "after")
	if err := s.VerifyLatestCheckpoint(ctx, v); err != nil {
		t.Fatalf("a log that extends its checkpoint: %v", err)
	}
	_, otherKey, err := note.GenerateKey(nil, "joule.test")
	if err != nil {
		t.Fatal(err)
	}
	other, err := note.NewVerifier(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.VerifyLatestCheckpoint(ctx, other); err == nil || !strings.HasPrefix(err.Error(), "signature: ") {
		t.Errorf("a checkpoint checked with another key: %v", err)
	}
	root, err := s.TreeHash(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	forged := root
	forged[0] ^= 1
	for _, tt := range []struct {
		name string
		cp   Checkpoint
		want string
	}{
		{"ahead of the log", Checkpoint{Origin: "o", Size: 9, Root: root}, "checkpoint of size 9 is ahead of the log (4)"},
		{"another root", Checkpoint{Origin: "o", Size: 3, Root: forged}, "invalid transparency proof"},
	} {
		msg, err := signNote(tt.cp, testSigner(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rawExec(s, fmt.Sprintf(`INSERT INTO checkpoints (size, root, note, created_ns) VALUES (%d, X'%x', X'%s', 0)`, tt.cp.Size, tt.cp.Root[:], hex.EncodeToString(msg))); err != nil {
			t.Fatal(err)
		}
		if err := s.VerifyLatestCheckpoint(ctx, v); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestWitnessNewest(t *testing.T) {
	s := openTest(t)
	dir := t.TempDir()
	w := attachWitness(t, s, dir)
	if cp, msg, err := w.Newest(); cp != nil || msg != nil || err != nil {
		t.Fatalf("Newest before the first receipt: %v %q %v, want nothing", cp, msg, err)
	}
	seal(t, s, "s", nil, 0, "a")
	old, err := os.ReadFile(w.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "kept")
	if err := os.WriteFile(kept, old, 0o600); err != nil {
		t.Fatal(err)
	}
	seal(t, s, "s", nil, 0, "b")
	for _, tt := range []struct {
		name  string
		files []string
		want  int64 // 0: none
	}{
		{"the witness's own files", nil, 2},
		{"an older copy", []string{kept}, 1},
		{"the newest of two", []string{kept, w.Files[0]}, 2},
		{"a missing file", []string{filepath.Join(dir, "none")}, 0},
	} {
		cp, msg, err := w.Newest(tt.files...)
		switch {
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == 0 && cp != nil:
			t.Errorf("%s: %+v, want none", tt.name, cp)
		case tt.want != 0 && (cp == nil || cp.Size != tt.want):
			t.Errorf("%s: %+v, want size %d", tt.name, cp, tt.want)
		case cp != nil:
			if got, err := OpenCheckpoint(msg, w.Origin, w.Verifier); err != nil || got.Size != cp.Size {
				t.Errorf("%s: the note returned is not the checkpoint's: %v", tt.name, err)
			}
		}
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Newest(w.Files[0], bad); !errors.Is(err, ErrWitnessInvalid) {
		t.Errorf("a file that is no checkpoint: %v, want ErrWitnessInvalid", err)
	}
}

func TestSessionID(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"abc1", "abc2", "abd"} {
		seal(t, s, id, nil, 0, "t")
	}
	for _, tt := range []struct {
		arg, want string
		err       error
	}{
		{"abc1", "abc1", nil},
		{"abd", "abd", nil},
		{"ab", "", ErrAmbiguous},
		{"zz", "zz", nil}, // none: as given
		{"", "", nil},     // not an id: as given
	} {
		got, err := s.SessionID(ctx, tt.arg)
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("SessionID(%q) = %q, %v; want %q, %v", tt.arg, got, err, tt.want, tt.err)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if sum, err := s.Summarize(ctx); err != nil || sum != (Summary{Root: rootFromLeaves(nil)}) {
		t.Fatalf("an empty store: %+v, %v", sum, err)
	}
	putGrant(t, s, "g", "", 10)
	var leaves [][]byte
	for _, session := range []string{"a", "b", "a"} {
		leaves = append(leaves, seal(t, s, session, nil, 0, "t").Envelope)
	}
	sum, err := s.Summarize(ctx)
	if want := (Summary{LogSize: 3, Root: rootFromLeaves(leaves), Sessions: 2, Grants: 1}); err != nil || sum != want {
		t.Errorf("Summarize = %+v, %v; want %+v", sum, err, want)
	}
}
