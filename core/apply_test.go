package core

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestApply(t *testing.T) {
	base := Files{
		"main.go":  []byte("package main\n\nfunc main() {\n\thello()\n}\n"),
		"hello.go": []byte("package main\n\nfunc hello() { println(\"hi\") }\n"),
		"dup.txt":  []byte("ab ab\n"),
	}
	tree, _ := base.Tree()
	prior := tree.ID()
	edit := func(path string, a Anchor, repl string) Edit {
		return Edit{Path: path, Anchor: a, Replacement: Bytes(repl)}
	}
	tests := []struct {
		name    string
		prior   ID
		edits   []Edit
		want    map[string]string // files that must hold these contents
		absent  []string
		wantErr string
	}{
		{name: "range", edits: []Edit{edit("main.go", RangeAnchor(0, 7), "package")},
			want: map[string]string{"main.go": string(base["main.go"])}},
		{name: "range insert at end", edits: []Edit{edit("dup.txt", RangeAnchor(6, 6), "c\n")},
			want: map[string]string{"dup.txt": "ab ab\nc\n"}},
		{name: "line-aligned hunk", edits: []Edit{edit("hello.go", HunkAnchor([]byte("func hello() { println(\"hi\") }\n")), "func hello() {}\n")},
			want: map[string]string{"hello.go": "package main\n\nfunc hello() {}\n"}},
		{name: "mid-line hunk", edits: []Edit{edit("hello.go", HunkAnchor([]byte("\"hi\"")), "\"bye\"")},
			want: map[string]string{"hello.go": "package main\n\nfunc hello() { println(\"bye\") }\n"}},
		{name: "multi-line hunk", edits: []Edit{edit("main.go", HunkAnchor([]byte("func main() {\n\thello()\n")), "func main() {\n")},
			want: map[string]string{"main.go": "package main\n\nfunc main() {\n}\n"}},
		{name: "sequential edits see earlier ones", edits: []Edit{
			edit("main.go", HunkAnchor([]byte("hello()")), "greet()"),
			edit("main.go", HunkAnchor([]byte("greet()")), "greet(1)"),
		}, want: map[string]string{"main.go": "package main\n\nfunc main() {\n\tgreet(1)\n}\n"}},
		{name: "create with [0,0]", edits: []Edit{edit("new/file.txt", RangeAnchor(0, 0), "new\n")},
			want: map[string]string{"new/file.txt": "new\n"}},
		{name: "delete bytes", edits: []Edit{edit("dup.txt", RangeAnchor(0, 3), "")},
			want: map[string]string{"dup.txt": "ab\n"}},
		{name: "stale prior", prior: Sum([]byte("other")), edits: []Edit{edit("main.go", RangeAnchor(0, 0), "x")}, wantErr: "stale prior"},
		{name: "range beyond file", edits: []Edit{edit("dup.txt", RangeAnchor(2, 99), "")}, wantErr: "stale anchor: range"},
		{name: "hunk absent", edits: []Edit{edit("main.go", HunkAnchor([]byte("nowhere")), "")}, wantErr: "does not occur"},
		{name: "hunk ambiguous", edits: []Edit{edit("dup.txt", HunkAnchor([]byte("ab")), "x")}, wantErr: "ambiguous anchor: hunk"},
		{name: "empty hunk ambiguous", edits: []Edit{edit("dup.txt", HunkAnchor(nil), "x")}, wantErr: "ambiguous"},
		{name: "absent file non-zero range", edits: []Edit{edit("nope.txt", RangeAnchor(0, 1), "x")}, wantErr: "absent"},
		{name: "absent file hunk", edits: []Edit{edit("nope.txt", HunkAnchor([]byte("x")), "x")}, wantErr: "absent"},
		{name: "second edit stale", edits: []Edit{
			edit("dup.txt", RangeAnchor(0, 6), ""),
			edit("dup.txt", RangeAnchor(0, 1), ""),
		}, wantErr: "edit 1 (dup.txt)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := &CodingOp{Prior: prior, Author: pubOf(testKey("a")), Intent: tt.name, Tier: L1, Edits: tt.edits}
			if tt.prior != (ID{}) {
				op.Prior = tt.prior
			}
			snapshot := base.Clone()
			out, err := Apply(base, op)
			for p := range snapshot {
				if !bytes.Equal(snapshot[p], base[p]) {
					t.Fatal("Apply modified its input")
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Apply() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, s := range tt.want {
				if string(out[p]) != s {
					t.Errorf("%s = %q, want %q", p, out[p], s)
				}
			}
		})
	}
}

func TestApplyErrorsAreTyped(t *testing.T) {
	files := Files{"a": []byte("x")}
	tr, _ := files.Tree()
	_, err := Apply(files, &CodingOp{Prior: Sum(nil), Edits: []Edit{{Path: "a", Anchor: RangeAnchor(0, 0)}}, Tier: L0})
	if !errors.Is(err, ErrStalePrior) {
		t.Fatalf("got %v", err)
	}
	_, err = Apply(files, &CodingOp{Prior: tr.ID(), Edits: []Edit{{Path: "a", Anchor: RangeAnchor(0, 5)}}, Tier: L0})
	var ae *AnchorError
	if !errors.As(err, &ae) || ae.Edit != 0 || ae.Path != "a" {
		t.Fatalf("got %v", err)
	}
}

func TestHunkTooLargeForExhaustiveSearch(t *testing.T) {
	content := bytes.Repeat([]byte("abcdefgh"), 1024) // 8 KiB, one line
	files := Files{"big": content}
	tr, _ := files.Tree()
	// A mid-line hunk that is absent: the search must refuse, not spin.
	_, err := Apply(files, &CodingOp{Prior: tr.ID(), Tier: L0, Edits: []Edit{{Path: "big", Anchor: HunkAnchor([]byte("zz"))}}})
	if err == nil || !strings.Contains(err.Error(), "too large for an exhaustive search") {
		t.Fatalf("got %v", err)
	}
}

func BenchmarkApplyHunkLineAligned(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < 200; i++ {
		buf.WriteString("\tx := compute(" + strings.Repeat("a", i%40) + ")\n")
	}
	content := buf.Bytes()
	lines := bytes.SplitAfter(content, []byte("\n"))
	target := lines[150]
	files := Files{"f.go": append(content, "unique\n"...)}
	files["f.go"] = append(files["f.go"], target[:0]...)
	tr, _ := files.Tree()
	op := &CodingOp{Prior: tr.ID(), Tier: L1, Edits: []Edit{{Path: "f.go", Anchor: HunkAnchor([]byte("unique\n")), Replacement: Bytes("x\n")}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Apply(files, op); err != nil {
			b.Fatal(err)
		}
	}
}
