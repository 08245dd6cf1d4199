package core

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"a", true},
		{"a/b/c.go", true},
		{".gitignore", true},
		{"dir/.hidden", true},
		{"日本/語.md", true},
		{"a..b", true},
		{"", false},
		{"/abs", false},
		{"a//b", false},
		{"a/", false},
		{"./a", false},
		{"a/./b", false},
		{"../a", false},
		{"a/..", false},
		{"a\x00b", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		if err := ValidatePath(tt.path); (err == nil) != tt.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", tt.path, err, tt.ok)
		}
	}
}

func TestTreeCanonicalGolden(t *testing.T) {
	tests := []struct {
		name  string
		files Files
		hex   string
	}{
		{"empty", Files{}, "a0"},
		// Length-first: "b" before "aa".
		{"length-first", Files{"aa": nil, "b": nil},
			"a2" + "6162" + "5820" + hex.EncodeToString(sumOf("")) + "626161" + "5820" + hex.EncodeToString(sumOf(""))},
	}
	for _, tt := range tests {
		tr, err := tt.files.Tree()
		if err != nil {
			t.Fatal(err)
		}
		b, err := tr.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != tt.hex {
			t.Errorf("%s: got %s want %s", tt.name, got, tt.hex)
		}
		back, err := DecodeTree(b)
		if err != nil || back.ID() != tr.ID() {
			t.Errorf("%s: decode: %v", tt.name, err)
		}
	}
}

func sumOf(s string) []byte {
	id := Sum([]byte(s))
	return id[:]
}

func TestDecodeTreeRejects(t *testing.T) {
	h := hex.EncodeToString(sumOf(""))
	tests := map[string]string{
		"not a map":             "80",
		"keys out of order":     "a2" + "626161" + "5820" + h + "6162" + "5820" + h,
		"duplicate key":         "a2" + "6162" + "5820" + h + "6162" + "5820" + h,
		"short digest":          "a1" + "6162" + "5819" + h[:62],
		"text digest":           "a1" + "6162" + "7820" + h,
		"indefinite map":        "bf" + "6162" + "5820" + h + "ff",
		"bad path":              "a1" + "622f61" + "5820" + h,
		"non-shortest length":   "b800",
		"integer key":           "a1" + "01" + "5820" + h,
		"trailing bytes":        "a000",
		"dot-dot segment":       "a1" + "622e2e" + "5820" + h,
		"invalid utf-8 path":    "a1" + "61ff" + "5820" + h,
		"tagged digest":         "a1" + "6162" + "d818" + "5820" + h,
		"null value":            "a1" + "6162" + "f6",
		"empty input":           "",
		"float value":           "a1" + "6162" + "f93c00",
		"path with nul":         "a1" + "620061" + "5820" + h,
		"map head says two":     "a2" + "6162" + "5820" + h,
		"absolute path":         "a1" + "622f62" + "5820" + h,
		"empty path":            "a1" + "60" + "5820" + h,
		"undefined value":       "a1" + "6162" + "f7",
		"array value":           "a1" + "6162" + "80",
		"bytes key":             "a1" + "4162" + "5820" + h,
		"negative int value":    "a1" + "6162" + "20",
		"indefinite text key":   "a1" + "7f6162ff" + "5820" + h,
		"indefinite bytes hash": "a1" + "6162" + "5f5820" + h + "ff",
	}
	for name, in := range tests {
		b, err := hex.DecodeString(in)
		if err != nil {
			t.Fatalf("%s: bad test hex: %v", name, err)
		}
		if _, err := DecodeTree(b); err == nil {
			t.Errorf("%s: DecodeTree(%s) accepted", name, in)
		}
	}
}

func TestTreeOfDir(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a")
	write("sub/b.txt", "b")
	write(".git/HEAD", "ref: refs/heads/main")
	write("sub/.git/config", "x")
	write(".gitignore", "bin/")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	tr, err := TreeOfDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Tree{"a.txt": Sum([]byte("a")), "sub/b.txt": Sum([]byte("b")), ".gitignore": Sum([]byte("bin/"))}
	if len(tr) != len(want) {
		t.Fatalf("tree = %v, want %v", tr, want)
	}
	for p, id := range want {
		if tr[p] != id {
			t.Errorf("%s: %s want %s", p, tr[p], id)
		}
	}
	files, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ft, _ := files.Tree()
	if ft.ID() != tr.ID() {
		t.Fatal("ReadDir and TreeOfDir disagree")
	}
	if _, err := TreeOfDir(filepath.Join(dir, "a.txt")); err == nil {
		t.Fatal("a file accepted as a directory")
	}
	if _, err := TreeOfDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory accepted")
	}
}

func FuzzDecodeTree(f *testing.F) {
	for _, s := range []string{"a0", "a16162582000000000000000000000000000000000000000000000000000000000000000000"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	tr, _ := Files{"a": []byte("x"), "b/c": nil}.Tree()
	b, _ := tr.Canonical()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := DecodeTree(data)
		if err != nil {
			return
		}
		again, err := tr.Canonical()
		if err != nil {
			t.Fatalf("decoded tree does not encode: %v", err)
		}
		if string(again) != string(data) {
			t.Fatalf("decode-encode not identical: %x vs %x", data, again)
		}
	})
}
