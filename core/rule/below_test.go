package rule

import (
	"path/filepath"
	"testing"
)

// TestMatchBelowAgrees: for paths below a rule's (symlink-free) scope
// base, MatchBelow decides as MatchPath does, in every mode and access.
func TestMatchBelowAgrees(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	roots := Roots{Workspace: ws, Home: "/home/u"}
	rules := []string{"Read(**/.env)", "Read(src/**/secret*.pem)", "Edit(src/**/gen_*.go)", "Read(src/*.key)",
		"Edit(docs/**)", "Read(.git/config)", "Edit(**/*.lock)", "Read(SRC/**/x)", "Read(src/a?c/**)"}
	paths := []string{"", ".env", "src", "src/.env", "src/a/b/secret1.pem", "src/secret.pem", "src/gen_x.go",
		"src/a/gen_y.go", "src/k.key", "src/a/k.key", "docs", "docs/a/b", "a/b.lock", "src/abc/d", "src/x", "SRC/q/x"}
	for _, text := range rules {
		r, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := r.Scope(roots)
		for _, rel := range paths {
			abs := filepath.Join(ws, rel)
			if !within(abs, s.Base, false) {
				continue
			}
			for _, kind := range []Access{Read, ReadTree, Write} {
				for _, mode := range []Mode{Allow, Ask, Deny} {
					if got, want := r.MatchBelow(kind, abs, s.Base, mode), r.MatchPath(kind, abs, roots, mode); got != want {
						t.Errorf("%s %s kind %v mode %v: MatchBelow %v, MatchPath %v", text, rel, kind, mode, got, want)
					}
				}
			}
		}
	}
}
