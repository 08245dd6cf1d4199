package l1

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// A Go rename in a workspace with no gopls running is L1's own and starts
// gopls in the background; once gopls is resident, renames go through it,
// with the same result as L1's own, and what gopls refuses is refused
// with L1's reason.
func TestRenameOnResidentGopls(t *testing.T) {
	goplsPath(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, s := range twoPackages {
		if err := mkfile(filepath.Join(root, filepath.FromSlash(p)), s); err != nil {
			t.Fatal(err)
		}
	}
	files, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	pool := &lsp.Pool{}
	old := lsp.Default
	lsp.Default = pool
	defer func() { pool.Close(); lsp.Default = old }()
	ctx := context.Background()

	cold, summary, err := renameAny(ctx, root, files, rn("Counter", "Tally"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(summary, "gopls") {
		t.Fatalf("the first rename went through gopls: %s", summary)
	}
	// gopls starts in the background; wait for it (a bound, not a timing)
	for deadline := time.Now().Add(3 * time.Minute); !pool.Resident(lsp.Gopls, root); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("gopls did not start for the workspace")
		}
	}
	for _, c := range []struct{ target, to string }{
		{"Counter", "Tally"},
		{"Counter.Add", "Increment"},
		{"lib/lib.go:16:2", "sum"}, // total := n, by position
	} {
		mine, _, err := rename(ctx, root, files, rn(c.target, c.to))
		if err != nil {
			t.Fatal(err)
		}
		warm, summary, err := renameAny(ctx, root, files, rn(c.target, c.to))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(summary, "through gopls") {
			t.Errorf("%s: not through the resident gopls: %s", c.target, summary)
		}
		for p := range mine {
			if !bytes.Equal(mine[p], warm[p]) {
				t.Errorf("%s → %s: %s differs from L1's own rename:\n%s\nwant\n%s", c.target, c.to, p, warm[p], mine[p])
			}
		}
	}
	if cold == nil {
		t.Fatal("no result")
	}
	// gopls refuses (New is declared); the reason given is L1's
	_, _, got := renameAny(ctx, root, files, rn("helper", "New"))
	_, _, want := rename(ctx, root, files, rn("helper", "New"))
	if got == nil || want == nil {
		t.Fatalf("a conflicting rename was not refused: %v, %v", got, want)
	}
	if got.Error() != want.Error() {
		t.Errorf("refusal %q, want L1's %q", got, want)
	}
}
