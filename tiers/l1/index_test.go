package l1

import (
	"reflect"
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
)

// The name index finds the same declarations as scanning every file that
// holds the name, follows each snapshot (a changed, added or removed
// file), and keeps a file that does not parse a candidate, so that a
// look-up fails on it as the scan does.
func TestNameIndexFollowsSnapshots(t *testing.T) {
	root := t.TempDir()
	files := core.Files{
		"go.mod":        []byte("module example.com/m\n"),
		"a/a.go":        []byte("package a\n\n// Store keeps.\ntype Store struct{ n int }\n\nfunc (s *Store) Put(v int) { total := v; s.n = total }\n"),
		"b/b.go":        []byte("package b\n\nfunc Put() {}\n\nvar Store = 1\n"),
		"b/b_test.go":   []byte("package b\n\nfunc helperPut() { Put() }\n"),
		"vendor/x/x.go": []byte("package x\n\nfunc Put() {}\n"),
	}
	same := func(files core.Files, name string, qual ...string) []decl {
		t.Helper()
		got, err := declsNamed(root, files, name, qual)
		if err != nil {
			t.Fatal(err)
		}
		all, err := declsNamedScan(files, name)
		if err != nil {
			t.Fatal(err)
		}
		var want []decl
		for _, d := range all {
			if qualified(d, qual) {
				want = append(want, d)
			}
		}
		var kept []decl
		for _, d := range got {
			if qualified(d, qual) {
				kept = append(kept, d)
			}
		}
		if !reflect.DeepEqual(kept, want) {
			t.Fatalf("%s %v: index %+v, scan %+v", name, qual, kept, want)
		}
		return kept
	}
	for _, c := range []struct {
		name string
		qual []string
		n    int
	}{
		{"Put", nil, 2}, {"Put", []string{"Store"}, 1}, {"Put", []string{"b"}, 1}, {"Put", []string{"a", "Store"}, 1},
		{"Store", nil, 2}, {"total", nil, 1}, {"Missing", nil, 0},
	} {
		if got := same(files, c.name, c.qual...); len(got) != c.n {
			t.Errorf("%s %v: %d declarations, want %d", c.name, c.qual, len(got), c.n)
		}
	}
	// a changed file, an added one, a removed one
	next := files.Clone()
	next["a/a.go"] = []byte("package a\n\ntype Shelf struct{}\n")
	next["c/c.go"] = []byte("package c\n\nfunc Put() {}\n")
	delete(next, "b/b.go")
	if got := same(next, "Put"); len(got) != 1 || got[0].file != "c/c.go" {
		t.Errorf("after the change: %+v", got)
	}
	if got := same(next, "Shelf"); len(got) != 1 {
		t.Errorf("Shelf: %+v", got)
	}
	// a file that does not parse, holding the name: the look-up fails
	next["d/d.go"] = []byte("package d\n\nfunc Put( {\n")
	if _, err := declsNamed(root, next, "Put", nil); err == nil || !strings.Contains(err.Error(), "d/d.go does not parse") {
		t.Errorf("a broken file holding the name: %v", err)
	}
	if _, err := declsNamed(root, next, "Shelf", nil); err != nil {
		t.Errorf("a broken file not holding the name: %v", err)
	}
}
