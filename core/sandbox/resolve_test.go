package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/joulehook/joule/core/rule"
)

// TestResolverMatchesResolve: resolving a directory at a time, with what
// was looked up remembered, gives what rule.Resolve gives from the root
// for each path, through relative, absolute, chained, dangling and
// looping links, links to files, absent directories and ".." in a target;
// and it records for Plan which paths exist.
func TestResolverMatchesResolve(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	mk := func(p string) { os.MkdirAll(filepath.Join(root, p), 0o755) }
	file := func(p string) { os.WriteFile(filepath.Join(root, p), nil, 0o644) }
	link := func(target, p string) { os.Symlink(target, filepath.Join(root, p)) }
	mk("a/b/c")
	mk("x/y")
	file("a/b/f")
	link("b", "a/rel")                      // relative, same directory
	link(filepath.Join(root, "x"), "a/abs") // absolute
	link("rel/c", "a/chain")                // through another link
	link("../x/y", "a/b/up")                // ".." in the target
	link("f", "a/b/tofile")                 // to a file
	link("nowhere/deeper", "a/dangling")    // to nothing
	link("loop2", "a/loop1")                // a loop
	link("loop1", "a/loop2")
	paths := []string{"/", root, "a", "a/b", "a/b/c", "a/b/f", "a/b/f/below", "a/rel", "a/rel/c", "a/rel/f",
		"a/abs", "a/abs/y", "a/chain", "a/chain/new", "a/b/up", "a/b/up/z", "a/b/tofile", "a/dangling",
		"a/dangling/more", "a/loop1", "a/loop1/x", "absent", "absent/deeper/still", "x/y/../y", "a/rel/../b"}
	var res resolver
	for pass := 0; pass < 2; pass++ { // the second pass answers from what the first remembered
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = root + "/" + p
			}
			want, err := rule.Resolve("/", p)
			if err != nil {
				want = filepath.Clean(p)
			}
			if got := res.resolve(p); got != want {
				t.Errorf("pass %d: resolve(%s) = %s, rule.Resolve gives %s", pass, p, got, want)
			}
		}
	}
	for p, want := range map[string]stat{
		root + "/a/b":           {exists: true, dir: true},
		root + "/a/b/f":         {exists: true},
		root + "/absent":        {},
		root + "/absent/deeper": {},
		root + "/a/b/f/below":   {},
	} {
		if got, ok := res.stats[p]; !ok || got != want {
			t.Errorf("stats[%s] = %+v (recorded %v), want %+v", p, got, ok, want)
		}
	}
}
