package l1

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l2"
)

// heldOutFloor is what one cascade closed correctly when the held-out set
// was written, per kind, so a change that reads people worse fails. Raise
// the floors as the reader improves; the bar is 297/300 definitions
// and 99/100 callers, and every "none" request must fall through.
type heldOutFloor struct{ definition, callers, none int }

// Measured 2026-12-07, go1.26.8, GOROOT/src/net/http, when the set was
// written:
//
//	L1+L2: definition 252/300 (5 false, 43 through), callers 96/100 (0 false, 4 through), none 39/40 (1 false)
//	L2:    definition 240/300 (0 false, 60 through), callers 54/100 (2 false, 44 through), none 40/40
//
// and after the reader learnt the classes its author reported (issue 36:
// behaviour questions, definitions drowned in uses, file/package/kind
// hints, T's M and M on T, receiver variables, build twins, editor jargon):
//
//	L1+L2: definition 290/300 (0 false, 10 through), callers 99/100 (0 false, 1 through), none 40/40
//	L2:    definition 283/300 (0 false, 17 through), callers 89/100 (0 false, 11 through), none 40/40
var heldOutFloors = map[string]heldOutFloor{
	"L1+L2": {definition: 290, callers: 99, none: 40},
	"L2":    {definition: 283, callers: 89, none: 40},
}

// heldOutKnownFalse lists the false closes still measured, by request id,
// so that the test fails on any new one while these are fixed. The goal is
// an empty list: a fixed one is reported, remove it.
var heldOutKnownFalse = map[string]map[string]bool{
	"L1+L2": {},
	"L2":    {},
}

// heldOutCase is one line of tiers/testdata/heldout/nethttp.jsonl, written
// without sight of the reader (see that directory's gen.go and .src).
type heldOutCase struct {
	ID       string       `json:"id"`
	Request  string       `json:"request"`
	Kind     string       `json:"kind"` // definition | callers | none
	Symbol   string       `json:"symbol"`
	Expected []heldOutLoc `json:"expected"`
	Declared []heldOutLoc `json:"declared"`
	Outcome  string       `json:"outcome"`
	Go       string       `json:"go"`
}

type heldOutLoc struct {
	File string `json:"file"` // relative to GOROOT/src
	Line int    `json:"line"`
	In   string `json:"in"`
	InAt int    `json:"in_at"`
	Test bool   `json:"test"`
}

// heldOutMaxDefinitionSites is how many places a definition answer may cite:
// more is a list, not an answer.
const heldOutMaxDefinitionSites = 3

// TestHeldOutPhrasings puts the held-out set through the same cascade as
// TestPhrasings and scores each request: closed correctly, closed wrongly
// (a false close), or fell through. Kind "none" must not close.
func TestHeldOutPhrasings(t *testing.T) {
	cases := readHeldOut(t)
	src := filepath.Join(runtime.GOROOT(), "src")
	root := filepath.Join(src, "net", "http")
	if cases[0].Go != runtime.Version() {
		t.Skipf("the set's positions are %s's; this is %s (regenerate: cd tiers/testdata/heldout && go run gen.go)", cases[0].Go, runtime.Version())
	}
	memoLoad(t)
	ctx := context.Background()
	ix, err := l2.Open(filepath.Join(t.TempDir(), "ix.db"), root)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Update(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var (
		once  sync.Once
		files core.Files
		ferr  error
	)
	snap := func(context.Context, string) (core.Files, error) {
		once.Do(func() { files, ferr = core.ReadDir(root) })
		return files, ferr
	}
	l1 := &Stage{Key: ed25519.NewKeyFromSeed(make([]byte, 32)), Snapshot: snap}
	for _, pass := range []struct {
		name   string
		stages []tiers.Stage
	}{
		{"L1+L2", []tiers.Stage{l1, &l2.Stage{Index: ix}}},
		{"L2", []tiers.Stage{&l2.Stage{Index: ix}}},
	} {
		t.Run(pass.name, func(t *testing.T) {
			casc, err := tiers.New(pass.stages...)
			if err != nil {
				t.Fatal(err)
			}
			heldOutPass(t, casc, cases, src, root, heldOutFloors[pass.name], heldOutKnownFalse[pass.name])
		})
	}
}

// heldOutPass runs every case through casc and checks the tallies against
// floor and the known false closes.
func heldOutPass(t *testing.T, casc *tiers.Cascade, cases []heldOutCase, src, root string, floor heldOutFloor, known map[string]bool) {
	ctx := context.Background()
	type tally struct{ n, correct, falseClose, through int }
	count := map[string]*tally{}
	byPhrasing := map[string]*tally{} // kind + " phrasing 1|2"
	byTier := map[string]int{}
	seen := map[string]int{}
	var falseIDs []string
	for _, c := range cases {
		// The set gives each definition and callers symbol two phrasings,
		// in order; "none" requests stand alone.
		seen[c.Kind+c.Symbol]++
		ph := fmt.Sprintf("%s phrasing %d", c.Kind, seen[c.Kind+c.Symbol])
		if c.Kind == "none" {
			ph = "none (one phrasing)"
		}
		for _, k := range []string{c.Kind, ph} {
			m := count
			if k == ph {
				m = byPhrasing
			}
			if m[k] == nil {
				m[k] = &tally{}
			}
			m[k].n++
		}
		req := &tiers.Request{Prompt: c.Request, Root: root}
		res, err := casc.Run(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if !res.Closed() {
			if c.Kind == "none" {
				count[c.Kind].correct++
				byPhrasing[ph].correct++
			} else {
				count[c.Kind].through++
				byPhrasing[ph].through++
			}
			t.Logf("through %s %q: %s", c.ID, c.Request, heldOutWhy(res, req))
			continue
		}
		byTier[fmt.Sprintf("%s closed at %s", c.Kind, res.Closing)]++
		if bad := heldOutWrong(c, res, src, root); bad != "" {
			count[c.Kind].falseClose++
			byPhrasing[ph].falseClose++
			falseIDs = append(falseIDs, c.ID)
			report := t.Errorf
			if known[c.ID] {
				report = t.Logf
			}
			report("FALSE CLOSE %s %q at %s: %s\n%s", c.ID, c.Request, res.Closing, bad, heldOutClip(res.Resolution.Answer))
			continue
		}
		if known[c.ID] {
			t.Logf("%s no longer closes falsely: remove it from heldOutKnownFalse", c.ID)
		}
		count[c.Kind].correct++
		byPhrasing[ph].correct++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %5s %8s %12s %13s\n", "kind", "n", "correct", "false close", "fell through")
	for _, m := range []map[string]*tally{count, byPhrasing} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			tl := m[k]
			fmt.Fprintf(&b, "%-22s %5d %8d %12d %13d\n", k, tl.n, tl.correct, tl.falseClose, tl.through)
		}
	}
	tiersSeen := make([]string, 0, len(byTier))
	for k := range byTier {
		tiersSeen = append(tiersSeen, k)
	}
	sort.Strings(tiersSeen)
	for _, k := range tiersSeen {
		fmt.Fprintf(&b, "%s: %d\n", k, byTier[k])
	}
	fmt.Fprintf(&b, "false closes: %s\n", strings.Join(falseIDs, " "))
	t.Log(b.String())
	for _, f := range []struct {
		kind  string
		floor int
	}{{"definition", floor.definition}, {"callers", floor.callers}, {"none", floor.none}} {
		correct := 0
		if tl := count[f.kind]; tl != nil {
			correct = tl.correct
		}
		if correct < f.floor {
			t.Errorf("%s: %d closed correctly, below the floor of %d", f.kind, correct, f.floor)
		}
	}
}

// heldOutSite matches a cited place: path.go:LINE, path.go:LINE:COL or
// path.go:LINE-END, with or without a leading directory.
var heldOutSite = regexp.MustCompile(`([A-Za-z0-9_./-]+\.go):(\d+)(?:-(\d+))?`)

type heldOutCite struct {
	file       string // relative to GOROOT/src
	start, end int
}

func heldOutCites(answer, src, root string) []heldOutCite {
	var out []heldOutCite
	seen := map[heldOutCite]bool{}
	for _, m := range heldOutSite.FindAllStringSubmatch(answer, -1) {
		p := m[1]
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			continue
		}
		c := heldOutCite{file: filepath.ToSlash(rel)}
		c.start, _ = strconv.Atoi(m[2])
		c.end = c.start
		if m[3] != "" {
			c.end, _ = strconv.Atoi(m[3])
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func (c heldOutCite) covers(file string, line int) bool {
	return c.file == file && c.start <= line && line <= c.end
}

func heldOutCoveredBy(cites []heldOutCite, file string, line int) bool {
	for _, c := range cites {
		if c.covers(file, line) {
			return true
		}
	}
	return false
}

// heldOutWrong says why a close is not the expected answer, or "".
func heldOutWrong(c heldOutCase, res *tiers.Result, src, root string) string {
	if c.Kind == "none" {
		return "must not close: " + c.Outcome
	}
	if res.Resolution == nil || res.Resolution.Op != nil {
		return "closed with an edit, not an answer"
	}
	cites := heldOutCites(res.Resolution.Answer, src, root)
	if len(cites) == 0 {
		return "the answer cites no file:line"
	}
	switch c.Kind {
	case "definition":
		// The first place cited is the answer; a few more (a use or two
		// shown for context) are tolerated, a list is not.
		if len(cites) > heldOutMaxDefinitionSites {
			return fmt.Sprintf("cites %d places for one definition", len(cites))
		}
		for _, e := range c.Expected {
			if cites[0].covers(e.File, e.Line) {
				return ""
			}
		}
		return fmt.Sprintf("cites %s:%d first, not a declaration of %s (%s)", cites[0].file, cites[0].start, c.Symbol, heldOutLocs(c.Expected))
	case "callers":
		// A cite is right when it is a use, the function holding a use, or
		// the symbol's own declaration; every caller outside tests must be cited.
		for _, ct := range cites {
			ok := false
			for _, e := range c.Expected {
				ok = ok || ct.covers(e.File, e.Line) || ct.covers(e.File, e.InAt)
			}
			for _, d := range c.Declared {
				ok = ok || ct.covers(d.File, d.Line)
			}
			if !ok {
				return fmt.Sprintf("cites %s:%d, which neither uses %s nor holds a use", ct.file, ct.start, c.Symbol)
			}
		}
		var missed []string
		for _, e := range c.Expected {
			if !e.Test && !heldOutCoveredBy(cites, e.File, e.Line) && !heldOutCoveredBy(cites, e.File, e.InAt) {
				missed = append(missed, fmt.Sprintf("%s:%d in %s", e.File, e.Line, e.In))
			}
		}
		if len(missed) > 0 {
			return "misses callers " + strings.Join(missed, ", ")
		}
		return ""
	}
	return "unknown kind " + c.Kind
}

func heldOutLocs(ls []heldOutLoc) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprintf("%s:%d", l.File, l.Line)
	}
	return strings.Join(s, ", ")
}

// heldOutWhy says what each consulted tier did with a request that fell
// through, and the best snippet L2 handed on, if any.
func heldOutWhy(res *tiers.Result, req *tiers.Request) string {
	var parts []string
	for _, c := range res.Consulted {
		switch {
		case c.Denied != nil:
			parts = append(parts, fmt.Sprintf("%s denied: %v", c.Tier, c.Denied))
		case c.Err != nil:
			parts = append(parts, fmt.Sprintf("%s: %v", c.Tier, c.Err))
		default:
			parts = append(parts, fmt.Sprintf("%s: no close", c.Tier))
		}
	}
	if len(req.Context) > 0 {
		s := req.Context[0]
		parts = append(parts, fmt.Sprintf("best snippet %s:%d %s (%s)", s.Path, s.StartLine, s.Symbol, s.Why))
	}
	return strings.Join(parts, "; ")
}

func heldOutClip(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

func readHeldOut(t *testing.T) []heldOutCase {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "heldout", "nethttp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []heldOutCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c heldOutCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("nethttp.jsonl: %v", err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("nethttp.jsonl is empty")
	}
	return cases
}
