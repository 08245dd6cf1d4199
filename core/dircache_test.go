package core

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func writeFile(t *testing.T, root, rel, content string, age time.Duration) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if age > 0 {
		old := time.Now().Add(-age)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

func mustRead(t *testing.T, c *DirCache) Files {
	t.Helper()
	f, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// checkSameAsReadDir: a cached read is what ReadDir reads, and its tree
// state, summed through the cache, is the one Tree computes.
func checkSameAsReadDir(t *testing.T, c *DirCache, root string, got Files) {
	t.Helper()
	want, err := ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d files, ReadDir %d", len(got), len(want))
	}
	for p, b := range want {
		if string(got[p]) != string(b) {
			t.Errorf("%s: %q, ReadDir %q", p, got[p], b)
		}
	}
	a, err := got.TreeWith(c.Sum)
	if err != nil {
		t.Fatal(err)
	}
	b, err := want.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() != b.ID() {
		t.Errorf("tree through the cache %s, Tree %s", a.ID(), b.ID())
	}
}

func TestDirCache(t *testing.T) {
	root := t.TempDir()
	hour := time.Hour
	writeFile(t, root, "a.go", "package a\n", hour)
	writeFile(t, root, "dir/b.txt", "bee", hour)
	writeFile(t, root, ".git/HEAD", "ref: x", hour)
	writeFile(t, root, "empty", "", hour)
	if runtime.GOOS != "windows" {
		if err := os.Symlink("a.go", filepath.Join(root, "link.go")); err != nil {
			t.Fatal(err)
		}
	}
	c := NewDirCache(root)
	first := mustRead(t, c)
	checkSameAsReadDir(t, c, root, first)

	// Unchanged files are neither read nor hashed again.
	second := mustRead(t, c)
	checkSameAsReadDir(t, c, root, second)
	if !sameBytes(first["a.go"], second["a.go"]) {
		t.Error("an unchanged old file was read again")
	}

	// A change of size, a new file and a deleted one.
	writeFile(t, root, "a.go", "package a // changed\n", hour)
	writeFile(t, root, "dir/c.txt", "sea", hour)
	os.Remove(filepath.Join(root, "dir", "b.txt"))
	third := mustRead(t, c)
	checkSameAsReadDir(t, c, root, third)
	if _, ok := third["dir/b.txt"]; ok {
		t.Error("a deleted file is still read")
	}

	// Same size, same modification time, other bytes: on Linux the change
	// time tells; elsewhere only the racy window can.
	if runtime.GOOS == "linux" {
		writeFile(t, root, "a.go", "package b // changed\n", 0)
		old := time.Now().Add(-hour)
		os.Chtimes(filepath.Join(root, "a.go"), old, old)
		checkSameAsReadDir(t, c, root, mustRead(t, c))
	}

	// A file written just now may change again within its timestamp: it
	// is read again on every read until it is old enough.
	writeFile(t, root, "fresh", "v1", 0)
	r1 := mustRead(t, c)
	r2 := mustRead(t, c)
	if sameBytes(r1["fresh"], r2["fresh"]) {
		t.Error("a file modified within the racy window was trusted")
	}
	checkSameAsReadDir(t, c, root, r2)

	// A content that is not the cache's (an editor buffer laid over the
	// files) is hashed, not looked up.
	over := r2.Clone()
	over["dir/c.txt"] = []byte("buffer")
	a, err := over.TreeWith(c.Sum)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := over.Tree()
	if a.ID() != b.ID() {
		t.Error("an overlaid content got the cached file's sum")
	}
}

func TestDirCacheMissingRoot(t *testing.T) {
	c := NewDirCache(filepath.Join(t.TempDir(), "nope"))
	if _, err := c.Read(); err == nil {
		t.Error("reading a missing root succeeded")
	}
}

// BenchmarkDirCache reads a tree of 2,000 files again with nothing changed,
// beside ReadDir and a full Tree, in one run: x-readdir is the cached read
// and tree over ReadDir's and Tree's.
func BenchmarkDirCache(b *testing.B) {
	b.StopTimer()
	root := b.TempDir()
	content := make([]byte, 8<<10)
	for i := range 2000 {
		p := filepath.Join(root, "d"+string(rune('a'+i%20)), "f"+time.Duration(i).String())
		os.MkdirAll(filepath.Dir(p), 0o755)
		content[0] = byte(i)
		os.WriteFile(p, content, 0o644)
		old := time.Now().Add(-time.Hour)
		os.Chtimes(p, old, old)
	}
	c := NewDirCache(root)
	if _, err := c.Read(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for range b.N {
		f, _ := ReadDir(root)
		f.Tree()
	}
	base := time.Since(start)
	b.ResetTimer()
	b.StartTimer()
	for range b.N {
		f, err := c.Read()
		if err != nil {
			b.Fatal(err)
		}
		f.TreeWith(c.Sum)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(base), "x-readdir")
}
