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
		{"rename Foo to Bar", rn("Foo", "Bar"), false},
		{"Rename `pkg.Foo` to `Bar`.", rn("pkg.Foo", "Bar"), false},
		{"/rename a.go:3:6 Bar", rn("a.go:3:6", "Bar"), false},
		{"/rename Foo", nil, true},
		{"rename package lib to util", rn("package lib", "util"), false},
		{"Rename the package `example.com/m/lib` to util.", rn("package example.com/m/lib", "util"), false},
		{"/rename package lib util", rn("package lib", "util"), false},
		{"/rename package lib", nil, true},
		{"format the repo", Format{}, false},
		{"format ./cmd/**", Format{Glob: "cmd/**"}, false},
		{"/format *.go", Format{Glob: "*.go"}, false},
		{"/format --imports", Format{Imports: true}, false},
		{"/format --imports cmd/**", Format{Glob: "cmd/**", Imports: true}, false},
		{"/format --bogus", nil, true},
		{"/format a b", nil, true},
		{"gofmt the repo", Format{GoOnly: true}, false},
		{"goimports cmd/**", Format{Glob: "cmd/**", Imports: true, GoOnly: true}, false},
		{"organize imports", Format{Imports: true, GoOnly: true}, false},
		{"Organise the imports in lib/**.", Format{Glob: "lib/**", Imports: true, GoOnly: true}, false},
		{"fix imports in the repo", Format{Imports: true, GoOnly: true}, false},
		{"organize my imports please", Format{Imports: true, GoOnly: true}, false},
		{`replace "foo" with "bar" in *.md`, Replace{Old: "foo", New: "bar", Glob: "*.md"}, false},
		{`replace foo with bar`, nil, true}, // unquoted: not certain
		{`/replace /f(o+)/ b$1 *.txt`, Replace{Old: "f(o+)", New: "b$1", Glob: "*.txt", Regex: true}, false},
		{`/replace "a b" 'c d'`, Replace{Old: "a b", New: "c d"}, false},
		{`/replace "a b`, nil, true},
		{"find TODO", Lookup{Target: Symbol{Name: "TODO"}, Want: Uses, OrText: true}, false},
		{"find Store.Get", Lookup{Target: Symbol{Name: "Store.Get"}, Want: Uses}, false},
		{"/find Store.Get", Lookup{Target: Symbol{Name: "Store.Get"}, Want: Uses}, false},
		{"/find two words", Find{"two words"}, false},
		{diff, Patch{diff}, false},
		{"apply this patch:\n```diff\n" + diff + "```", Patch{diff}, false},
		{"/diff\n" + diff, Patch{diff}, false},
		{"/diff", nil, true},
		{"make the tests pass", nil, false},
		{"please rename Foo to Bar and add docs", nil, true},
		{"/unknown thing", nil, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("Parse(%q) error %v, want error %v", tt.in, err, tt.err)
		}
		var d *Declined
		if err != nil && !errors.Is(err, ErrUsage) && !errors.As(err, &d) {
			t.Errorf("Parse(%q) error %v is neither ErrUsage nor *Declined", tt.in, err)
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
	next, _, err = formatFiles(context.Background(), t.TempDir(), files, Format{GoOnly: true})
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
		{"exported type across packages and embedded field", rn("Counter", "Tally"),
			// As gopls does, the declaration's doc comment follows the name.
			map[string][]string{"lib/lib.go": {"type Tally struct", "func (c *Tally) Add()", "return &Tally{}", "\tTally\n", "// Tally counts."}, "main.go": {"w.Tally.Add()"}},
			map[string][]string{"lib/lib.go": {"Counter"}, "main.go": {"Counter"}}, ""},
		{"method by Type.Member", rn("Counter.Add", "Inc"),
			map[string][]string{"lib/lib.go": {"func (c *Counter) Inc()"}, "main.go": {"c.Inc()", "w.Counter.Inc()"}}, nil, ""},
		{"unexported field used by a test", rn("Counter.n", "count"),
			map[string][]string{"lib/lib.go": {"struct{ count int }", "c.count++"}, "lib/lib_test.go": {"New().count"}}, nil, ""},
		{"local by position", rn("lib/lib.go:16:2", "sum"),
			map[string][]string{"lib/lib.go": {"sum := n", "return sum + n"}}, nil, ""},
		{"function used in a test", rn("lib.helper", "twice"),
			map[string][]string{"lib/lib.go": {"func twice(n int)"}, "lib/lib_test.go": {"twice(1)"}}, nil, ""},
		{"invalid name", rn("Counter", "1x"), nil, nil, "not a valid Go identifier"},
		{"keyword", rn("Counter", "func"), nil, nil, "not a valid Go identifier"},
		{"conflict at package scope", rn("Counter", "Wrap"), nil, nil, "already declared"},
		{"conflict with a local", rn("lib/lib.go:16:2", "n"), nil, nil, "already declared"},
		{"member conflict", rn("Counter.Add", "n"), nil, nil, "already has a member"},
		{"unexporting a used name", rn("New", "newCounter"), nil, nil, "other packages"},
		{"unknown", rn("Nope", "X"), nil, nil, "no declaration"},
		{"import path", rn("main.go:3:8", "x"), nil, nil, "no identifier"},
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

var importNames = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.22\n",
	"lib/lib.go": `package lib

func New() int { return 1 }
`,
	"main.go": `package main

import (
	"fmt"

	l "example.com/m/lib"
)

func main() {
	fmt.Println(l.New())
	show()
}

func show() {
	x := 2
	fmt.Println(x + l.New())
}
`,
	"other.go": `package main

import l "example.com/m/lib"

var y = l.New()
`,
}

// TestRenameImportName: an import's explicit name is renamed in its file
// only, by name when one file gives it or by position; the package's own
// name, a name taken in the package and one a local would capture are
// refused.
func TestRenameImportName(t *testing.T) {
	root := module(t, importNames)
	files, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := rename(context.Background(), root, files, rn("main.go:6:2", "lib"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`lib "example.com/m/lib"`, "fmt.Println(lib.New())", "fmt.Println(x + lib.New())"} {
		if !strings.Contains(string(next["main.go"]), s) {
			t.Errorf("main.go lacks %q:\n%s", s, next["main.go"])
		}
	}
	if string(next["other.go"]) != string(files["other.go"]) {
		t.Errorf("other.go, which names its own import, changed:\n%s", next["other.go"])
	}
	for _, tt := range []struct {
		cmd Rename
		err string
	}{
		{rn("l", "lb"), "ambiguous"},                      // main.go and other.go each declare one
		{rn("main.go:10:14", "show"), "already declared"}, // a function of the package
		{rn("main.go:10:14", "y"), "already declared"},    // a variable of the package, in other.go
		{rn("main.go:6:2", "x"), "shadowed"},              // captured by show's x
		{rn("main.go:10:2", "f"), "name package fmt declares"},
	} {
		_, _, err := rename(context.Background(), root, files, tt.cmd)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%+v: error %v, want %q", tt.cmd, err, tt.err)
		}
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

// TestRenameOverlay: a snapshot whose Go file differs from the disk (an
// editor's unsaved buffer) is type-checked as the snapshot says, so a
// reference that exists only in the buffer is renamed too, and a buffer
// that no longer type-checks is refused.
func TestRenameOverlay(t *testing.T) {
	root := module(t, twoPackages)
	files, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	buf := files.Clone()
	buf["main.go"] = []byte(strings.Replace(string(files["main.go"]), "\t_ = w\n", "\t_ = w\n\tvar extra *lib.Counter\n\t_ = extra\n", 1))
	next, _, err := rename(context.Background(), root, buf, rn("Counter", "Tally"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(next["main.go"]), "var extra *lib.Tally") || strings.Contains(string(next["main.go"]), "Counter") {
		t.Fatalf("the buffer-only reference was not renamed:\n%s", next["main.go"])
	}
	if disk, _ := os.ReadFile(filepath.Join(root, "main.go")); string(disk) != string(files["main.go"]) {
		t.Fatal("the disk was written")
	}
	broken := files.Clone()
	broken["main.go"] = append(broken["main.go"], []byte("func broken() { undefined() }\n")...)
	if _, _, err := rename(context.Background(), root, broken, rn("Counter", "Tally")); err == nil || !strings.Contains(err.Error(), "does not type-check") {
		t.Fatalf("a broken buffer: %v", err)
	}
}

// TestRenamePackage: the package clause of every file (in-package and
// external tests too), the qualified uses in importers without an explicit
// import name, an explicit name where the new one is taken; and refusals.
func TestRenamePackage(t *testing.T) {
	mod := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.22\n",
		"lib/lib.go":        "// Package lib is a library.\npackage lib\n\nfunc F() int { return 1 }\n",
		"lib/lib_test.go":   "package lib\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
		"lib/x_test.go":     "package lib_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/lib\"\n)\n\nfunc TestX(t *testing.T) { lib.F() }\n",
		"lib/skip_plan9.go": "//go:build plan9\n\npackage lib\n",
		"main.go":           "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { _ = lib.F() + lib.F() }\n",
		"taken/taken.go":    "package taken\n\nimport \"example.com/m/lib\"\n\nvar util = lib.F()\n",
		"named/named.go":    "package named\n\nimport l \"example.com/m/lib\"\n\nvar X = l.F()\n",
		"shadow/shadow.go":  "package shadow\n\nimport \"example.com/m/lib\"\n\nfunc G() int {\n\tlen := 2\n\treturn lib.F() + len\n}\n",
		"uses/uses.go":      "package uses\n\nimport \"example.com/m/lib\"\n\nfunc H(s string) int {\n\tn := cap([]byte(s))\n\treturn lib.F() + n\n}\n",
	}
	root := module(t, mod)
	files, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	next, sum, err := rename(context.Background(), root, files, rn("package lib", "util"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"lib/lib.go":        "// Package lib is a library.\npackage util\n\nfunc F() int { return 1 }\n",
		"lib/lib_test.go":   "package util\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
		"lib/x_test.go":     "package util_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/lib\"\n)\n\nfunc TestX(t *testing.T) { util.F() }\n",
		"lib/skip_plan9.go": "//go:build plan9\n\npackage util\n",
		"main.go":           "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { _ = util.F() + util.F() }\n",
		"taken/taken.go":    "package taken\n\nimport util1 \"example.com/m/lib\"\n\nvar util = util1.F()\n",
		"named/named.go":    mod["named/named.go"],
		"shadow/shadow.go":  "package shadow\n\nimport \"example.com/m/lib\"\n\nfunc G() int {\n\tlen := 2\n\treturn util.F() + len\n}\n",
	}
	for p, w := range want {
		if string(next[p]) != w {
			t.Errorf("%s:\n got %q\nwant %q", p, next[p], w)
		}
	}
	if !strings.Contains(sum, "directory lib and import path example.com/m/lib unchanged") {
		t.Errorf("summary %q", sum)
	}
	// By position on a package clause, and by directory.
	if n2, _, err := rename(context.Background(), root, files, rn("lib/lib.go:2:9", "util")); err != nil || string(n2["main.go"]) != want["main.go"] {
		t.Errorf("by position: %v", err)
	}
	if n3, _, err := rename(context.Background(), root, files, rn("package ./lib", "util")); err != nil || string(n3["main.go"]) != want["main.go"] {
		t.Errorf("by directory: %v", err)
	}
	for _, tt := range []struct {
		target, to, err string
	}{
		{"package lib", "len", "would refer to the variable len"},
		{"package lib", "cap", "would hide the predeclared cap"},
		{"package lib", "n", "would refer to the variable n"},
		{"package lib", "a/b", "cannot move files"},
		{"package lib", "9x", "not a valid package name"},
		{"package lib", "main", "not a name for an importable package"},
		{"package lib", "lib", "already called lib"},
		{"package main", "app", "main package"},
		{"package nope", "x", "no package nope"},
		{"lib/x_test.go:1:9", "y", "external test package"},
	} {
		if _, _, err := rename(context.Background(), root, files, rn(tt.target, tt.to)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s → %s: %v, want %q", tt.target, tt.to, err, tt.err)
		}
	}
}

// TestRenameInterfaceMethod: renaming an interface method renames the
// concrete methods coupled to it by the code's assignments, and only those;
// a coupled concrete method is refused with the interface method to rename.
func TestRenameInterfaceMethod(t *testing.T) {
	root := module(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"shape/shape.go": `package shape

// Shape has an area.
type Shape interface {
	// Area is the surface.
	Area() float64
}

// Square is a shape.
type Square struct{ S float64 }

// Area of the square.
func (q Square) Area() float64 { return q.S * q.S }

// Lone has an Area method but is never used as a Shape.
type Lone struct{}

func (Lone) Area() float64 { return 0 }

// Total sums areas.
func Total(ss ...Shape) float64 {
	t := 0.0
	for _, s := range ss {
		t += s.Area()
	}
	return t
}
`,
		"main.go": `package main

import "example.com/m/shape"

type circle struct{ r float64 }

func (c *circle) Area() float64 { return 3 * c.r * c.r }

func main() { _ = shape.Total(shape.Square{S: 1}, &circle{2}) }
`,
	})
	files, _ := core.ReadDir(root)
	next, sum, err := rename(context.Background(), root, files, rn("Shape.Area", "Size"))
	if err != nil {
		t.Fatal(err)
	}
	for p, subs := range map[string][]string{
		"shape/shape.go": {"\t// Size is the surface.\n\tSize() float64", "func (q Square) Size()", "t += s.Size()", "func (Lone) Area()"},
		"main.go":        {"func (c *circle) Size()"},
	} {
		for _, s := range subs {
			if !strings.Contains(string(next[p]), s) {
				t.Errorf("%s lacks %q:\n%s", p, s, next[p])
			}
		}
	}
	t.Log(sum)
	for _, tt := range []struct{ target, to, err string }{
		{"Square.Area", "Size", "no longer assignable to example.com/m/shape.Shape (rename Shape.Area to change both)"},
		{"main.go:7:18", "Size", "no longer assignable"},
		{"Lone.Area", "Size", ""}, // not coupled: renamed alone
	} {
		_, _, err := rename(context.Background(), root, files, rn(tt.target, tt.to))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s → %s: %v, want %q", tt.target, tt.to, err, tt.err)
		}
	}
}

// rn is a rename as the slash command spells it: "package X", FILE:LINE:COL
// or a name.
func rn(target, to string) Rename {
	if p, ok := strings.CutPrefix(target, "package "); ok {
		return Rename{Target: Symbol{Name: p, Kind: KindPackage}, To: to}
	}
	if f, l, c, ok := fileLoc(target); ok && c > 0 {
		return Rename{Target: Symbol{File: f, Line: l, Col: c}, To: to}
	}
	return Rename{Target: Symbol{Name: target}, To: to}
}
