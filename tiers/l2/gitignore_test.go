package l2

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func TestGitignorePatterns(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		path    string
		dir     bool
		ignored bool
		decided bool
	}{
		{"*.log", "a.log", false, true, true},
		{"*.log", "deep/dir/a.log", false, true, true},
		{"*.log", "a.log.txt", false, false, false},
		{"build/", "build", true, true, true},
		{"build/", "build", false, false, false}, // a file named build
		{"build/", "src/build", true, true, true},
		{"/build", "build", true, true, true},
		{"/build", "src/build", true, false, false},
		{"doc/*.txt", "doc/a.txt", false, true, true},
		{"doc/*.txt", "doc/sub/a.txt", false, false, false},
		{"doc/*.txt", "x/doc/a.txt", false, false, false}, // a middle slash anchors
		{"**/foo", "foo", false, true, true},
		{"**/foo", "a/b/foo", false, true, true},
		{"**/foo/bar", "a/foo/bar", false, true, true},
		{"abc/**", "abc/x/y", false, true, true},
		{"abc/**", "abc", true, false, false},
		{"a/**/b", "a/b", false, true, true},
		{"a/**/b", "a/x/y/b", false, true, true},
		{"a/**/b", "a/xb", false, false, false},
		{"fo?", "foo", false, true, true},
		{"fo?", "fo/o", false, false, false},
		{"[abc].go", "b.go", false, true, true},
		{"[!abc].go", "d.go", false, true, true},
		{"[!abc].go", "a.go", false, false, false},
		{"[a-c]x", "bx", false, true, true},
		{`\#hash`, "#hash", false, true, true},
		{`\!bang`, "!bang", false, true, true},
		{"# comment", "# comment", false, false, false},
		{"trailing   ", "trailing", false, true, true},
		{`space\ `, "space ", false, true, true},
		{"[unclosed", "[unclosed", false, true, true},
		{"a**b", "axxb", false, true, true},
		{"a**b", "ax/xb", false, false, false},
	} {
		f := parseGitignore("", []byte(tt.pattern))
		ig, dec := f.match(tt.path, tt.dir)
		if ig != tt.ignored || dec != tt.decided {
			t.Errorf("pattern %q on %q (dir=%v): ignored=%v decided=%v, want %v %v", tt.pattern, tt.path, tt.dir, ig, dec, tt.ignored, tt.decided)
		}
	}
}

func TestGitignoreNegationAndOrder(t *testing.T) {
	f := parseGitignore("", []byte("*.log\n!keep.log\n"))
	if ig, _ := f.match("x.log", false); !ig {
		t.Error("x.log should be ignored")
	}
	if ig, dec := f.match("keep.log", false); ig || !dec {
		t.Error("keep.log should be re-included by the later negation")
	}
	f = parseGitignore("", []byte("!keep.log\n*.log\n"))
	if ig, _ := f.match("keep.log", false); !ig {
		t.Error("a later pattern wins: keep.log should be ignored")
	}
}

func TestGitignoreNestedFiles(t *testing.T) {
	root := t.TempDir()
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "*.log\nbuild/\n/top-only.txt\n")
	write(".git/info/exclude", "secret.env\n")
	write(".git/config", "[core]\n")
	write("a.go", "package a\n")
	write("a.log", "log\n")
	write("top-only.txt", "x\n")
	write("secret.env", "K=V\n")
	write("build/out.go", "package out\n")
	write("sub/top-only.txt", "kept: the pattern is anchored to the root\n")
	write("sub/.gitignore", "!keep.log\n*.tmp\n/local/\n")
	write("sub/keep.log", "kept by the nested negation\n")
	write("sub/drop.log", "ignored by the root file\n")
	write("sub/x.tmp", "ignored by the nested file\n")
	write("sub/local/y.go", "package y\n")
	write("other/local/z.go", "package z\n")
	write("other/x.tmp", "kept: the nested pattern applies under sub/ only\n")
	write("bin/blob.bin", "\x00\x01\x02")

	ix := openTest(t, root)
	if _, err := ix.Update(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got := indexedPaths(t, ix)
	want := []string{".gitignore", "a.go", "other/local/z.go", "other/x.tmp", "sub/.gitignore", "sub/keep.log", "sub/top-only.txt"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("indexed %q,\nwant    %q", got, want)
	}
}

func indexedPaths(t *testing.T, ix *Index) []string {
	t.Helper()
	rows, err := ix.db.Query(`SELECT path FROM files`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func openTest(t *testing.T, root string, opts ...Option) *Index {
	t.Helper()
	ix, err := Open(filepath.Join(t.TempDir(), "index.db"), root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func FuzzGitignore(f *testing.F) {
	for _, s := range []string{"*.log", "a/**/b", "[!a-c]x", `\!x`, "[", "**", "/"} {
		f.Add(s, "a/b/c.log")
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		gi := parseGitignore("", []byte(pattern))
		gi.match(path, false)
		gi.match(path, true)
	})
}
