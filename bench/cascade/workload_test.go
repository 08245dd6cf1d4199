package main

import (
	"bytes"
	"context"
	"errors"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
)

func TestMix(t *testing.T) {
	for _, n := range []int{1, 7, 100, 240, 1001} {
		m := Mix(n)
		sum := 0
		for _, c := range Classes {
			if m[c] < 0 {
				t.Errorf("Mix(%d)[%s] = %d", n, c, m[c])
			}
			sum += m[c]
		}
		if sum != n {
			t.Errorf("Mix(%d) sums to %d", n, sum)
		}
	}
	if m := Mix(100); m[Define] != 40 || m[Negative] != 15 {
		t.Errorf("Mix(100) = %v", m)
	}
}

func TestSampling(t *testing.T) {
	pool := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	a := sample(rand.New(rand.NewPCG(3, 1)), pool, 4)
	b := sample(rand.New(rand.NewPCG(3, 1)), pool, 4)
	if !reflect.DeepEqual(a, b) || len(a) != 4 {
		t.Errorf("seeded samples differ: %v %v", a, b)
	}
	if got := sample(rand.New(rand.NewPCG(3, 1)), pool, 20); len(got) != 10 {
		t.Errorf("oversized sample has %d items", len(got))
	}
	got := roundRobin([][]int{{1, 2, 3}, {10}, {20, 21}}, 5)
	if want := []int{1, 10, 20, 2, 21}; !reflect.DeepEqual(got, want) {
		t.Errorf("roundRobin = %v, want %v", got, want)
	}
	if got := roundRobin([][]int{{1}, {2}}, 5); len(got) != 2 {
		t.Errorf("roundRobin past the end = %v", got)
	}
}

func TestPools(t *testing.T) {
	all := []stdPkg{
		{Path: "bufio", Name: "bufio", GoFiles: []string{"bufio.go"}, Imports: []string{"bytes", "errors"}},
		{Path: "text/template", Name: "template", GoFiles: []string{"a.go"}},
		{Path: "html/template", Name: "template", GoFiles: []string{"a.go"}},
		{Path: "strings", Name: "strings", GoFiles: []string{"a.go"}, Imports: []string{"internal/bytealg"}},
		{Path: "vendor/golang.org/x/net/idna", Name: "idna", GoFiles: []string{"a.go"}},
		{Path: "runtime/cgo", Name: "cgo", GoFiles: []string{"a.go"}, Cgo: 2},
		{Path: "embed/x", Name: "x", GoFiles: []string{"a.go"}, Embeds: 1},
	}
	dirs := map[string]int{"bufio": 1, "template": 2, "strings": 1, "idna": 1, "cgo": 1, "x": 1}
	var names []string
	for _, p := range lookupPool(all, dirs) {
		names = append(names, p.Path)
	}
	if want := []string{"bufio", "strings", "embed/x"}; !reflect.DeepEqual(names, want) {
		t.Errorf("lookupPool = %v, want %v", names, want)
	}
	names = nil
	for _, p := range renamePool(all, dirs) {
		names = append(names, p.Path)
	}
	if want := []string{"bufio"}; !reflect.DeepEqual(names, want) {
		t.Errorf("renamePool = %v, want %v", names, want)
	}
}

func TestPackageDirs(t *testing.T) {
	got, err := packageDirs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if got["p"] != 1 || got["main"] != 0 {
		t.Errorf("packageDirs(testdata) = %v", got)
	}
	if _, err := packageDirs("testdata/missing"); err == nil {
		t.Error("no error for a missing tree")
	}
}

func TestTopLevelCounts(t *testing.T) {
	c := topLevelCounts(filepath.Join("testdata", "lookup", "p"))
	for name, want := range map[string]int{
		"Greeter": 1, "Greeter.Greet": 1, "greeting": 1, "platform": 2, "Max": 1, "min": 1, "hooks": 1, "missing": 0,
	} {
		if c[name] != want {
			t.Errorf("count of %s = %d, want %d", name, c[name], want)
		}
	}
}

// TestPkgLookups checks the ground truth against the fixture's source.
func TestPkgLookups(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := packages.Load(&packages.Config{Mode: loadMode, Fset: fset, Dir: "."}, "./testdata/lookup/p")
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("load: %v %v", err, pkgs)
	}
	src, _ := filepath.Abs("testdata/lookup")
	defs, calls := pkgLookups(fset, src, pkgs[0])
	got := map[string]Span{}
	for _, d := range defs {
		if d.Prompt != "where is "+d.Symbol+" defined" {
			t.Errorf("prompt %q", d.Prompt)
		}
		got[d.Symbol] = d.Def
	}
	want := map[string]Span{
		"p.Greeter":       {Path: "p/p.go", Lo: 6, Hi: 9, Line: 7},
		"p.Greeter.Greet": {Path: "p/p.go", Lo: 11, Hi: 14, Line: 12},
		"p.Greeter.Shout": {Path: "p/p.go", Lo: 16, Hi: 19, Line: 17},
		"p.greeting":      {Path: "p/p.go", Lo: 21, Hi: 23, Line: 21},
		"p.trim":          {Path: "p/p.go", Lo: 25, Hi: 25, Line: 25},
		"p.helper":        {Path: "p/p.go", Lo: 27, Hi: 28, Line: 28},
		"p.hooks":         {Path: "p/p.go", Lo: 30, Hi: 30, Line: 30},
		"p.Max":           {Path: "p/p.go", Lo: 32, Hi: 36, Line: 34},
		"p.min":           {Path: "p/p.go", Lo: 32, Hi: 36, Line: 35},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("definitions:\n got %v\nwant %v", got, want)
	}
	// platform is declared once per GOOS: not a certain answer, not asked.
	if _, ok := got["p.platform"]; ok {
		t.Error("a name declared in two files was asked about")
	}
	gotCalls := map[string][]Span{}
	for _, c := range calls {
		gotCalls[c.Symbol] = c.Calls
	}
	wantCalls := map[string][]Span{
		"p.greeting": {
			{Path: "p/p.go", Lo: 11, Hi: 14, Line: 13, Function: "Greeter.Greet"},
			{Path: "p/p.go", Lo: 16, Hi: 19, Line: 18, Function: "Greeter.Shout"},
		},
		"p.trim": {{Path: "p/p.go", Lo: 21, Hi: 23, Line: 22, Function: "greeting"}},
	}
	for _, s := range gotCalls {
		sort.Slice(s, func(i, j int) bool { return s[i].Line < s[j].Line })
	}
	if !reflect.DeepEqual(gotCalls, wantCalls) {
		t.Errorf("callers:\n got %v\nwant %v", gotCalls, wantCalls)
	}
}

// TestNegativesNeedAModel: no negative control is a command of L1's
// grammar, however much it reads like one.
// TestPhrasedNearMisses: the phrased workload's near-misses read like L1
// requests, and L1's reader declines every one (with its reason), while
// the phrased requests of each class are understood.
func TestPhrasedNearMisses(t *testing.T) {
	syms := []*Request{
		{Class: Define, Symbol: "bufio.Reader.ReadRune", Def: Span{Path: "bufio/bufio.go", Line: 10}},
		{Class: Callers, Symbol: "strings.indexFunc", Def: Span{Path: "strings/strings.go", Line: 20}},
		{Class: Rename, Symbol: "Reader.ReadRune", To: "ReadCodePoint", Def: Span{Path: "bufio/bufio.go", Line: 10, Col: 18}},
		{Class: Format, Symbol: "bufio/bufio.go"},
	}
	var reqs []*Request
	for i := 0; i < 40; i++ {
		r := *syms[i%len(syms)]
		reqs = append(reqs, &r)
	}
	near := phrase(rand.New(rand.NewPCG(1, 3)), reqs, 2*len(nearMisses))
	if len(near) != 2*len(nearMisses) {
		t.Fatalf("%d near-misses", len(near))
	}
	for _, n := range near {
		var d *l1.Declined
		if cmd, err := l1.Parse(n.Prompt); cmd != nil || (err != nil && !errors.As(err, &d)) {
			t.Errorf("L1's reader takes the near-miss %q as %#v (%v)", n.Prompt, cmd, err)
		}
	}
	phrased := 0
	for _, r := range reqs {
		if !r.Phrased {
			continue
		}
		phrased++
		if cmd, err := l1.Parse(r.Prompt); cmd == nil || err != nil {
			t.Errorf("L1's reader does not understand the phrased %s request %q: %v", r.Class, r.Prompt, err)
		}
	}
	if phrased != len(reqs)/2 {
		t.Errorf("%d of %d requests phrased, want half", phrased, len(reqs))
	}
}

func TestNegativesNeedAModel(t *testing.T) {
	syms := []*Request{{Symbol: "bufio.Reader.ReadRune", Def: Span{Path: "bufio/bufio.go"}}, {Symbol: "strings.indexFunc"}}
	negs := negatives(rand.New(rand.NewPCG(1, 1)), t.TempDir(), syms, 2*len(negativeTemplates))
	if len(negs) != 2*len(negativeTemplates) {
		t.Fatalf("%d negatives", len(negs))
	}
	seen := map[string]bool{}
	for _, n := range negs {
		seen[strings.SplitN(n.Prompt, " ", 2)[0]] = true
		var d *l1.Declined
		if cmd, err := l1.Parse(n.Prompt); cmd != nil || (err != nil && !errors.As(err, &d)) {
			t.Errorf("L1's reader takes %q as %#v (%v)", n.Prompt, cmd, err)
		}
		if !strings.Contains(n.Prompt, n.Symbol) || n.Class != Negative || n.OutBytes == 0 {
			t.Errorf("negative %+v", n)
		}
	}
	if len(seen) < 6 {
		t.Errorf("negatives start with only %d different words", len(seen))
	}
	if negatives(rand.New(rand.NewPCG(1, 1)), "", nil, 5) != nil {
		t.Error("negatives without symbols")
	}
}

func TestTokenModel(t *testing.T) {
	def := &Request{Class: Define, Prompt: strings.Repeat("x", 40), ReadBytes: 4000}
	if got, want := L4Usage(def), (energy.Usage{Input: 7010, CachedInput: 7010, Output: 360}); got != want {
		t.Errorf("L4Usage(define) = %+v, want %+v", got, want)
	}
	neg := &Request{Class: Negative, Prompt: "fix it", ReadBytes: 400, OutBytes: 2000}
	if got, want := L4Usage(neg), (energy.Usage{Input: 6102, CachedInput: 12204, Output: 950}); got != want {
		t.Errorf("L4Usage(negative) = %+v, want %+v", got, want)
	}
	if got := L3Usage(neg, 1<<30); got.Input != l3Context {
		t.Errorf("L3Usage is not clipped to the context window: %+v", got)
	}
	frontier := (&energy.Table{}).Energy("claude-sonnet-4-5", L4Usage(neg))
	small := (&energy.Table{}).Energy("qwen2.5-coder:7b", L3Usage(neg, 0))
	if frontier.Class != energy.Frontier || small.Class != energy.Small || small.UJ >= frontier.UJ {
		t.Errorf("L3 %+v, L4 %+v", small, frontier)
	}
}

func TestScriptedStage(t *testing.T) {
	reqs := make([]*Request, 400)
	for i := range reqs {
		reqs[i] = &Request{ID: i + 1, Class: Negative, Prompt: "write tests for x", OutBytes: 100}
	}
	var cur *Request
	s := &scripted{tier: core.L3, model: "qwen2.5-coder:7b", share: 0.4, seed: 9, table: &energy.Table{}, cur: func() *Request { return cur }}
	closed := 0
	for _, r := range reqs {
		cur = r
		res, err := s.TryResolve(context.Background(), &tiers.Request{Prompt: r.Prompt})
		if err != nil {
			t.Fatal(err)
		}
		if s.usage.Zero() || s.uj() == 0 {
			t.Fatal("a call spent nothing")
		}
		if res != nil {
			closed++
			again, _ := s.TryResolve(context.Background(), &tiers.Request{Prompt: r.Prompt})
			if again == nil {
				t.Fatal("the script is not deterministic")
			}
		}
	}
	if closed < 120 || closed > 200 {
		t.Errorf("a 0.4 share closed %d of 400", closed)
	}
	cur = nil
	if _, err := s.TryResolve(context.Background(), &tiers.Request{Prompt: "?"}); err == nil {
		t.Error("no error for a request outside the workload")
	}
}

func stdPkgFixture(t *testing.T, paths ...string) []stdPkg {
	t.Helper()
	var out []stdPkg
	for _, p := range paths {
		dir := filepath.Join(runtime.GOROOT(), "src", filepath.FromSlash(p))
		m, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		var files []string
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, filepath.Base(f))
			}
		}
		out = append(out, stdPkg{Path: p, Name: filepath.Base(p), Dir: dir, GoFiles: files})
	}
	return out
}

// TestFormatsGroundTruth builds format requests from toolchain files: the
// workspace holds the perturbed file, the ground truth is gofmt's output,
// and L1's grammar reads the prompt as a format of exactly that file.
func TestFormatsGroundTruth(t *testing.T) {
	gofmt := filepath.Join(runtime.GOROOT(), "bin", "gofmt")
	if _, err := os.Stat(gofmt); err != nil {
		t.Fatalf("no gofmt in GOROOT/bin: %v", err)
	}
	src := filepath.Join(runtime.GOROOT(), "src")
	reqs, root, _, err := formats(context.Background(), rand.New(rand.NewPCG(1, 1)), gofmt, src, t.TempDir(), stdPkgFixture(t, "container/list", "container/ring", "text/tabwriter"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	prior, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		cmd, err := l1.Parse(r.Prompt)
		f, ok := cmd.(l1.Format)
		if err != nil || !ok || f.Glob != r.Symbol {
			t.Errorf("%q parses as %#v, %v", r.Prompt, cmd, err)
		}
		orig, _ := os.ReadFile(filepath.Join(src, filepath.FromSlash(r.Symbol)))
		if bytes.Equal(prior[r.Symbol], orig) || !bytes.Equal(r.Want[r.Symbol], orig) {
			t.Errorf("%s: the workspace holds the original, or gofmt's output is not it", r.Symbol)
		}
		if r.ReadBytes == 0 || r.OutBytes == 0 {
			t.Errorf("%s: token model inputs %d, %d", r.Symbol, r.ReadBytes, r.OutBytes)
		}
	}
}

// TestRenamesGroundTruth runs gopls for real on copies of two toolchain
// packages. In CI a missing gopls fails; locally it skips.
func TestRenamesGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gopls")
	}
	gopls := goplsPath(context.Background())
	if gopls == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("gopls is not installed: .ci/setup.d/40-acp.sh installs it")
		}
		t.Skip("gopls is not installed (go install golang.org/x/tools/gopls@v0.23.0)")
	}
	reqs, root, _, err := renames(context.Background(), rand.New(rand.NewPCG(1, 1)), os.Environ(), gopls, t.TempDir(), stdPkgFixture(t, "container/list", "container/ring"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	prior, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if cmd, err := l1.Parse(r.Prompt); err != nil || cmd == nil {
			t.Errorf("%q is not a rename to L1: %v", r.Prompt, err)
		}
		if sameFiles(prior, r.Want) || len(r.Want) != len(prior) {
			t.Errorf("%q: the ground truth is the prior tree, or another set of files", r.Prompt)
		}
	}
	if none, _, notes, err := renames(context.Background(), rand.New(rand.NewPCG(1, 1)), os.Environ(), "", t.TempDir(), nil, 3); err != nil || none != nil || len(notes) != 1 {
		t.Errorf("without gopls: %v %v %v", none, notes, err)
	}
}
