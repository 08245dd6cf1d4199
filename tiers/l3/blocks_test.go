package l3

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		want  []Block
		err   string // substring of the error; "" for none
	}{
		{"none", "I would not change anything.\n", nil, ""},
		{"one", "a.go\n<<<<<<< SEARCH\nx := 1\n=======\nx := 2\n>>>>>>> REPLACE\n",
			[]Block{{Path: "a.go", Search: "x := 1\n", Replace: "x := 2\n", Line: 2}}, ""},
		{"fenced with prose", "Here is the fix.\n\n```go\npkg/b.go\n<<<<<<< SEARCH\na\nb\n=======\nc\n>>>>>>> REPLACE\n```\nDone.",
			[]Block{{Path: "pkg/b.go", Search: "a\nb\n", Replace: "c\n", Line: 5}}, ""},
		{"backticked path and crlf", "`./c.txt`\r\n<<<<<<< SEARCH\r\nold\r\n=======\r\nnew\r\n>>>>>>> REPLACE\r\n",
			[]Block{{Path: "c.txt", Search: "old\n", Replace: "new\n", Line: 2}}, ""},
		{"create and delete text", "new.go\n<<<<<<< SEARCH\n=======\npackage x\n>>>>>>> REPLACE\nold.go\n<<<<<<< SEARCH\ngone\n=======\n>>>>>>> REPLACE\n",
			[]Block{{Path: "new.go", Replace: "package x\n", Line: 2}, {Path: "old.go", Search: "gone\n", Line: 7}}, ""},
		{"trailing blanks on markers", "a.go\n<<<<<<< SEARCH  \nx\n=======\t\ny\n>>>>>>> REPLACE \n",
			[]Block{{Path: "a.go", Search: "x\n", Replace: "y\n", Line: 2}}, ""},
		{"no path", "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", nil, "without a file path"},
		{"prose as path", "Change this file\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", nil, "not a file path"},
		{"fence as path", "```go\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", nil, "not a file path"},
		{"escaping path", "../etc/passwd\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", nil, "file path"},
		{"absolute path", "/etc/passwd\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", nil, "file path"},
		{"unterminated", "a.go\n<<<<<<< SEARCH\nx\n=======\ny\n", nil, "not closed"},
		{"no divider", "a.go\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n", nil, "before"},
		{"two dividers", "a.go\n<<<<<<< SEARCH\nx\n=======\ny\n=======\nz\n>>>>>>> REPLACE\n", nil, "second"},
		{"nested", "a.go\n<<<<<<< SEARCH\nx\n<<<<<<< SEARCH\n=======\ny\n>>>>>>> REPLACE\n", nil, "inside the block"},
		{"stray divider", "a.go\n=======\n", nil, "outside a block"},
		{"stray replace", ">>>>>>> REPLACE\n", nil, "outside a block"},
		{"bad open marker", "a.go\n<<<<<<< SEARCH2\nx\n", nil, "malformed marker"},
		{"bad close marker", "a.go\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACED\n", nil, "malformed marker"},
		{"identity", "a.go\n<<<<<<< SEARCH\nx\n=======\nx\n>>>>>>> REPLACE\n", nil, "with itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.reply)
			if tc.err != "" {
				var pe *ParseError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want a ParseError with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	files := core.Files{"a.go": []byte("x := 1\ny := 1\n"), "b.txt": []byte("dup\ndup\n")}
	for _, tc := range []struct {
		name   string
		blocks []Block
		want   map[string]string
		err    string
	}{
		{"replace", []Block{{Path: "a.go", Search: "x := 1\n", Replace: "x := 2\n"}}, map[string]string{"a.go": "x := 2\ny := 1\n"}, ""},
		{"in order", []Block{{Path: "a.go", Search: "x := 1\n", Replace: "z\n"}, {Path: "a.go", Search: "z\ny", Replace: "w\ny"}}, map[string]string{"a.go": "w\ny := 1\n"}, ""},
		{"create", []Block{{Path: "d/new.go", Replace: "package d\n"}}, map[string]string{"d/new.go": "package d\n"}, ""},
		{"create existing", []Block{{Path: "a.go", Replace: "x"}}, nil, "file exists"},
		{"missing file", []Block{{Path: "c.go", Search: "x", Replace: "y"}}, nil, "does not exist"},
		{"not found", []Block{{Path: "a.go", Search: "x := 3\n", Replace: "y"}}, nil, "does not occur"},
		{"ambiguous", []Block{{Path: "b.txt", Search: "dup\n", Replace: "one\n"}}, nil, "occurs 2 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := Apply(files, tc.blocks)
			if tc.err != "" {
				var ae *ApplyError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want an ApplyError with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range tc.want {
				if string(next[p]) != w {
					t.Errorf("%s = %q, want %q", p, next[p], w)
				}
			}
			if string(files["a.go"]) != "x := 1\ny := 1\n" {
				t.Fatal("Apply modified its input")
			}
		})
	}
}

// format writes blocks back in the grammar Parse reads.
func writeBlocks(bs []Block) string {
	var sb strings.Builder
	for _, b := range bs {
		sb.WriteString(b.Path + "\n" + markSearch + "\n" + b.Search + markDivider + "\n" + b.Replace + markReplace + "\n")
	}
	return sb.String()
}

func FuzzParse(f *testing.F) {
	f.Add("a.go\n<<<<<<< SEARCH\nx := 1\n=======\nx := 2\n>>>>>>> REPLACE\n")
	f.Add("```\nb/c.go\n<<<<<<< SEARCH\n=======\nnew\n>>>>>>> REPLACE\n```\n")
	f.Add("a\n<<<<<<< SEARCH\n=======\n=======\n>>>>>>> REPLACE")
	f.Add("x\r\n<<<<<<< SEARCH\r\n")
	f.Fuzz(func(t *testing.T, reply string) {
		bs, err := Parse(reply)
		if err != nil {
			return
		}
		for _, b := range bs {
			if core.ValidatePath(b.Path) != nil {
				t.Fatalf("accepted invalid path %q", b.Path)
			}
			if b.Search == b.Replace {
				t.Fatalf("accepted an identity block")
			}
		}
		// What parses, written back, parses to the same edits.
		again, err := Parse(writeBlocks(bs))
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, writeBlocks(bs))
		}
		if len(again) != len(bs) {
			t.Fatalf("re-parse: %d blocks, want %d", len(again), len(bs))
		}
		for i := range bs {
			if again[i].Path != bs[i].Path || again[i].Search != bs[i].Search || again[i].Replace != bs[i].Replace {
				t.Fatalf("re-parse block %d: %#v, want %#v", i, again[i], bs[i])
			}
		}
		_, _ = Apply(core.Files{"a.go": []byte("x := 1\n")}, bs)
	})
}

// BenchmarkParseApply parses a 20-block reply and applies it to 20 files of
// 26 KB, and reports the ratio to a baseline measured in the same run: the
// bare byte work of the same edits (one bytes.Replace per file, no parsing,
// no checks, no copy of the untouched tree).
func BenchmarkParseApply(b *testing.B) {
	var sb strings.Builder
	src := strings.Repeat("line of code\n", 2000)
	files := core.Files{}
	for i := 0; i < 20; i++ {
		p := "pkg/f" + string(rune('a'+i)) + ".go"
		files[p] = []byte(src + "marker " + p + "\n")
		sb.WriteString("Some prose.\n" + p + "\n<<<<<<< SEARCH\nmarker " + p + "\n=======\nreplaced\n>>>>>>> REPLACE\n")
	}
	reply := sb.String()
	b.SetBytes(int64(len(reply)))
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for p, body := range files {
			_ = bytes.Replace(body, []byte("marker "+p+"\n"), []byte("replaced\n"), 1)
		}
	}
	base := time.Since(start)
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		bs, err := Parse(reply)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Apply(files, bs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(base), "x-baseline")
}
