package l2

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCallersFromAnEnclosingModule: a root that is a directory inside a
// module (GOROOT/src/net/http inside std, a package of a larger module)
// has the import path its place there gives, so callers in the root's
// other packages are found.
func TestCallersFromAnEnclosingModule(t *testing.T) {
	for _, tt := range []struct{ mod, under, imp string }{
		{"module std\n", "net/web", "net/web"},
		{"module example.com/m\n", "lib/web", "example.com/m/lib/web"},
	} {
		top := t.TempDir()
		root := filepath.Join(top, filepath.FromSlash(tt.under))
		for p, s := range map[string]string{
			filepath.Join(top, "go.mod"):              tt.mod,
			filepath.Join(root, "web.go"):             "package web\n\nfunc Serve() {}\n\nfunc local() { Serve() }\n",
			filepath.Join(root, "webtest", "test.go"): "package webtest\n\nimport \"" + tt.imp + "\"\n\nfunc Run() { web.Serve() }\n",
		} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ix, err := Open(filepath.Join(t.TempDir(), "ix.db"), root)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Update(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		hits, err := ix.Callers(context.Background(), "Serve")
		ix.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.Path)
		}
		if len(got) != 2 || got[0] != "web.go" || got[1] != "webtest/test.go" {
			t.Errorf("%s: callers of Serve in %v, want web.go and webtest/test.go", tt.imp, got)
		}
	}
}

// TestSoleUnexportedMethod: an unexported method whose name nothing else
// in the index declares is answerable from its calls; an exported one, or
// one whose name another type's method shares, is not.
func TestSoleUnexportedMethod(t *testing.T) {
	root := t.TempDir()
	for p, s := range map[string]string{
		"a.go":     "package a\n\ntype S struct{}\n\nfunc (S) dial() {}\n\nfunc (S) Dial() {}\n\nfunc (S) close() {}\n\nfunc use(s S) { s.dial(); s.close() }\n",
		"b/b.go":   "package b\n\ntype T struct{}\n\nfunc (T) close() {}\n",
		"c/c.go":   "package c\n\nfunc send() {}\n",
		"c/d/d.go": "package d\n\ntype U struct{}\n\nfunc (U) send() {}\n",
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := Open(filepath.Join(t.TempDir(), "ix.db"), root)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Update(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"dial": true, "S.dial": true, "Dial": false, "close": false, "S.close": false, "U.send": false} {
		if got := ix.soleUnexportedMethod(context.Background(), name); got != want {
			t.Errorf("soleUnexportedMethod(%q) = %v, want %v", name, got, want)
		}
	}
}
