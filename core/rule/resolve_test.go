package rule

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveErrors(t *testing.T) {
	long := "/" + strings.Repeat("a", maxPathLen)
	tests := []struct {
		cwd, path, want string
	}{
		{"/", "", "empty path"},
		{"/", "a\x00b", `path "a\x00b" contains a NUL byte`},
		{"/", "a\xffb", `path "a\xffb" is not valid UTF-8`},
		{"/", long, `path "` + long[:80] + `..." is 4097 bytes, longer than the 4096-byte limit`},
		{"/" + strings.Repeat("d", maxPathLen-2), "abc", `path "abc" joined to working directory is 4099 bytes, longer than the 4096-byte limit`},
		{"", "rel", `relative path "rel" needs a working directory`},
		{"rel", "x", `working directory "rel" is not absolute`},
		{"/a\x00", "x", `working directory "/a\x00" contains a NUL byte`},
		{"/", "~/.ssh/id_rsa", `path "~/.ssh/id_rsa" starts with ~; expand the home directory first`},
		{"/", "~", `path "~" starts with ~; expand the home directory first`},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.cwd, tt.path)
		if err == nil {
			t.Errorf("Resolve(%q, %q) = %q, want error %q", tt.cwd, tt.path, got, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Resolve(%q, %q) error:\n got %s\nwant %s", tt.cwd, tt.path, err, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	ws, out := symlinkFixture(t)
	tests := []struct{ cwd, path, want string }{
		{"/", "/", "/"},
		{"/", "/..", "/"},
		{"/", "/../../x/./y//z/", "/x/y/z"},
		{ws, ".", ws},
		{ws, "src/ok", ws + "/src/ok"},
		{ws, "src/ok/../inside", ws + "/src/ok"},
		{ws, "src/missing/../ok", ws + "/src/ok"},
		{ws + "/src/ok", "../dirlink", out},
		{ws, "src/filelink/x", out + "/secret/x"}, // under a file: the open fails, the place is still outside
		{"/ignored", ws + "/src/rellink", out},
		{ws + "/src/dirlink", "secret", out + "/secret"},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.cwd, tt.path)
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", tt.cwd, tt.path, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tt.cwd, tt.path, got, tt.want)
		}
	}
}

// TestResolveUninspectable checks that a component Resolve cannot inspect
// (here a name longer than the file system allows) is an error, not a guess.
func TestResolveUninspectable(t *testing.T) {
	name := strings.Repeat("n", 300)
	got, err := Resolve(t.TempDir(), name+"/x")
	if err == nil {
		t.Fatalf("Resolve of a %d-byte name = %q, want an error", len(name), got)
	}
	if !strings.HasPrefix(err.Error(), `resolving "nnnn`) {
		t.Errorf("error = %v, want one naming the path", err)
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		abs, root string
		want      bool
	}{
		{"/work/a", "/work/a", true},
		{"/work/a/b", "/work/a", true},
		{"/work/ab", "/work/a", false},
		{"/work", "/work/a", false},
		{"/work/a/", "/work/a", true},
		{"/work/a/../b", "/work/a", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"/work/a", "/work/a/", true},
		{"work/a", "/work", false},
		{"/work/a", "work", false},
		{"/WORK/a", "/work", false},
		{"", "/", false},
	}
	for _, tt := range tests {
		if got := Within(tt.abs, tt.root); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.abs, tt.root, got, tt.want)
		}
	}
}

func TestResolveRoots(t *testing.T) {
	ws, _ := symlinkFixture(t)
	if _, err := ResolveRoots("rel", "/home"); err == nil || err.Error() != `workspace "rel" is not an absolute path` {
		t.Errorf("ResolveRoots(relative workspace) error = %v", err)
	}
	if _, err := ResolveRoots(ws, ""); err == nil || err.Error() != `home directory "" is not an absolute path` {
		t.Errorf("ResolveRoots(empty home) error = %v", err)
	}
	if _, err := ResolveRoots(ws+"/src/loop1", "/home"); err == nil || !strings.HasPrefix(err.Error(), "resolving workspace: ") {
		t.Errorf("ResolveRoots(looping workspace) error = %v", err)
	}
	roots, err := ResolveRoots(ws+"/src/inside", ws+"/src/dirlink/..")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Roots{Workspace: ws + "/src/ok", Home: filepath.Dir(ws)}); roots != want {
		t.Errorf("ResolveRoots = %+v, want %+v", roots, want)
	}
}

// TestResolveLinkLimit follows a chain of exactly 40 symlinks, as Linux
// does, and refuses 41.
func TestResolveLinkLimit(t *testing.T) {
	dir := t.TempDir()
	for i := 1; i <= maxLinks+1; i++ {
		target := fmt.Sprintf("l%d", i-1)
		if i == 1 {
			target = "end"
		}
		if err := os.Symlink(target, filepath.Join(dir, fmt.Sprintf("l%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Resolve(dir, fmt.Sprintf("l%d", maxLinks)); err != nil {
		t.Errorf("Resolve through %d symlinks: %v", maxLinks, err)
	}
	if _, err := Resolve(dir, fmt.Sprintf("l%d", maxLinks+1)); err == nil {
		t.Errorf("Resolve through %d symlinks succeeded", maxLinks+1)
	}
}

func TestResolveFromMatchesResolve(t *testing.T) {
	dir := t.TempDir()
	dir, _ = Resolve("/", dir)
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "l"))
	os.Symlink("/etc", filepath.Join(dir, "a", "out"))
	for _, p := range []string{"a", "a/b/../b", "l/b", "l/../x", "a/out/passwd", "../x", "new/file", "/etc/hosts", "l/out/../hosts"} {
		want, werr := Resolve(dir, p)
		got, gerr := ResolveFrom(dir, p)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Errorf("%q: ResolveFrom = %q, %v; Resolve = %q, %v", p, got, gerr, want, werr)
		}
	}
	if _, err := ResolveFrom("rel", "x"); err == nil {
		t.Error("relative dir accepted")
	}
	if _, err := ResolveFrom(dir, "~/x"); err == nil {
		t.Error("~ accepted")
	}
}

// TestResolveDir checks that ResolveDir answers exactly as Resolve("/", p)
// on every shape of path, whether or not its one-call fast path applies.
func TestResolveDir(t *testing.T) {
	ws, _ := symlinkFixture(t)
	src := ws + "/src"
	for _, p := range []string{
		"/", "/..", "//", ws, ws + "/", ws + "/./src//ok/", src + "/ok/..", src + "/ok/../../src",
		src + "/dirlink", src + "/dirlink/..", src + "/rellink", src + "/inside", src + "/chain1",
		src + "/filelink", src + "/filelink/..", src + "/dangling", src + "/loop1", src + "/loop1/x",
		src + "/missing", src + "/missing/../ok", ws + "/../ws/src", ws + "/src/ok/" + strings.Repeat("n", 300),
		"", "rel", "rel/../x", "~", "/a\x00b", "/\xff", "/" + strings.Repeat("a", maxPathLen),
	} {
		want, wantErr := Resolve("/", p)
		got, err := ResolveDir(p)
		if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("ResolveDir(%q) = %q, %v; Resolve gives %q, %v", p, got, err, want, wantErr)
		}
	}
}

// FuzzResolveDir checks ResolveDir against Resolve on paths in and around a
// workspace full of symlinks.
func FuzzResolveDir(f *testing.F) {
	ws, _ := symlinkFixture(f)
	for _, s := range []string{"", ".", "src", "src/ok", "src/ok/..", "src/dirlink", "src/rellink/..", "src/filelink", "src/loop1", "../ws/src", "src/missing/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		p := ws + "/" + rel
		want, wantErr := Resolve("/", p)
		got, err := ResolveDir(p)
		if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("ResolveDir(%q) = %q, %v; Resolve gives %q, %v", p, got, err, want, wantErr)
		}
	})
}
