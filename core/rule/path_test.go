package rule

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// tempRoots returns resolved, empty workspace and home directories.
func tempRoots(t testing.TB) Roots {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"ws", "home"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := ResolveRoots(filepath.Join(dir, "ws"), filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	return roots
}

func TestMatchPath(t *testing.T) {
	roots := tempRoots(t)
	tests := []struct {
		rule string
		kind Access
		path string // $WS and $HOME stand for the roots
		mode Mode
		want bool
	}{
		// ** covers everything in the workspace, dotfiles and the root included.
		{"Read(**)", Read, "$WS/a.go", Allow, true},
		{"Read(**)", Read, "$WS/.env", Allow, true},
		{"Read(**)", Read, "$WS/.git/config", Allow, true},
		{"Read(**)", Read, "$WS", Allow, true},
		{"Read(**)", Read, "$WS-other/a.go", Allow, false},
		{"Read(**)", Read, "/etc/passwd", Allow, false},
		{"Read(src/**)", Read, "$WS/src", Allow, true},
		{"Read(src/**)", Read, "$WS/src/a/b/c.go", Allow, true},
		{"Read(src/**)", Read, "$WS/srcx/a.go", Allow, false},
		{"Read(src/**)", Read, "$WS/lib/src/a.go", Allow, false},
		// * and ? stay within one segment and match dotfiles.
		{"Read(*.md)", Read, "$WS/README.md", Allow, true},
		{"Read(*.md)", Read, "$WS/.hidden.md", Allow, true},
		{"Read(*.md)", Read, "$WS/docs/a.md", Allow, false},
		{"Read(**/*.md)", Read, "$WS/docs/a.md", Allow, true},
		{"Read(**/*.md)", Read, "$WS/a.md", Allow, true},
		{"Read(**/*.md)", Read, "$WS/a.mdx", Allow, false},
		{"Write(src/*.go)", Write, "$WS/src/a.go", Allow, true},
		{"Write(src/*.go)", Write, "$WS/src/sub/a.go", Allow, false},
		{"Write(a/**/b)", Write, "$WS/a/b", Allow, true},
		{"Write(a/**/b)", Write, "$WS/a/x/y/b", Allow, true},
		{"Write(a/**/b)", Write, "$WS/a/x/c", Allow, false},
		{"Write(a/**/b/**/c)", Write, "$WS/a/1/b/2/3/c", Allow, true},
		{"Write(a/**/b/**/c)", Write, "$WS/a/1/c", Allow, false},
		{"Read(file?.txt)", Read, "$WS/file1.txt", Allow, true},
		{"Read(file?.txt)", Read, "$WS/file10.txt", Allow, false},
		{"Read(file?.txt)", Read, "$WS/fileé.txt", Allow, true},
		{"Read([abc].txt)", Read, "$WS/b.txt", Allow, true},
		{"Read([abc].txt)", Read, "$WS/d.txt", Allow, false},
		{"Read([!abc].txt)", Read, "$WS/d.txt", Allow, true},
		{"Read([^abc].txt)", Read, "$WS/a.txt", Allow, false},
		{`Read(\*.txt)`, Read, "$WS/*.txt", Allow, true},
		{`Read(\*.txt)`, Read, "$WS/a.txt", Allow, false},
		{"Read(README*)", Read, "$WS/README", Allow, true},
		{"Read(a*b*c)", Read, "$WS/aXbYbZc", Allow, true},
		{"Read(a*b*c)", Read, "$WS/aXbYbZ", Allow, false},
		// Families: Read rules cover Read and ReadTree; Write, Edit,
		// MultiEdit and NotebookEdit rules all cover Write.
		{"Edit(src/**)", Write, "$WS/src/x", Allow, true},
		{"MultiEdit(src/**)", Write, "$WS/src/x", Allow, true},
		{"NotebookEdit(src/**)", Write, "$WS/src/x", Allow, true},
		{"Read(src/**)", Write, "$WS/src/x", Allow, false},
		{"Write(src/**)", Read, "$WS/src/x", Allow, false},
		{"Write(src/**)", ReadTree, "$WS/src", Allow, false},
		// Bare rules: the workspace, nothing outside.
		{"Read", Read, "$WS/x/y", Allow, true},
		{"Read", Read, "$WS", Allow, true},
		{"Read", Read, "/etc/passwd", Allow, false},
		{"Read", Read, "$HOME/.ssh/id_rsa", Allow, false},
		{"Write", Write, "$WS/x", Deny, true},
		{"Write", Write, "$WS-x/y", Deny, false},
		// Absolute and home patterns.
		{"Read(/etc/**)", Read, "/etc/passwd", Allow, true},
		{"Read(//etc/hosts)", Read, "/etc/hosts", Allow, true},
		{"Read(/etc/hosts)", Read, "/etc/hosts.allow", Allow, false},
		{"Read(~/.ssh/**)", Read, "$HOME/.ssh/id_rsa", Allow, true},
		{"Read(~/.ssh/**)", Read, "$WS/.ssh/id_rsa", Allow, false},
		{"Read(~)", Read, "$HOME", Allow, true},
		{"Read(~)", Read, "$HOME/x", Allow, false},
		{"Read(~)", Read, "$HOME/x", Deny, true},
		{"Read(/)", Read, "/etc/passwd", Deny, true},
		{"Read(/)", Read, "/", Allow, true},
		// Broad modes: ancestors and case.
		{"Write(.git)", Write, "$WS/.git/config", Allow, false},
		{"Write(.git)", Write, "$WS/.git/config", Deny, true},
		{"Write(.git/**)", Write, "$WS/.GIT/config", Allow, false},
		{"Write(.git/**)", Write, "$WS/.GIT/config", Deny, true},
		{"Write(src/*)", Write, "$WS/src/a/b", Allow, false},
		{"Write(src/*)", Write, "$WS/src/a/b", Ask, true},
		{"Read([a-c].txt)", Read, "$WS/B.TXT", Deny, true},
		{"Read([a-c].txt)", Read, "$WS/B.TXT", Allow, false},
		{"Read(*.env)", Read, "$WS/.ENV", Deny, true},
		// ReadTree: allow needs everything below; ask/deny anything below.
		{"Read(src/**)", ReadTree, "$WS/src", Allow, true},
		{"Read(src/**)", ReadTree, "$WS/src/lib", Allow, true},
		{"Read(src/**)", ReadTree, "$WS", Allow, false},
		{"Read(src/*.go)", ReadTree, "$WS/src", Allow, false},
		{"Read(src)", ReadTree, "$WS/src", Allow, false},
		{"Read(**)", ReadTree, "$WS", Allow, true},
		{"Read", ReadTree, "$WS", Allow, true},
		{"Read(**/.env)", ReadTree, "$WS", Deny, true},
		{"Read(secrets/**)", ReadTree, "$WS", Deny, true},
		{"Read(secrets/**)", ReadTree, "$WS/src", Deny, false},
		{"Read(secrets/key)", ReadTree, "$WS/secrets", Deny, true},
		{"Read(secrets/key)", ReadTree, "$WS/secrets/key", Deny, true},
		// Paths must be absolute and clean; roots must be set.
		{"Read(**)", Read, "$WS/src/../../etc/passwd", Deny, false},
		{"Read(**)", Read, "src/a.go", Allow, false},
		{"Read(**)", Read, "", Deny, false},
		// Not path rules, or no valid mode: no match.
		{"Bash", Read, "$WS/a", Allow, false},
		{"Read(**)", Read, "$WS/a", 0, false},
		{"Read(**)", Access(9), "$WS/a", Deny, false},
	}
	for _, tt := range tests {
		abs := strings.NewReplacer("$WS", roots.Workspace, "$HOME", roots.Home).Replace(tt.path)
		t.Run(tt.mode.String()+" "+tt.rule+" "+tt.path, func(t *testing.T) {
			r, err := Parse(tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.MatchPath(tt.kind, abs, roots, tt.mode); got != tt.want {
				t.Errorf("%s.MatchPath(%v, %q, %v) = %v, want %v", tt.rule, tt.kind, abs, tt.mode, got, tt.want)
			}
		})
	}
}

func TestMatchPathEmptyRoots(t *testing.T) {
	for _, text := range []string{"Read", "Read(**)", "Read(~/.ssh/**)", "Read(~)"} {
		r, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []Mode{Allow, Ask, Deny} {
			if r.MatchPath(Read, "/x/.ssh/id", Roots{}, mode) {
				t.Errorf("%s.MatchPath with empty roots in %v mode = true", text, mode)
			}
			if r.MatchPath(Read, "/x/.ssh/id", Roots{Workspace: "rel", Home: "/x/../x"}, mode) {
				t.Errorf("%s.MatchPath with unclean roots in %v mode = true", text, mode)
			}
		}
	}
}

func TestAccessOf(t *testing.T) {
	tests := []struct {
		tool string
		want Access
		ok   bool
	}{
		{"Read", Read, true},
		{"Glob", ReadTree, true},
		{"Grep", ReadTree, true},
		{"Write", Write, true},
		{"Edit", Write, true},
		{"MultiEdit", Write, true},
		{"NotebookEdit", Write, true},
		{"Bash", 0, false},
		{"read", 0, false},
	}
	for _, tt := range tests {
		got, ok := AccessOf(tt.tool)
		if got != tt.want || ok != tt.ok {
			t.Errorf("AccessOf(%q) = %v, %v, want %v, %v", tt.tool, got, ok, tt.want, tt.ok)
		}
	}
}

// symlinkFixture builds a workspace whose src/ holds symlinks of every kind
// pointing outside it, and returns the resolved workspace and outside dirs.
//
//	ws/src/ok/            a real directory
//	ws/src/inside      -> ws/src/ok            (stays inside)
//	ws/src/dirlink     -> out                  (directory, absolute)
//	ws/src/rellink     -> ../../out            (directory, relative)
//	ws/src/filelink    -> out/secret           (file)
//	ws/src/dangling    -> out/new              (target does not exist yet)
//	ws/src/chain1      -> chain2 -> out        (chain)
//	ws/src/loop1       -> loop2 -> loop1       (loop)
//	out/secret
func symlinkFixture(t testing.TB) (ws, out string) {
	t.Helper()
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws, out = filepath.Join(real, "ws"), filepath.Join(real, "out")
	for _, d := range []string{filepath.Join(ws, "src", "ok"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(ws, "src")
	links := []struct{ name, target string }{
		{"inside", filepath.Join(src, "ok")},
		{"dirlink", out},
		{"rellink", "../../out"},
		{"filelink", filepath.Join(out, "secret")},
		{"dangling", filepath.Join(out, "new")},
		{"chain1", "chain2"},
		{"chain2", out},
		{"loop1", "loop2"},
		{"loop2", "loop1"},
	}
	for _, l := range links {
		if err := os.Symlink(l.target, filepath.Join(src, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	return ws, out
}

// TestMatchPathSymlinkEscapes checks that no spelling of a path that really
// lands outside the workspace is matched by Write(src/**).
func TestMatchPathSymlinkEscapes(t *testing.T) {
	ws, out := symlinkFixture(t)
	roots := Roots{Workspace: ws, Home: "/nonexistent-home"}
	rule, err := Parse("Write(src/**)")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		want    string // resolved, with $WS and $OUT for the dirs
		matched bool
	}{
		{"src/ok/a.go", "$WS/src/ok/a.go", true},
		{"src/ok/new/dir/a.go", "$WS/src/ok/new/dir/a.go", true},
		{"src/inside/a.go", "$WS/src/ok/a.go", true},
		{"./src//ok/./a.go", "$WS/src/ok/a.go", true},
		{"src/dirlink/x", "$OUT/x", false},
		{"src/rellink/x", "$OUT/x", false},
		{"src/filelink", "$OUT/secret", false},
		{"src/dangling", "$OUT/new", false},
		{"src/chain1/x", "$OUT/x", false},
		{"src/../../out/x", "$OUT/x", false},
		// The kernel resolves dirlink before "..": this is out's parent,
		// although a lexical clean would say ws/src/escaped.
		{"src/dirlink/../escaped", "$OUT/../escaped", false},
		{"$WS/src/dirlink/x", "$OUT/x", false},
	}
	repl := strings.NewReplacer("$WS", ws, "$OUT", out)
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := Resolve(ws, repl.Replace(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Clean(repl.Replace(tt.want)); got != want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.path, got, want)
			}
			for _, mode := range []Mode{Allow, Deny} {
				if m := rule.MatchPath(Write, got, roots, mode); m != tt.matched {
					t.Errorf("Write(src/**).MatchPath(%q, %v) = %v, want %v", got, mode, m, tt.matched)
				}
			}
		})
	}
	if _, err := Resolve(ws, "src/loop1/x"); err == nil || !strings.Contains(err.Error(), "more than 40 symlinks") {
		t.Errorf("Resolve through a symlink loop: error %v, want one about too many symlinks", err)
	}
}

// TestMatchPathSymlinkedWorkspace reaches the workspace through a symlink,
// as macOS's /tmp does.
func TestMatchPathSymlinkedWorkspace(t *testing.T) {
	ws, _ := symlinkFixture(t)
	link := filepath.Join(t.TempDir(), "wslink")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	rule, err := Parse("Write(src/**)")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := Resolve(link, "src/ok/a.go")
	if err != nil {
		t.Fatal(err)
	}
	roots, err := ResolveRoots(link, "/nonexistent-home")
	if err != nil {
		t.Fatal(err)
	}
	if roots.Workspace != ws {
		t.Fatalf("ResolveRoots workspace = %q, want %q", roots.Workspace, ws)
	}
	if !rule.MatchPath(Write, abs, roots, Allow) {
		t.Errorf("Write(src/**) with resolved roots does not match %q", abs)
	}
	// Unresolved roots fail closed for allow rules.
	if rule.MatchPath(Write, abs, Roots{Workspace: link}, Allow) {
		t.Errorf("Write(src/**) with an unresolved workspace matched %q", abs)
	}
}

// TestMatchPathBroadResolvesPattern checks that ask and deny rules also
// match the real location of a pattern's literal directories.
func TestMatchPathBroadResolvesPattern(t *testing.T) {
	ws, out := symlinkFixture(t)
	home := filepath.Join(filepath.Dir(ws), "home")
	if err := os.MkdirAll(filepath.Join(home, "dotfiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "dotfiles", "bashrc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dotfiles/bashrc", filepath.Join(home, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	roots := Roots{Workspace: ws, Home: home}
	tests := []struct {
		rule, path string
		kind       Access
		deny       bool
		allow      bool
	}{
		// A pattern naming the link covers the real directory.
		{"Read(" + ws + "/src/dirlink/**)", out + "/secret", Read, true, false},
		{"Read(src/dirlink/**)", out + "/secret", Read, true, false},
		{"Write(src/dangling)", out + "/new", Write, true, false},
		{"Read(~/.bashrc)", home + "/dotfiles/bashrc", Read, true, false},
		{"Read(src/chain1/*)", out + "/secret", Read, true, false},
		// Globs before the link stop the resolution; the real path
		// then has to match as written.
		{"Read(*/dirlink/**)", out + "/secret", Read, false, false},
		// Resolution failure (a loop) leaves the pattern as written.
		{"Read(src/loop1/**)", out + "/secret", Read, false, false},
	}
	for _, tt := range tests {
		r, err := Parse(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.MatchPath(tt.kind, tt.path, roots, Deny); got != tt.deny {
			t.Errorf("%s.MatchPath(%q, deny) = %v, want %v", tt.rule, tt.path, got, tt.deny)
		}
		if got := r.MatchPath(tt.kind, tt.path, roots, Allow); got != tt.allow {
			t.Errorf("%s.MatchPath(%q, allow) = %v, want %v", tt.rule, tt.path, got, tt.allow)
		}
	}
}

func TestScope(t *testing.T) {
	roots := Roots{Workspace: "/ws", Home: "/home/u"}
	tests := []struct {
		rule        string
		base        string
		exact, tree bool
		ok          bool
	}{
		{"Read", "/ws", false, true, true},
		{"Write", "/ws", false, true, true},
		{"Read(.env)", "/ws/.env", true, true, true},
		{"Read(~/.ssh/**)", "/home/u/.ssh", false, true, true},
		{"Edit(src/**)", "/ws/src", false, true, true},
		{"Read(**/.env)", "/ws", false, false, true},
		{"Read(/etc/*.conf)", "/etc", false, false, true},
		{"Read(/)", "/", true, true, true},
		{"Bash(ls)", "", false, false, false},
		{"WebFetch", "", false, false, false},
	}
	for _, tc := range tests {
		r, err := Parse(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := r.Scope(roots)
		if ok != tc.ok || s.Base != tc.base || s.Exact != tc.exact || s.Tree != tc.tree {
			t.Errorf("%s: got %+v %v, want base %q exact %v tree %v ok %v", tc.rule, s, ok, tc.base, tc.exact, tc.tree, tc.ok)
		}
	}
	if r, _ := Parse("Read(.env)"); func() bool { _, ok := r.Scope(Roots{}); return ok }() {
		t.Error("a rule anchored at an empty workspace has no scope")
	}
}

// TestIsCleanAbs: the one-pass check says what path.Clean says.
func TestIsCleanAbs(t *testing.T) {
	for _, p := range []string{"", "/", "//", "a", "a/b", "/a", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "/a/.",
		"/a/..", "/.a", "/..a", "/a..", "/a/.b/c", "/a/b.", "/a/b/c", "/ä/ö", "/a/ /b", "./a", "/a/b//", "/...", "/a/.../b"} {
		want := path.IsAbs(p) && path.Clean(p) == p
		if got := isCleanAbs(p); got != want {
			t.Errorf("isCleanAbs(%q) = %v, path.Clean says %v", p, got, want)
		}
	}
}

func FuzzIsCleanAbs(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/a/./b", "//", "/a/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := isCleanAbs(p), path.IsAbs(p) && path.Clean(p) == p; got != want {
			t.Errorf("isCleanAbs(%q) = %v, path.Clean says %v", p, got, want)
		}
	})
}
