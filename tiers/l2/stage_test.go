package l2

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/ask"
)

func corpusStage(t *testing.T, opts ...Option) (*Stage, string) {
	t.Helper()
	ix := openTest(t, corpus, opts...)
	if _, err := ix.Update(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return &Stage{Index: ix}, ix.Root()
}

func TestStageClosesOnlyCertainLookups(t *testing.T) {
	s, root := corpusStage(t)
	if s.Tier() != core.L2 {
		t.Fatalf("tier %s", s.Tier())
	}
	for _, tt := range []struct {
		prompt string
		closes bool
		want   []string // substrings of the answer, or of the first context snippet's path
	}{
		{"where is ComputeTotal defined?", true, []string{"billing/invoice.go:25", "func ComputeTotal(lines []Line", "// ComputeTotal sums", LexicalOnly}},
		{"definition of (*Stock).Reserve", true, []string{"inventory/stock.go:29", "func (s *Stock) Reserve"}},
		{"where is render_csv defined", true, []string{"scripts/report.py:26", "def render_csv"}},
		{"where is inventory.Stock defined", true, []string{"inventory/stock.go:16", "type Stock struct"}},
		{"who calls ComputeTotal", true, []string{"server/http.go:54", "(*Server).ServeHTTP", "billing.ComputeTotal(req.Lines, nil)"}},
		{"callers of ParseSKU", true, []string{"3 recorded uses", "billing/invoice.go:28", "inventory/sku.go:29", "server/http.go:44"}},
		// Two functions named Validate: ambiguous, hand both on.
		{"where is Validate defined", false, []string{"billing/invoice.go", "inventory/sku.go"}},
		// Stock is a type and a field of Server.
		{"where is Stock defined", false, []string{"inventory/stock.go"}},
		{"where is NoSuchThing defined", false, nil},
		// A method's callers cannot be attributed without type checking.
		{"who calls (*Stock).Reserve", false, []string{"inventory/stock.go"}},
		{"who calls NewStock", true, []string{"1 recorded use", "cmd/shop/main.go:14 in main (call)"}},
		// No recorded call: not certain enough to say "nobody".
		{"who calls main", false, []string{"cmd/shop/main.go"}},
		// Not Go: no reference table.
		{"who calls load_orders", false, []string{"scripts/report.py"}},
		{"who calls Validate", false, []string{"billing/invoice.go"}},
		// Free text never closes lexically.
		{"find the code that compares the bearer token", false, []string{"server/auth.go"}},
		{"fix the bug in ComputeTotal", false, []string{"billing/invoice.go"}},
		{"add a rate limiter to the checkout handler", false, []string{"server/http.go"}},
		{"rename Foo to Bar", false, nil},
	} {
		t.Run(tt.prompt, func(t *testing.T) {
			req := &tiers.Request{Prompt: tt.prompt, Root: root}
			res, err := s.TryResolve(context.Background(), req)
			var refused *ask.Refusal
			if err != nil && (tt.closes || !errors.As(err, &refused)) {
				t.Fatal(err)
			}
			if (res != nil) != tt.closes {
				t.Fatalf("closed = %v, want %v (answer %+v, context %d)", res != nil, tt.closes, res, len(req.Context))
			}
			if tt.closes {
				if res.Op != nil {
					t.Error("a lookup must not change the tree")
				}
				for _, w := range tt.want {
					if !strings.Contains(res.Answer, w) {
						t.Errorf("answer lacks %q:\n%s", w, res.Answer)
					}
				}
				if len(req.Context) != 0 {
					t.Errorf("a closing stage appended %d snippets", len(req.Context))
				}
				return
			}
			var paths []string
			for _, c := range req.Context {
				paths = append(paths, c.Path)
				if c.Why == "" || !strings.Contains(c.Why, LexicalOnly) {
					t.Errorf("snippet %s: Why %q lacks the lexical-only note", c.Path, c.Why)
				}
				if c.Text == "" || c.StartLine < 1 || c.EndLine < c.StartLine {
					t.Errorf("snippet %+v is malformed", c)
				}
			}
			if len(req.Context) > 5 {
				t.Errorf("%d snippets, want ≤ 5", len(req.Context))
			}
			joined := strings.Join(paths, " ")
			for _, w := range tt.want {
				if !strings.Contains(joined, w) {
					t.Errorf("context %v lacks %s", paths, w)
				}
			}
		})
	}
}

func TestStageRefusesStaleFilesAndOtherRoots(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "go.mod", "module example.com/m\n")
	writeFile(t, root, "a/a.go", "package a\n\nfunc Alpha() int { return 1 }\n")
	writeFile(t, root, "b/b.go", "package b\n\nimport \"example.com/m/a\"\n\nfunc Beta() int { return a.Alpha() }\n")
	ix := openTest(t, root)
	if _, err := ix.Update(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	s := &Stage{Index: ix}
	ask := func(prompt, r string) *tiers.Resolution {
		t.Helper()
		res, err := s.TryResolve(context.Background(), &tiers.Request{Prompt: prompt, Root: r})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if ask("where is Alpha defined", root) == nil || ask("who calls Alpha", root) == nil {
		t.Fatal("fresh lookups did not close")
	}
	if ask("where is Alpha defined", t.TempDir()) != nil {
		t.Fatal("closed a request for another workspace")
	}
	// The caller's file changes after indexing: the callers answer is stale.
	writeFile(t, root, "b/b.go", "package b\n\n// changed\nfunc Beta() int { return 2 }\n")
	if ask("who calls Alpha", root) != nil {
		t.Fatal("answered callers from a stale file")
	}
	if ask("where is Alpha defined", root) == nil {
		t.Fatal("a.go is unchanged: its definition is still certain")
	}
	if err := os.Remove(filepath.Join(root, "a", "a.go")); err != nil {
		t.Fatal(err)
	}
	if ask("where is Alpha defined", root) != nil {
		t.Fatal("answered a definition from a deleted file")
	}
}

func TestStageCallersThroughADotImport(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "go.mod", "module example.com/m\n")
	writeFile(t, root, "a/a.go", "package a\n\nfunc Alpha() int { return 1 }\n\nfunc Two() int { return Alpha() + 1 }\n")
	writeFile(t, root, "c/c.go", "package c\n\nimport . \"example.com/m/a\"\n\nfunc Gamma() int { return Alpha() }\n")
	writeFile(t, root, "d/d.go", "package d\n\nfunc Alpha() {}\n\nfunc Delta() { Alpha() }\n")
	ix := openTest(t, root)
	if _, err := ix.Update(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res, err := (&Stage{Index: ix}).TryResolve(context.Background(), &tiers.Request{Prompt: "who calls a.Alpha", Root: root})
	if err != nil || res == nil {
		t.Fatalf("did not close: %+v, %v", res, err)
	}
	// The call in the dot-importing file counts; d's own Alpha's does not.
	if !strings.Contains(res.Answer, "2 recorded uses") || !strings.Contains(res.Answer, "a/a.go:5") || !strings.Contains(res.Answer, "c/c.go:5 in Gamma") || strings.Contains(res.Answer, "d/d.go") {
		t.Fatalf("answer:\n%s", res.Answer)
	}
}

func TestDecisive(t *testing.T) {
	hit := func(lex, vec int) Hit { return Hit{Lexical: lex, Vector: vec, Path: "a/alpha.go", Text: "func A() {}"} }
	for _, tt := range []struct {
		name string
		r    searched
		want bool
	}{
		{"clear winner", searched{hits: []Hit{hit(1, 1)}, terms: []string{"alpha"}, lex: []ranked{{1, 10}, {2, 5}}, vec: []ranked{{1, 0.9}, {2, 0.6}}}, true},
		{"a query term missing", searched{hits: []Hit{hit(1, 1)}, terms: []string{"alpha", "handler"}, lex: []ranked{{1, 10}, {2, 5}}, vec: []ranked{{1, 0.9}, {2, 0.6}}}, false},
		{"lexical only", searched{hits: []Hit{hit(1, 0)}, lex: []ranked{{1, 10}}, note: LexicalOnly}, false},
		{"rankers disagree", searched{hits: []Hit{hit(1, 2)}, lex: []ranked{{1, 10}, {2, 5}}, vec: []ranked{{2, 0.9}, {1, 0.6}}}, false},
		{"cosine too close", searched{hits: []Hit{hit(1, 1)}, lex: []ranked{{1, 10}, {2, 5}}, vec: []ranked{{1, 0.9}, {2, 0.88}}}, false},
		{"bm25 too close", searched{hits: []Hit{hit(1, 1)}, lex: []ranked{{1, 10}, {2, 9}}, vec: []ranked{{1, 0.9}, {2, 0.6}}}, false},
		{"no hits", searched{}, false},
	} {
		if got := decisive(&tt.r); got != tt.want {
			t.Errorf("%s: decisive = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestStageHybridSearch(t *testing.T) {
	srv := newFakeEmbedServer(t)
	s, root := corpusStage(t, WithEmbedder(NewOllamaEmbedder(srv.URL, "nomic-embed-text", nil)))
	closed := 0
	for _, c := range searchCases {
		req := &tiers.Request{Prompt: "find the code that " + c.query, Root: root}
		res, err := s.TryResolve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if res == nil {
			if len(req.Context) == 0 {
				t.Errorf("%q: neither closed nor handed on context", c.query)
			}
			continue
		}
		closed++
		m := answerLoc.FindStringSubmatch(res.Answer)
		if m == nil {
			t.Fatalf("%q: answer without a location:\n%s", c.query, res.Answer)
		}
		start, _ := strconv.Atoi(m[2])
		end, _ := strconv.Atoi(m[3])
		if !covers(Hit{Path: m[1], StartLine: start, EndLine: end}, c.path, c.line) || strings.Contains(res.Answer, LexicalOnly) {
			t.Errorf("%q: false close:\n%s", c.query, res.Answer)
		}
	}
	t.Logf("hybrid free-text search closed %d of %d", closed, len(searchCases))
	if closed == 0 {
		t.Error("no free-text search was decisive: the closing path went untested")
	}
	// The definition answer with a model configured carries no notice.
	res, err := s.TryResolve(context.Background(), &tiers.Request{Prompt: "where is ComputeTotal defined", Root: root})
	if err != nil || res == nil || strings.Contains(res.Answer, "lexical only") {
		t.Fatalf("%+v, %v", res, err)
	}
}

var answerLoc = regexp.MustCompile(`is at (\S+):(\d+)-(\d+)`)

// TestStageInCascade runs L2 inside a real cascade.
func TestStageInCascade(t *testing.T) {
	s, root := corpusStage(t)
	c, err := tiers.New(s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), &tiers.Request{Prompt: "where is checkToken defined", Root: root})
	if err != nil || res.Closing != core.L2 || !strings.Contains(res.Resolution.Answer, "server/auth.go:10") {
		t.Fatalf("%+v, %v", res, err)
	}
}

// TestStageSeesDefinitionsInBrokenGo: a second definition in a file that
// does not parse still makes the name ambiguous.
func TestStageSeesDefinitionsInBrokenGo(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a/a.go", "package a\n\nfunc Alpha() int { return 1 }\n")
	writeFile(t, root, "a/wip.go", "package a\n\nfunc Alpha( int {\n\treturn\n}\n")
	ix := openTest(t, root)
	if _, err := ix.Update(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"where is Alpha defined", "where is a.Alpha defined"} {
		req := &tiers.Request{Prompt: p, Root: root}
		res, err := (&Stage{Index: ix}).TryResolve(context.Background(), req)
		if err != nil || res != nil {
			t.Fatalf("%q closed though wip.go also defines Alpha: %+v, %v", p, res, err)
		}
		if len(req.Context) != 2 {
			t.Fatalf("%q: %d snippets, want both definitions", p, len(req.Context))
		}
	}
}

// TestAnswersGolden pins the text an editor shows for the closing lookups.
func TestAnswersGolden(t *testing.T) {
	s, root := corpusStage(t)
	var b strings.Builder
	for _, p := range []string{
		"where is ComputeTotal defined",
		"definition of (*Stock).Reserve",
		"where is render_csv defined",
		"who calls ParseSKU",
	} {
		res, err := s.TryResolve(context.Background(), &tiers.Request{Prompt: p, Root: root})
		if err != nil || res == nil {
			t.Fatalf("%q: %+v, %v", p, res, err)
		}
		b.WriteString("> " + p + "\n" + res.Answer + "\n\n")
	}
	golden := filepath.Join("testdata", "answers.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestAnswersGolden -update)", err)
	}
	if b.String() != string(want) {
		t.Errorf("answers differ from %s:\n%s", golden, b.String())
	}
}
