package l2

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files")

// renderChunks is the golden form of a file's chunks.
func renderChunks(cs []Chunk) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%d-%d %s %q\n", c.StartLine, c.EndLine, c.Kind, c.Symbol)
		for _, d := range c.Defs {
			fmt.Fprintf(&b, "  def %s recv=%q pkg=%q line=%d kind=%s\n", d.Name, d.Recv, d.Pkg, d.Line, d.Kind)
		}
		for _, r := range c.Refs {
			fmt.Fprintf(&b, "  ref %s qual=%q line=%d call=%v\n", r.Name, r.Qual, r.Line, r.Call)
		}
	}
	return b.String()
}

func TestChunkGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/chunk/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(in), ".in") // .go.in: kept from the go tool
			cs := ChunkFile(name, src)
			checkChunks(t, src, cs)
			got := renderChunks(cs)
			golden := in + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestChunkGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("chunks of %s differ from %s:\n--- got\n%s--- want\n%s", in, golden, got, want)
			}
		})
	}
	if n < 5 {
		t.Fatalf("only %d chunker inputs found", n)
	}
}

// checkChunks asserts the invariants every chunker keeps: chunks in order,
// not overlapping, within the file, each text being exactly its lines.
func checkChunks(t *testing.T, src []byte, cs []Chunk) {
	t.Helper()
	lines := splitLines(src)
	prevEnd := 0
	for i, c := range cs {
		if c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine > len(lines) {
			t.Fatalf("chunk %d: lines %d-%d outside 1-%d", i, c.StartLine, c.EndLine, len(lines))
		}
		if c.StartLine <= prevEnd {
			t.Fatalf("chunk %d starts at %d, inside the previous chunk ending at %d", i, c.StartLine, prevEnd)
		}
		prevEnd = c.EndLine
		if !utf8.ValidString(c.Text) && utf8.Valid(src) {
			t.Fatalf("chunk %d: text is not valid UTF-8", i)
		}
		for _, d := range c.Defs {
			if d.Line < c.StartLine || d.Line > c.EndLine {
				t.Fatalf("chunk %d: def %s at line %d outside %d-%d", i, d.Name, d.Line, c.StartLine, c.EndLine)
			}
		}
	}
}

func TestChunkBlocksSplitsLongBlocks(t *testing.T) {
	var b strings.Builder
	b.WriteString("table = {\n")
	for i := range 300 {
		fmt.Fprintf(&b, "  k%d = %d,\n", i, i)
		if i == 100 {
			b.WriteString("\n")
		}
	}
	b.WriteString("}\n")
	src := []byte(b.String())
	cs := chunkBlocks(src)
	checkChunks(t, src, cs)
	if len(cs) < 3 {
		t.Fatalf("a 303-line block gave %d chunks, want ≥ 3 of at most %d lines", len(cs), maxChunkLines)
	}
	if cs[0].EndLine != 102 {
		t.Errorf("first cut at line %d, want 102 (the blank line inside the limit)", cs[0].EndLine)
	}
	for _, c := range cs {
		if n := c.EndLine - c.StartLine + 1; n > maxChunkLines {
			t.Errorf("chunk %d-%d has %d lines, over %d", c.StartLine, c.EndLine, n, maxChunkLines)
		}
	}
}

func TestImportName(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"net/http", "http"},
		{"github.com/jackc/pgx/v5", "pgx"},
		{"gopkg.in/yaml.v3", "yaml"},
		{"github.com/mattn/go-isatty", "isatty"},
		{"example.com/a-b", "a_b"},
		{"fmt", "fmt"},
	} {
		if got := importName(tt.path); got != tt.want {
			t.Errorf("importName(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func FuzzChunkFile(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/chunk/*")
	for _, in := range inputs {
		if data, err := os.ReadFile(in); err == nil && !strings.HasSuffix(in, ".golden") {
			f.Add(strings.TrimSuffix(filepath.Base(in), ".in"), data)
		}
	}
	f.Add("x.txt", []byte("a\n\n}\n  b\nc {\n\n}\n"))
	f.Add("x.md", []byte("```\n# no\n```\n# yes\n"))
	f.Fuzz(func(t *testing.T, name string, src []byte) {
		checkChunks(t, src, ChunkFile(name, src))
	})
}
