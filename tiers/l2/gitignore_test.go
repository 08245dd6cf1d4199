package l2

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

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
