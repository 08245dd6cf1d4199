package l0

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  rename   a  to b \n", "rename a to b"},
		{"rename A to b", "rename A to b"},
		{"/diff\r\n--- a/x  \r\n+++ b/x\n", "/diff\n--- a/x\n+++ b/x"},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func signed(t *testing.T, key ed25519.PrivateKey, files core.Files, intent string) *core.SignedOp {
	t.Helper()
	tree, _ := files.Tree()
	op := &core.CodingOp{Prior: tree.ID(), Author: core.PublicKey(key.Public().(ed25519.PublicKey)), Intent: intent, Tier: core.L1,
		Edits: []core.Edit{{Path: "a.txt", Anchor: core.RangeAnchor(0, 1), Replacement: core.Bytes("b")}}}
	s, err := core.SignOp(key, op)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStage(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644)
	c, err := Open(filepath.Join(t.TempDir(), Dir))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := core.ReadDir(root)
	s := &Stage{Cache: c, Author: key.Public().(ed25519.PublicKey)}
	ctx := context.Background()
	req := &tiers.Request{Prompt: "replace 'a' with 'b'", Root: root}
	if res, err := s.TryResolve(ctx, req); res != nil || err != nil {
		t.Fatalf("empty cache closed: %v %v", res, err)
	}
	op := signed(t, key, files, req.Prompt)
	if err := c.Put(req.Prompt, op); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		prompt string
		edit   bool // change the tree first
		hit    bool
	}{
		{"same request", "replace 'a' with 'b'", false, true},
		{"blank differences", "  replace  'a' with 'b' ", false, true},
		{"similar request", "replace 'a' with 'c'", false, false},
		{"case differs", "Replace 'a' with 'b'", false, false},
		{"same request, tree changed", "replace 'a' with 'b'", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := root
			if tt.edit {
				r = t.TempDir()
				os.WriteFile(filepath.Join(r, "a.txt"), []byte("a "), 0o644)
			}
			res, err := s.TryResolve(ctx, &tiers.Request{Prompt: tt.prompt, Root: r})
			if err != nil {
				t.Fatal(err)
			}
			if (res != nil) != tt.hit {
				t.Fatalf("hit = %v, want %v", res != nil, tt.hit)
			}
			if res != nil {
				if _, err := core.Apply(files, &res.Op.Op); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// An entry by another author, or a corrupt one, is never replayed.
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("z"), 0o644)
	files2, _ := core.ReadDir(root)
	if err := c.Put("p", signed(t, other, files2, "p")); err != nil {
		t.Fatal(err)
	}
	if res, err := s.TryResolve(ctx, &tiers.Request{Prompt: "p", Root: root}); res != nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("foreign op: %v %v", res, err)
	}
	tree, _ := files2.Tree()
	k, _ := Key("q", tree.ID())
	os.WriteFile(c.path(k), []byte("garbage"), 0o600)
	if res, err := s.TryResolve(ctx, &tiers.Request{Prompt: "q", Root: root}); res != nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt entry: %v %v", res, err)
	}
}
