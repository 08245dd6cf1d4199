package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func TestTreeHashAndProofs(t *testing.T) { forBackends(t, testTreeHashAndProofs) }

func testTreeHashAndProofs(t *testing.T, b backend) {
	s := b.open(t)
	ctx := context.Background()
	var leaves [][]byte
	for i := range 21 { // every shape up to 21 leaves, past 16 and its edges
		e := seal(t, s, "s", nil, 0, "leaf")
		leaves = append(leaves, e.Envelope)
		n := int64(i + 1)
		got, err := s.TreeHash(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := rootFromLeaves(leaves); got != want {
			t.Fatalf("tree hash at size %d: %v, want %v", n, got, want)
		}
	}
	size := int64(len(leaves))
	roots := make([]tlog.Hash, size+1)
	for n := int64(0); n <= size; n++ {
		roots[n] = rootFromLeaves(leaves[:n])
	}
	for n := int64(1); n <= size; n++ {
		for i := range n {
			p, err := s.ProveRecord(ctx, i, n)
			if err != nil {
				t.Fatal(err)
			}
			if err := tlog.CheckRecord(p, n, roots[n], i, tlog.RecordHash(leaves[i])); err != nil {
				t.Fatalf("record %d in tree %d: %v", i, n, err)
			}
			// A proof for one leaf must not verify another.
			other := (i + 1) % n
			if other != i && tlog.CheckRecord(p, n, roots[n], i, tlog.RecordHash(leaves[other])) == nil {
				t.Fatalf("record proof %d in tree %d verifies leaf %d", i, n, other)
			}
		}
		for old := int64(1); old <= n; old++ {
			p, err := s.ProveTree(ctx, old, n)
			if err != nil {
				t.Fatal(err)
			}
			if err := tlog.CheckTree(p, n, roots[n], old, roots[old]); err != nil {
				t.Fatalf("tree %d extends %d: %v", n, old, err)
			}
		}
	}
	empty, err := s.TreeHash(ctx, 0)
	if err != nil || empty != roots[0] {
		t.Errorf("empty tree hash %v, %v; want %v", empty, err, roots[0])
	}
}

func TestProofArgumentErrors(t *testing.T) { forBackends(t, testProofArgumentErrors) }

func testProofArgumentErrors(t *testing.T, b backend) {
	s := b.open(t)
	ctx := context.Background()
	for range 4 {
		seal(t, s, "s", nil, 0, "x")
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"tree hash past end", func() error { _, err := s.TreeHash(ctx, 5); return err }(), "outside the log of size 4"},
		{"tree hash negative", func() error { _, err := s.TreeHash(ctx, -1); return err }(), "outside the log"},
		{"record index past tree", func() error { _, err := s.ProveRecord(ctx, 4, 4); return err }(), "outside the tree of size 4"},
		{"record negative", func() error { _, err := s.ProveRecord(ctx, -1, 4); return err }(), "outside the tree"},
		{"record tree past log", func() error { _, err := s.ProveRecord(ctx, 1, 9); return err }(), "outside the log of size 4"},
		{"tree old zero", func() error { _, err := s.ProveTree(ctx, 0, 4); return err }(), "old size 0"},
		{"tree old after new", func() error { _, err := s.ProveTree(ctx, 3, 2); return err }(), "old size 3"},
		{"tree new past log", func() error { _, err := s.ProveTree(ctx, 2, 5); return err }(), "outside the log"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, tt.err, tt.want)
		}
	}
}

func TestCheckpointGolden(t *testing.T) { forBackends(t, testCheckpointGolden) }

func testCheckpointGolden(t *testing.T, b backend) {
	s := b.open(t, WithClock(fixedClock()))
	ctx := context.Background()
	if _, err := s.LatestCheckpoint(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LatestCheckpoint on an empty store: %v, want ErrNotFound", err)
	}
	signer := testSigner(t)
	var notes []byte
	for _, n := range []int{0, 1, 5} {
		for range n {
			seal(t, s, "golden", nil, 0, "g")
		}
		msg, err := s.Checkpoint(ctx, "joule.test/log", signer)
		if err != nil {
			t.Fatal(err)
		}
		latest, err := s.LatestCheckpoint(ctx)
		if err != nil || !bytes.Equal(latest, msg) {
			t.Fatalf("LatestCheckpoint = %q, %v; want the one just made", latest, err)
		}
		opened, err := note.Open(msg, note.VerifierList(testVerifier(t)))
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseCheckpoint([]byte(opened.Text))
		if err != nil {
			t.Fatal(err)
		}
		size, _ := s.LogSize(ctx)
		root, _ := s.TreeHash(ctx, size)
		if c.Origin != "joule.test/log" || c.Size != size || c.Root != root {
			t.Fatalf("checkpoint %+v, log size %d root %v", c, size, root)
		}
		notes = append(notes, msg...)
		notes = append(notes, "----\n"...)
	}
	golden(t, "checkpoints.golden", notes)

	other, _, err := note.GenerateKey(nil, "someone.else")
	if err != nil {
		t.Fatal(err)
	}
	otherSigner, err := note.NewSigner(other)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := s.Checkpoint(ctx, "joule.test/log", otherSigner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(forged, note.VerifierList(testVerifier(t))); err == nil {
		t.Error("a checkpoint signed by another key verified with the test verifier")
	}
	checkConsistent(t, s)
}

func TestCheckpointRejects(t *testing.T) { forBackends(t, testCheckpointRejects) }

func testCheckpointRejects(t *testing.T, b backend) {
	s := b.open(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		origin string
		signer note.Signer
		want   string
	}{
		{"empty origin", "", testSigner(t), "empty origin"},
		{"newline in origin", "a\nb", testSigner(t), "control character"},
		{"invalid utf8", "a\xff", testSigner(t), "not valid UTF-8"},
		{"nil signer", "o", nil, "nil signer"},
	}
	for _, tt := range tests {
		if _, err := s.Checkpoint(ctx, tt.origin, tt.signer); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := s.LatestCheckpoint(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("a rejected checkpoint was stored: %v", err)
	}
}

func TestParseCheckpoint(t *testing.T) {
	root := "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	tests := []struct {
		name string
		text string
		want string // "" for success
	}{
		{"minimal", "o\n0\n" + root + "\n", ""},
		{"extensions", "example.com/log\n12\n" + root + "\nx ext\n— not a sig\n", ""},
		{"no final newline", "o\n0\n" + root, "does not end in a newline"},
		{"two lines", "o\n0\n", "has 2 lines"},
		{"empty origin", "\n0\n" + root + "\n", "empty origin"},
		{"leading zero", "o\n01\n" + root + "\n", "not a canonical decimal"},
		{"plus sign", "o\n+1\n" + root + "\n", "not a canonical decimal"},
		{"negative", "o\n-1\n" + root + "\n", "not a canonical decimal"},
		{"too big", "o\n9223372036854775808\n" + root + "\n", "not a canonical decimal"},
		{"short root", "o\n1\nAAAA\n", "not a canonical base64 32-byte hash"},
		{"url base64", "o\n1\n47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=\n", "not a canonical base64"},
		{"unpadded", "o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n", "not a canonical base64"},
		{"empty extension", "o\n1\n" + root + "\n\n", "empty extension line"},
		{"blank line then more", "o\n1\n" + root + "\n\nx\n", "empty extension line"},
		{"control char", "o\x01\n1\n" + root + "\n", "control character"},
		{"crlf", "o\r\n1\r\n" + root + "\r\n", "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCheckpoint([]byte(tt.text))
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("ParseCheckpoint error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(c.Text()); got != tt.text {
				t.Errorf("Text() = %q, want %q", got, tt.text)
			}
		})
	}
}

// FuzzParseCheckpoint: parsing never panics, and anything accepted is in
// canonical form (Text gives back the input) and parses again identically.
func FuzzParseCheckpoint(f *testing.F) {
	root := "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	for _, seed := range []string{
		"o\n0\n" + root + "\n",
		"example.com/log\n12\n" + root + "\next\n",
		"o\n01\n" + root + "\n",
		"o\n1\nAAAA\n",
		"",
		"\n\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := ParseCheckpoint(text)
		if err != nil {
			return
		}
		if !bytes.Equal(c.Text(), text) {
			t.Fatalf("accepted %q but Text() = %q", text, c.Text())
		}
		again, err := ParseCheckpoint(c.Text())
		if err != nil || again.Origin != c.Origin || again.Size != c.Size || again.Root != c.Root || len(again.Extensions) != len(c.Extensions) {
			t.Fatalf("reparse of %q: %+v, %v", text, again, err)
		}
		if c.Size < 0 {
			t.Fatalf("negative size accepted from %q", text)
		}
	})
}
