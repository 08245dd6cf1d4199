package l1

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

func TestParse(t *testing.T) {
	diff := "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n"
	tests := []struct {
		in   string
		want Command
		err  bool
	}{
		{"rename Foo to Bar", Rename{"Foo", "Bar"}, false},
		{"Rename `pkg.Foo` to `Bar`.", Rename{"pkg.Foo", "Bar"}, false},
		{"/rename a.go:3:6 Bar", Rename{"a.go:3:6", "Bar"}, false},
		{"/rename Foo", nil, true},
		{"format the repo", Format{}, false},
		{"format ./cmd/**", Format{Glob: "./cmd/**"}, false},
		{"/format *.go", Format{Glob: "*.go"}, false},
		{`replace "foo" with "bar" in *.md`, Replace{Old: "foo", New: "bar", Glob: "*.md"}, false},
		{`replace foo with bar`, nil, false}, // unquoted: not certain
		{`/replace /f(o+)/ b$1 *.txt`, Replace{Old: "f(o+)", New: "b$1", Glob: "*.txt", Regex: true}, false},
		{`/replace "a b" 'c d'`, Replace{Old: "a b", New: "c d"}, false},
		{`/replace "a b`, nil, true},
		{"find TODO", Find{"TODO"}, false},
		{"/find two words", Find{"two words"}, false},
		{diff, Patch{diff}, false},
		{"apply this patch:\n```diff\n" + diff + "```", Patch{diff}, false},
		{"/diff\n" + diff, Patch{diff}, false},
		{"/diff", nil, true},
		{"make the tests pass", nil, false},
		{"please rename Foo to Bar and add docs", nil, false},
		{"/unknown thing", nil, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("Parse(%q) error %v, want error %v", tt.in, err, tt.err)
		}
		if err != nil && !errors.Is(err, ErrUsage) {
			t.Errorf("Parse(%q) error %v is not ErrUsage", tt.in, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"rename a to b", "/replace /x/ y", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "/find \"x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if p, ok := c.(Patch); ok && err == nil {
			_, _, _ = applyPatch(core.Files{"f": []byte("a\n")}, p.Diff)
		}
	})
}

func FuzzPatch(f *testing.F) {
	f.Add("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "a\nb\n")
	f.Add("--- /dev/null\n+++ b/g\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n", "")
	f.Fuzz(func(t *testing.T, diff, content string) {
		_, _, _ = applyPatch(core.Files{"f": []byte(content)}, diff)
	})
}

func TestPatch(t *testing.T) {
	base := core.Files{"f.txt": []byte("one\ntwo\nthree\n"), "n.txt": []byte("x")}
	tests := []struct {
		name, diff string
		want       map[string]string
		err        string
	}{
		{"modify", "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n", map[string]string{"f.txt": "one\nTWO\nthree\n"}, ""},
		{"insert at top", "--- a/f.txt\n+++ b/f.txt\n@@ -0,0 +1 @@\n+zero\n", map[string]string{"f.txt": "zero\none\ntwo\nthree\n"}, ""},
		{"append", "--- a/f.txt\n+++ b/f.txt\n@@ -3 +3,2 @@\n three\n+four\n", map[string]string{"f.txt": "one\ntwo\nthree\nfour\n"}, ""},
		{"create", "--- /dev/null\n+++ b/new/g.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n", map[string]string{"new/g.txt": "a\nb\n"}, ""},
		{"no newline", "--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n", map[string]string{"n.txt": "y\n"}, ""},
		{"stale context", "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-TWO\n+2\n", nil, "does not apply"},
		{"missing file", "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n", nil, "no such file"},
		{"delete", "--- a/f.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-one\n-two\n-three\n", nil, "cannot delete"},
		{"truncated", "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n", nil, "truncated"},
		{"escape", "--- a/../x\n+++ b/../x\n@@ -0,0 +1 @@\n+a\n", nil, "path"},
		{"second file fails", "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-one\n+1\n--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-zzz\n+y\n", nil, "does not apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := applyPatch(base, tt.diff)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range tt.want {
				if string(got[p]) != w {
					t.Errorf("%s = %q, want %q", p, got[p], w)
				}
			}
			if string(base["f.txt"]) != "one\ntwo\nthree\n" {
				t.Fatal("the prior snapshot was modified")
			}
		})
	}
}

func TestReplaceAndFormat(t *testing.T) {
	files := core.Files{
		"a.go":          []byte("package a\nfunc  F( ) {}\n"),
		"d/b.txt":       []byte("foo fooo\n"),
		"d/c.md":        []byte("foo\n"),
		"bin":           []byte("foo\x00"),
		"testdata/x.go": []byte("package x\nfunc  G() {}\n"),
	}
	next, _, err := replace(files, Replace{Old: "foo", New: "bar", Glob: "*.txt"})
	if err != nil || string(next["d/b.txt"]) != "bar baro\n" || string(next["d/c.md"]) != "foo\n" {
		t.Fatalf("literal replace: %q %v", next["d/b.txt"], err)
	}
	next, _, err = replace(files, Replace{Old: `fo(o+)`, New: "x$1", Regex: true})
	if err != nil || string(next["d/b.txt"]) != "xo xoo\n" || string(next["bin"]) != "foo\x00" {
		t.Fatalf("regex replace: %q %q %v", next["d/b.txt"], next["bin"], err)
	}
	if _, _, err := replace(files, Replace{Old: "nothing"}); err == nil {
		t.Fatal("a replace without a match closed")
	}
	if _, _, err := replace(files, Replace{Old: "(", Regex: true}); err == nil {
		t.Fatal("a bad regexp was accepted")
	}
	next, _, err = gofmt(files, Format{})
	if err != nil || string(next["a.go"]) != "package a\n\nfunc F() {}\n" || string(next["testdata/x.go"]) != "package x\nfunc  G() {}\n" {
		t.Fatalf("gofmt: %q %q %v", next["a.go"], next["testdata/x.go"], err)
	}
}

func mkfile(full, s string) error {
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, []byte(s), 0o644)
}

// module writes a two-package module and returns its root.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var twoPackages = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.22\n",
	"lib/lib.go": `package lib

// Counter counts.
type Counter struct{ n int }

// Add adds one.
func (c *Counter) Add() { c.n++ }

func New() *Counter { return &Counter{} }

type Wrap struct {
	Counter
}

func helper(n int) int {
	total := n
	return total + n
}
`,
	"lib/lib_test.go": `package lib

import "testing"

func TestNew(t *testing.T) {
	if New().n != 0 || helper(1) != 2 {
		t.Fatal()
	}
}
`,
	"main.go": `package main

import "example.com/m/lib"

func main() {
	c := lib.New()
	c.Add()
	w := lib.Wrap{}
	w.Counter.Add()
	_ = w
}
`,
}

func TestRename(t *testing.T) {
	tests := []struct {
		name   string
		cmd    Rename
		want   map[string][]string // file → substrings that must appear
		absent map[string][]string
		err    string
	}{
		{"exported type across packages and embedded field", Rename{"Counter", "Tally"},
			// As gopls does, the declaration's doc comment follows the name.
			map[string][]string{"lib/lib.go": {"type Tally struct", "func (c *Tally) Add()", "return &Tally{}", "\tTally\n", "// Tally counts."}, "main.go": {"w.Tally.Add()"}},
			map[string][]string{"lib/lib.go": {"Counter"}, "main.go": {"Counter"}}, ""},
		{"method by Type.Member", Rename{"Counter.Add", "Inc"},
			map[string][]string{"lib/lib.go": {"func (c *Counter) Inc()"}, "main.go": {"c.Inc()", "w.Counter.Inc()"}}, nil, ""},
		{"unexported field used by a test", Rename{"Counter.n", "count"},
			map[string][]string{"lib/lib.go": {"struct{ count int }", "c.count++"}, "lib/lib_test.go": {"New().count"}}, nil, ""},
		{"local by position", Rename{"lib/lib.go:16:2", "sum"},
			map[string][]string{"lib/lib.go": {"sum := n", "return sum + n"}}, nil, ""},
		{"function used in a test", Rename{"lib.helper", "twice"},
			map[string][]string{"lib/lib.go": {"func twice(n int)"}, "lib/lib_test.go": {"twice(1)"}}, nil, ""},
		{"invalid name", Rename{"Counter", "1x"}, nil, nil, "not a valid Go identifier"},
		{"keyword", Rename{"Counter", "func"}, nil, nil, "not a valid Go identifier"},
		{"conflict at package scope", Rename{"Counter", "Wrap"}, nil, nil, "already declared"},
		{"conflict with a local", Rename{"lib/lib.go:16:2", "n"}, nil, nil, "already declared"},
		{"member conflict", Rename{"Counter.Add", "n"}, nil, nil, "already has a member"},
		{"unexporting a used name", Rename{"New", "newCounter"}, nil, nil, "other packages"},
		{"unknown", Rename{"Nope", "X"}, nil, nil, "no declaration"},
		{"import name", Rename{"main.go:3:8", "x"}, nil, nil, "no identifier"},
	}
	root := module(t, twoPackages)
	files, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, _, err := rename(context.Background(), root, files, tt.cmd)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for f, subs := range tt.want {
				for _, s := range subs {
					if !strings.Contains(string(next[f]), s) {
						t.Errorf("%s lacks %q:\n%s", f, s, next[f])
					}
				}
			}
			for f, subs := range tt.absent {
				for _, s := range subs {
					if strings.Contains(string(next[f]), s) {
						t.Errorf("%s still holds %q:\n%s", f, s, next[f])
					}
				}
			}
		})
	}
}

func TestStage(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	root := module(t, twoPackages)
	s := &Stage{Key: key}
	ctx := context.Background()
	res, err := s.TryResolve(ctx, &tiers.Request{Session: "s", Prompt: "rename Counter to Tally", Root: root})
	if err != nil || res == nil || res.Op == nil {
		t.Fatalf("rename did not close: %v %v", res, err)
	}
	if _, err := res.Op.Verify(); err != nil {
		t.Fatal(err)
	}
	files, _ := core.ReadDir(root)
	next, err := core.Apply(files, &res.Op.Op)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(next["main.go"]), "w.Tally.Add()") || res.Op.Op.Tier != core.L1 || res.Op.Op.Intent != "rename Counter to Tally" {
		t.Fatalf("bad op: %+v", res.Op.Op)
	}
	if res, err := s.TryResolve(ctx, &tiers.Request{Prompt: "write me a web server", Root: root}); res != nil || err != nil {
		t.Fatalf("an unrecognised request closed: %v %v", res, err)
	}
	res, err = s.TryResolve(ctx, &tiers.Request{Prompt: "find helper", Root: root})
	if err != nil || res.Op != nil || !strings.Contains(res.Answer, "lib/lib.go:15:") {
		t.Fatalf("find: %+v %v", res, err)
	}
	res, err = s.TryResolve(ctx, &tiers.Request{Prompt: "format the repo", Root: root})
	if err != nil || res.Op != nil || !strings.Contains(res.Answer, "nothing to change") {
		t.Fatalf("format of a formatted repo: %+v %v", res, err)
	}
}
