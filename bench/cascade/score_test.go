package main

import (
	"crypto/ed25519"
	"reflect"
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
)

func TestParseLocs(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []Loc
	}{
		{"line", "defined at bufio/bufio.go:62", []Loc{{"bufio/bufio.go", 62, 62}}},
		{"line and column", "bufio/bufio.go:62:6: func NewReader", []Loc{{"bufio/bufio.go", 62, 62}}},
		{"range", "bufio/bufio.go:60-75 (func NewReader)", []Loc{{"bufio/bufio.go", 60, 75}}},
		{"en dash range", "bufio/bufio.go:60–75", []Loc{{"bufio/bufio.go", 60, 75}}},
		{"absolute under root", "/go/src/strings/reader.go:12", []Loc{{"strings/reader.go", 12, 12}}},
		{"dot slash", "./strings/reader.go:12", []Loc{{"strings/reader.go", 12, 12}}},
		{"markdown", "- `net/http/client.go:590` (*Client).Do", []Loc{{"net/http/client.go", 590, 590}}},
		{"several", "a.go:1, b/c.go:2-3", []Loc{{"a.go", 1, 1}, {"b/c.go", 2, 3}}},
		{"reversed range is a line", "a.go:9-3", []Loc{{"a.go", 9, 9}}},
		{"line zero dropped", "a.go:0", nil},
		{"no go file", "README.md:3 and main.c:4", nil},
		{"no line", "see bufio.go for details", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseLocs(tc.text, "/go/src")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseLocs(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func FuzzParseLocs(f *testing.F) {
	for _, s := range []string{"a.go:1", "x/y.go:3-4", "/r/z.go:5:6", "a.go:99999999999999999999", "é.go:1–2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range ParseLocs(s, "/r") {
			if !strings.HasSuffix(l.Path, ".go") || l.Line < 1 || l.End < l.Line {
				t.Fatalf("ParseLocs(%q) gave %+v", s, l)
			}
		}
	})
}

func TestScoreLookups(t *testing.T) {
	def := &Request{Class: Define, Root: "/go/src", Def: Span{Path: "p/p.go", Lo: 10, Hi: 14, Line: 11}}
	calls := &Request{Class: Callers, Root: "/go/src", Calls: []Span{
		{Path: "p/p.go", Lo: 20, Hi: 30, Line: 25, Function: "a"},
		{Path: "p/q.go", Lo: 5, Hi: 8, Line: 6, Function: "b"},
	}}
	for _, tc := range []struct {
		name   string
		req    *Request
		answer string
		want   Verdict
	}{
		{"ident line", def, "p/p.go:11", Correct},
		{"doc comment line", def, "p/p.go:10", Correct},
		{"chunk range", def, "p/p.go:10-14", Correct},
		{"among others", def, "x/y.go:3\np/p.go:11:6", Correct},
		{"wrong file", def, "p/q.go:11", False},
		{"outside the decl", def, "p/p.go:15", False},
		{"range too wide", def, "p/p.go:1-400", False},
		{"no location", def, "it is in package p", False},
		{"every call site", calls, "p/p.go:25 in a\np/q.go:6 in b", Correct},
		{"caller ranges", calls, "p/p.go:20-30\np/q.go:5-8", Correct},
		{"a call missed", calls, "p/p.go:25", False},
		{"call in the wrong file", calls, "p/p.go:25\np/p.go:6", False},
		{"a line of the caller is not the call", calls, "p/p.go:21\np/q.go:6", False},
		{"range too wide", calls, "p/p.go:1-400\np/q.go:6", False},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Score(tc.req, &tiers.Resolution{Answer: tc.answer}, nil)
			if got != tc.want {
				t.Errorf("Score = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestScoreEdits(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	pub := core.PublicKey(key.Public().(ed25519.PublicKey))
	prior := core.Files{"a.go": []byte("package a\nvar  x = 1\n"), "b.go": []byte("package a\n")}
	want := prior.Clone()
	want["a.go"] = []byte("package a\n\nvar x = 1\n")
	op := func(next core.Files) *core.SignedOp {
		o, err := l1.NewOp(prior, next, pub, "format a.go", core.L1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := core.SignOp(key, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	wrong := prior.Clone()
	wrong["a.go"] = []byte("package a\nvar x = 1\n")
	extra := want.Clone()
	extra["c.go"] = []byte("package a\n")
	stale := core.Files{"a.go": []byte("package a\n")}
	req := &Request{Class: Format, Want: want}
	for _, tc := range []struct {
		name  string
		res   *tiers.Resolution
		prior core.Files
		want  Verdict
	}{
		{"byte-identical", &tiers.Resolution{Op: op(want)}, prior, Correct},
		{"differs", &tiers.Resolution{Op: op(wrong)}, prior, False},
		{"extra file", &tiers.Resolution{Op: op(extra)}, prior, False},
		{"answer without edit", &tiers.Resolution{Answer: "formatted"}, prior, False},
		{"op on another tree", &tiers.Resolution{Op: op(want)}, stale, False},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Score(req, tc.res, tc.prior)
			if got != tc.want {
				t.Errorf("Score = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
	if v, _ := Score(&Request{Class: Negative}, &tiers.Resolution{Answer: "done"}, nil); v != False {
		t.Errorf("a cheap close of a negative control scored %v", v)
	}
}

func TestRecall5(t *testing.T) {
	def := Span{Path: "p.go", Lo: 3, Hi: 9, Line: 4}
	miss := Loc{"q.go", 1, 50}
	hit := Loc{"p.go", 3, 9}
	for _, tc := range []struct {
		name string
		hits []Loc
		want bool
	}{
		{"first", []Loc{hit}, true},
		{"fifth", []Loc{miss, miss, miss, miss, hit}, true},
		{"sixth", []Loc{miss, miss, miss, miss, miss, hit}, false},
		{"single line", []Loc{{"p.go", 4, 4}}, true},
		{"other line", []Loc{{"p.go", 5, 5}}, false},
		{"none", nil, false},
	} {
		if got := Recall5(def, tc.hits); got != tc.want {
			t.Errorf("%s: Recall5 = %v, want %v", tc.name, got, tc.want)
		}
	}
}
