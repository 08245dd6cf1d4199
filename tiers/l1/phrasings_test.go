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
	"github.com/joulehook/joule/tiers/ask"
	"github.com/joulehook/joule/tiers/l2"
)

// Three sets of requests on GOROOT/src/net/http measure how the reader
// reads people, through one runner (runPhrasings):
//
//   - tiers/testdata/phrasings/nethttp.jsonl (TestPhrasings): written before
//     the reader it measures, with renames and formats besides look-ups;
//   - tiers/testdata/heldout/nethttp.jsonl (TestHeldOutPhrasings): written by
//     a session that never opened the reader, two phrasings per symbol;
//   - tiers/testdata/heldout/styles.jsonl (TestStylePhrasings): styles the
//     other two do not use (typos, code fences, receivers, lower-cased
//     names, second person, one-word requests, non-native English, two
//     symbols with one target, names that do not exist), written after
//     the reader was read, so a check against fitting the held-out set
//     rather than a held-out set itself.
//
// Each request closes correctly, closes wrongly (a false close: never
// allowed but for the listed known ones), or falls through.

// phraseFloor is how many requests of each kind must close correctly (and
// for "none", fall through): what the reader did when last measured, so a
// change that reads people worse fails. Raise them as the reader improves.
type phraseFloor map[string]int

// phraseCase is one request of a set and how its answer is judged.
type phraseCase struct {
	ID, Request string
	Kind        string // definition | callers | none | rename | format | any kind that must not close
	Group       string // a finer tally: the phrasing or style
	MustNot     bool   // the request must fall through: not a look-up, or no one symbol
	// wrong says why a close is not the expected answer, or "".
	wrong func(res *tiers.Result) string
}

// phraseSet is one data set and the passes it is run through.
type phraseSet struct {
	cases  []phraseCase
	passes []string // "L1+L2", "L2"
	floors map[string]phraseFloor
	// knownFalse lists false closes still measured, by pass and request id:
	// the test fails on any other. The goal is none.
	knownFalse map[string]map[string]bool
	skip       func(phraseCase) bool
}

// netHTTP is the tree the sets are written against.
func netHTTP() (src, root string) {
	src = filepath.Join(runtime.GOROOT(), "src")
	return src, filepath.Join(src, "net", "http")
}

// runPhrasings puts every case of set through the real L1 and L2 stages
// over GOROOT's net/http, once per pass, and checks the floors.
func runPhrasings(t *testing.T, set phraseSet) {
	_, root := netHTTP()
	memoLoad(t) // net/http is read-only: one type check serves every look-up
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
	for _, pass := range set.passes {
		stages := []tiers.Stage{&l2.Stage{Index: ix}}
		if pass == "L1+L2" {
			stages = append([]tiers.Stage{l1}, stages...)
		}
		t.Run(pass, func(t *testing.T) {
			casc, err := tiers.New(stages...)
			if err != nil {
				t.Fatal(err)
			}
			phrasePass(t, casc, set, root, set.floors[pass], set.knownFalse[pass])
		})
	}
}

func phrasePass(t *testing.T, casc *tiers.Cascade, set phraseSet, root string, floor phraseFloor, known map[string]bool) {
	ctx := context.Background()
	type tally struct{ n, correct, falseClose, through int }
	count := map[string]*tally{}
	byGroup := map[string]*tally{}
	byTier := map[string]int{}
	var falseIDs []string
	for _, c := range set.cases {
		if set.skip != nil && set.skip(c) {
			continue
		}
		tls := []*tally{}
		for _, k := range []struct {
			m   map[string]*tally
			key string
		}{{count, c.Kind}, {byGroup, c.Kind + " " + c.Group}} {
			if k.m[k.key] == nil {
				k.m[k.key] = &tally{}
			}
			k.m[k.key].n++
			tls = append(tls, k.m[k.key])
		}
		add := func(f func(*tally)) {
			for _, tl := range tls {
				f(tl)
			}
		}
		req := &tiers.Request{Prompt: c.Request, Root: root}
		res, err := casc.Run(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if !res.Closed() {
			if c.MustNot {
				add(func(tl *tally) { tl.correct++ }) // must not close, and did not
			} else {
				add(func(tl *tally) { tl.through++ })
			}
			t.Logf("through %s %q: %s", c.ID, c.Request, phraseWhy(res, req))
			continue
		}
		byTier[fmt.Sprintf("%s closed at %s", c.Kind, res.Closing)]++
		if bad := c.wrong(res); bad != "" {
			add(func(tl *tally) { tl.falseClose++ })
			falseIDs = append(falseIDs, c.ID)
			report := t.Errorf
			if known[c.ID] {
				report = t.Logf
			}
			report("FALSE CLOSE %s %q at %s: %s\n%s", c.ID, c.Request, res.Closing, bad, clip(res.Resolution.Answer))
			continue
		}
		if known[c.ID] {
			t.Logf("%s no longer closes falsely: remove it from the known false closes", c.ID)
		}
		add(func(tl *tally) { tl.correct++ })
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-32s %5s %8s %12s %13s\n", "kind", "n", "correct", "false close", "fell through")
	for _, m := range []map[string]*tally{count, byGroup} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			tl := m[k]
			fmt.Fprintf(&b, "%-32s %5d %8d %12d %13d\n", k, tl.n, tl.correct, tl.falseClose, tl.through)
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
	kinds := make([]string, 0, len(floor))
	for k := range floor {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		correct := 0
		if tl := count[k]; tl != nil {
			correct = tl.correct
		}
		if correct < floor[k] {
			t.Errorf("%s: %d closed correctly, below the floor of %d", k, correct, floor[k])
		}
	}
}

// TestPhrasings runs tiers/testdata/phrasings/nethttp.jsonl. Renames
// type-check net/http each: minutes in all, left out with -short.
func TestPhrasings(t *testing.T) {
	cases := readPhrasings(t)
	runPhrasings(t, phraseSet{
		cases:  cases,
		passes: []string{"L1+L2"},
		// Measured 2026-12-07 (reader3), go1.26.8: every one; renames
		// (15, left out with -short) have no floor here.
		floors: map[string]phraseFloor{"L1+L2": {"definition": 234, "callers": 96, "format": 8, "ambiguous": 30, "other": 25}},
		skip:   func(c phraseCase) bool { return testing.Short() && c.Kind == "rename" },
	})
}

// TestHeldOutPhrasings runs the held-out set, tiers/testdata/heldout/
// nethttp.jsonl, through L1+L2 and through L2 alone.
//
// Measured 2026-12-07, go1.26.8, when the set was written:
//
//	L1+L2: definition 252/300 (5 false, 43 through), callers 96/100 (0 false, 4 through), none 39/40 (1 false)
//	L2:    definition 240/300 (0 false, 60 through), callers 54/100 (2 false, 44 through), none 40/40
//
// after the reader learnt the classes its author reported (issue 36:
// behaviour questions, definitions drowned in uses, file/package/kind
// hints, T's M and M on T, receiver variables, build twins, editor jargon):
//
//	L1+L2: definition 290/300 (0 false, 10 through), callers 99/100 (0 false, 1 through), none 40/40
//	L2:    definition 283/300 (0 false, 17 through), callers 89/100 (0 false, 11 through), none 40/40
//
// and after the classes of those 10 misses (reader3: plain words beside a
// name, top-level over member namesakes, "T M method", "in pkg", asides
// in brackets, punctuation words, "the X handler func"):
//
//	L1+L2: definition 300/300 (0 false), callers 99/100 (0 false, 1 through), none 40/40
//	L2:    definition 290/300 (0 false, 10 through), callers 89/100 (0 false, 11 through), none 40/40
func TestHeldOutPhrasings(t *testing.T) {
	runPhrasings(t, phraseSet{
		cases:  readHeldOut(t, "nethttp.jsonl", true),
		passes: []string{"L1+L2", "L2"},
		floors: map[string]phraseFloor{
			"L1+L2": {"definition": 300, "callers": 99, "none": 40},
			"L2":    {"definition": 290, "callers": 89, "none": 40},
		},
	})
}

// TestStylePhrasings runs tiers/testdata/heldout/styles.jsonl: its floors
// are its own (see the comment on the sets above). Measured 2026-12-07,
// go1.26.8, L1+L2: with the reader before the set was written, definition
// 74/95, callers 44/59, none 16/16; now (the floors) definition 91/95,
// callers 58/59, none 16/16; no false close in either.
func TestStylePhrasings(t *testing.T) {
	runPhrasings(t, phraseSet{
		cases:  readHeldOut(t, "styles.jsonl", false),
		passes: []string{"L1+L2"},
		floors: map[string]phraseFloor{"L1+L2": {"definition": 91, "callers": 58, "none": 16}},
	})
}

// phrasing is one line of tiers/testdata/phrasings/nethttp.jsonl (see
// gen.go there: the set was written before the reader it measures).
type phrasing struct {
	ID, Kind, Prompt, Intent, Symbol, File string
	Line                                   int
	NewName                                string `json:"new_name"`
	Close                                  bool
	Go                                     string
}

// cited is every file:line an answer cites, in order, without repeats;
// "(… more lines, to f.go:N)", the end of a shown snippet, is not a citation.
var citeRE = regexp.MustCompile(`(to )?([\w./-]+\.go):(\d+)`)

func cited(answer string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range citeRE.FindAllStringSubmatch(answer, -1) {
		if m[1] != "" {
			continue
		}
		loc := m[2] + ":" + m[3]
		if !seen[loc] {
			seen[loc] = true
			out = append(out, loc)
		}
	}
	return out
}

// wrong says why a close is not the expected answer, or "".
func (c phrasing) wrong(res *tiers.Result) string {
	if !c.Close {
		return "this request must not close"
	}
	r := res.Resolution
	bare := c.Symbol[strings.LastIndex(c.Symbol, ".")+1:]
	switch c.Intent {
	case "definition":
		locs := cited(r.Answer)
		want := fmt.Sprintf("%s:%d", c.File, c.Line)
		switch {
		case r.Op != nil:
			return "a look-up changed the tree"
		case len(locs) == 0 || locs[0] != want:
			return fmt.Sprintf("first cites %v, want %s", first(locs), want)
		case len(locs) > ask.MaxDefinitionSites:
			return fmt.Sprintf("cites %d places for one definition", len(locs))
		}
	case "callers":
		head, _, _ := strings.Cut(r.Answer, "\n")
		switch {
		case r.Op != nil:
			return "a look-up changed the tree"
		case !strings.Contains(head, bare):
			return "the answer is about another symbol"
		case len(cited(r.Answer)) < 2:
			return "no call site cited"
		}
	case "rename":
		if r.Op == nil || len(r.Op.Op.Edits) == 0 {
			return "a rename that changes nothing"
		}
	case "format":
		if !strings.Contains(r.Answer, "format") && r.Op == nil {
			return "not a format"
		}
	}
	return ""
}

func first(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return s[0]
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

func readPhrasings(t *testing.T) []phraseCase {
	f, err := os.Open(filepath.Join("..", "testdata", "phrasings", "nethttp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []phraseCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p phrasing
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if p.Go != runtime.Version() {
			t.Skipf("the set's positions are %s's; this is %s (regenerate with go run gen.go)", p.Go, runtime.Version())
		}
		out = append(out, phraseCase{ID: p.ID, Request: p.Prompt, Kind: p.Kind, MustNot: !p.Close, wrong: p.wrong})
	}
	if len(out) < 300 {
		t.Fatalf("%d phrasings, want at least 300", len(out))
	}
	return out
}

// heldOutCase is one line of a tiers/testdata/heldout set (see gen.go
// there).
type heldOutCase struct {
	ID       string       `json:"id"`
	Request  string       `json:"request"`
	Kind     string       `json:"kind"` // definition | callers | none
	Symbol   string       `json:"symbol"`
	Expected []heldOutLoc `json:"expected"`
	Declared []heldOutLoc `json:"declared"`
	Outcome  string       `json:"outcome"`
	Go       string       `json:"go"`
	Style    string       `json:"style"`
}

type heldOutLoc struct {
	File string `json:"file"` // relative to GOROOT/src
	Line int    `json:"line"`
	In   string `json:"in"`
	InAt int    `json:"in_at"`
	Test bool   `json:"test"`
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

// wrong says why a close is not the expected answer, or "".
func (c heldOutCase) wrong(res *tiers.Result) string {
	src, root := netHTTP()
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
		if len(cites) > ask.MaxDefinitionSites {
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

// phraseWhy says what each consulted tier did with a request that fell
// through, and the best snippet L2 handed on, if any.
func phraseWhy(res *tiers.Result, req *tiers.Request) string {
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

// readHeldOut reads one set under tiers/testdata/heldout. With phrasings,
// each definition and callers symbol has its phrasings in order and the
// tally is per phrasing; otherwise per style.
func readHeldOut(t *testing.T, name string, phrasings bool) []phraseCase {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "heldout", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []phraseCase
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c heldOutCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Go != runtime.Version() {
			t.Skipf("the set's positions are %s's; this is %s (regenerate: cd tiers/testdata/heldout && go run gen.go)", c.Go, runtime.Version())
		}
		group := c.Style
		if phrasings {
			seen[c.Kind+c.Symbol]++
			group = fmt.Sprintf("phrasing %d", seen[c.Kind+c.Symbol])
			if c.Kind == "none" {
				group = "(one phrasing)"
			}
		}
		cases = append(cases, phraseCase{ID: c.ID, Request: c.Request, Kind: c.Kind, Group: group, MustNot: c.Kind == "none", wrong: c.wrong})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s is empty", name)
	}
	return cases
}
