package l2

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const corpus = "testdata/corpus"

func writeFile(t *testing.T, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateIsIncremental walks a tree through edits and checks that each
// update touches exactly the files that changed, embedding only theirs.
func TestUpdateIsIncremental(t *testing.T) {
	root := t.TempDir()
	srv := newFakeEmbedServer(t)
	ix := openTest(t, root, WithEmbedder(NewOllamaEmbedder(srv.URL, "nomic-embed-text", nil)), WithWorkers(3))
	ctx := context.Background()
	writeFile(t, root, "a/a.go", "package a\n\n// Alpha is first.\nfunc Alpha() int { return 1 }\n")
	writeFile(t, root, "b/b.go", "package b\n\nimport \"example.com/m/a\"\n\nfunc Beta() int { return a.Alpha() }\n")
	writeFile(t, root, "c.py", "def gamma():\n    return 3\n")
	writeFile(t, root, "README.md", "# M\n\nA module.\n")
	writeFile(t, root, "go.mod", "module example.com/m\n")

	type counts struct{ added, changed, renamed, removed, unchanged, embedded int }
	step := func(name string, want counts) Stats {
		t.Helper()
		before := srv.texts.Load()
		st, err := ix.Update(ctx, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := counts{st.Added, st.Changed, st.Renamed, st.Removed, st.Unchanged, st.Embedded}
		if got != want {
			t.Fatalf("%s: got %+v, want %+v", name, got, want)
		}
		if n := int(srv.texts.Load() - before); n != st.Embedded {
			t.Fatalf("%s: the model embedded %d texts, stats say %d", name, n, st.Embedded)
		}
		return st
	}
	// go.mod and README.md are one chunk each; a.go two (header, Alpha);
	// b.go two; c.py one.
	st := step("initial", counts{added: 5, embedded: 7})
	if st.Files != 5 || st.Chunks != 7 {
		t.Fatalf("initial: %d files, %d chunks", st.Files, st.Chunks)
	}
	step("no change", counts{unchanged: 5})

	// Same content, new mtime: hashed, not re-chunked.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(root, "c.py"), future, future); err != nil {
		t.Fatal(err)
	}
	step("touch", counts{unchanged: 5})

	writeFile(t, root, "c.py", "def gamma():\n    return 4\n\n\ndef delta():\n    return 5\n")
	step("modify", counts{changed: 1, unchanged: 4, embedded: 2})
	if defs, _ := ix.Definitions(ctx, "delta"); len(defs) != 1 || defs[0].Path != "c.py" || defs[0].Line != 5 {
		t.Fatalf("delta after modify: %+v", defs)
	}

	writeFile(t, root, "d/d.go", "package d\n\nfunc Delta() {}\n")
	step("add", counts{added: 1, unchanged: 5, embedded: 2})

	if err := os.Rename(filepath.Join(root, "a", "a.go"), filepath.Join(root, "a", "alpha.go")); err != nil {
		t.Fatal(err)
	}
	step("rename", counts{renamed: 1, unchanged: 5})
	defs, err := ix.Definitions(ctx, "a.Alpha")
	if err != nil || len(defs) != 1 || defs[0].Path != "a/alpha.go" {
		t.Fatalf("Alpha after rename: %+v, %v", defs, err)
	}
	if hits, _ := ix.Search(ctx, "alpha", 3); len(hits) == 0 || hits[0].Path != "a/alpha.go" {
		t.Fatalf("search after rename: %+v", hits)
	}
	// Moved to another directory: the package's directory follows.
	if err := os.MkdirAll(filepath.Join(root, "z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "a", "alpha.go"), filepath.Join(root, "z", "alpha.go")); err != nil {
		t.Fatal(err)
	}
	step("move", counts{renamed: 1, unchanged: 5})
	var dir string
	ix.db.QueryRow(`SELECT dir FROM defs WHERE name='Alpha'`).Scan(&dir)
	if defs, _ := ix.Definitions(ctx, "Alpha"); len(defs) != 1 || defs[0].Path != "z/alpha.go" || dir != "z" {
		t.Fatalf("Alpha after move: %+v in dir %q", defs, dir)
	}

	if err := os.Remove(filepath.Join(root, "d", "d.go")); err != nil {
		t.Fatal(err)
	}
	step("delete", counts{removed: 1, unchanged: 5})
	if defs, _ := ix.Definitions(ctx, "Delta"); len(defs) != 0 {
		t.Fatalf("Delta after delete: %+v", defs)
	}

	writeFile(t, root, ".gitignore", "*.py\n")
	step("ignore", counts{added: 1, removed: 1, unchanged: 4, embedded: 1})

	writeFile(t, root, "README.md", "\x00binary now\n")
	step("became binary", counts{removed: 1, unchanged: 4})

	skipped := func() []string {
		var out []string
		rows, _ := ix.db.Query(`SELECT path FROM skips ORDER BY path`)
		for rows.Next() {
			var p string
			rows.Scan(&p)
			out = append(out, p)
		}
		rows.Close()
		return out
	}
	if got := skipped(); len(got) != 1 || got[0] != "README.md" {
		t.Fatalf("skips %v, want the binary README.md remembered", got)
	}
	writeFile(t, root, "README.md", "\x00binary, changed\n")
	step("binary changed", counts{unchanged: 4})
	if got := skipped(); len(got) != 1 {
		t.Fatalf("skips %v after the binary changed", got)
	}
	writeFile(t, root, "README.md", "# Text again\n")
	step("text again", counts{added: 1, unchanged: 4, embedded: 1})
	if got := skipped(); len(got) != 0 {
		t.Fatalf("skips %v, want none once README.md is text", got)
	}
	if err := os.Remove(filepath.Join(root, "README.md")); err != nil {
		t.Fatal(err)
	}
	step("text removed", counts{removed: 1, unchanged: 4})
	writeFile(t, root, "x.bin", "\x00\x01")
	step("binary added", counts{unchanged: 4})
	if err := os.Remove(filepath.Join(root, "x.bin")); err != nil {
		t.Fatal(err)
	}
	st = step("settled", counts{unchanged: 4})
	if got := skipped(); len(got) != 0 {
		t.Fatalf("skips %v, want the deleted binary forgotten", got)
	}
	var chunks, defsN, refs, fts int
	ix.db.QueryRow(`SELECT count(*) FROM chunks`).Scan(&chunks)
	ix.db.QueryRow(`SELECT count(*) FROM defs`).Scan(&defsN)
	ix.db.QueryRow(`SELECT count(*) FROM refs`).Scan(&refs)
	ix.db.QueryRow(`SELECT count(*) FROM fts`).Scan(&fts)
	if chunks != st.Chunks || fts == 0 {
		t.Fatalf("rows: %d chunks (stats %d), %d fts", chunks, st.Chunks, fts)
	}
	var orphans int
	ix.db.QueryRow(`SELECT (SELECT count(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM files)) + (SELECT count(*) FROM defs WHERE file_id NOT IN (SELECT id FROM files)) + (SELECT count(*) FROM refs WHERE file_id NOT IN (SELECT id FROM files))`).Scan(&orphans)
	if orphans != 0 {
		t.Fatalf("%d rows left behind by deleted files", orphans)
	}
}

func TestUpdateSkipsLargeFilesAndReportsProgress(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "small.txt", "hello\n")
	writeFile(t, root, "big.txt", strings.Repeat("x", 2000)+"\n")
	ix := openTest(t, root, WithMaxFileSize(1000))
	var phases []string
	st, err := ix.Update(context.Background(), func(p Progress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		if p.Phase == "index" && (p.Done < 1 || p.Done > p.Total || p.Path == "") {
			t.Errorf("bad progress %+v", p)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 1 || st.Skipped != 1 {
		t.Fatalf("stats %+v: want 1 file indexed, 1 skipped", st)
	}
	if strings.Join(phases, ",") != "scan,index,done" {
		t.Fatalf("phases %v", phases)
	}
}

func TestUpdateCancelled(t *testing.T) {
	ix := openTest(t, corpus)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Update(ctx, nil); err == nil {
		t.Fatal("a cancelled update succeeded")
	}
	// The index is still usable and consistent afterwards.
	st, err := ix.Update(context.Background(), nil)
	if err != nil || st.Added == 0 {
		t.Fatalf("%+v, %v", st, err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "x.db"), filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("opened an index of a missing root")
	}
	f := filepath.Join(t.TempDir(), "file")
	writeFile(t, filepath.Dir(f), "file", "x")
	if _, err := Open(filepath.Join(t.TempDir(), "x.db"), f); err == nil {
		t.Error("opened an index of a file")
	}
	ix := openTest(t, t.TempDir())
	ix.Close()
	if _, err := ix.Search(context.Background(), "x", 1); err == nil {
		t.Error("searched a closed index")
	}
}

func TestDefaultPath(t *testing.T) {
	a := DefaultPath("/home/u/.joule", "/work/a")
	b := DefaultPath("/home/u/.joule", "/work/a/")
	c := DefaultPath("/home/u/.joule", "/work/b")
	if a != b || a == c || filepath.Dir(a) != "/home/u/.joule/index" || len(filepath.Base(a)) != 16+3 {
		t.Errorf("DefaultPath: %q %q %q", a, b, c)
	}
}

func TestBulkBuildRestoresIndexes(t *testing.T) {
	defer func(n int) { bulkThreshold = n }(bulkThreshold)
	bulkThreshold = 0
	ix := openTest(t, corpus)
	if _, err := ix.Update(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var n int
	ix.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type='index' AND name IN ('chunks_file','defs_name','defs_file','refs_name','refs_file')`).Scan(&n)
	if n != 5 {
		t.Fatalf("%d of 5 secondary indexes after a bulk build", n)
	}
	if defs, _ := ix.Definitions(context.Background(), "ComputeTotal"); len(defs) != 1 {
		t.Fatalf("lookup after a bulk build: %+v", defs)
	}
}

func TestOpenRebuildsADamagedIndex(t *testing.T) {
	db := filepath.Join(t.TempDir(), "index.db")
	if err := os.WriteFile(db, []byte(strings.Repeat("not a database at all ", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(db, corpus)
	if err != nil {
		t.Fatalf("a damaged index was not replaced: %v", err)
	}
	defer ix.Close()
	if st, err := ix.Update(context.Background(), nil); err != nil || st.Added == 0 {
		t.Fatalf("%+v, %v", st, err)
	}
}
