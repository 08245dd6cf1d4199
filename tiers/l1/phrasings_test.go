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
	"strings"
	"sync"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/ask"
	"github.com/joulehook/joule/tiers/l2"
)

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

// TestPhrasings puts every request of the held-out set through the real
// L1 and L2 stages over GOROOT's net/http and counts what closes. A close
// that is wrong (another symbol, another place, a definition drowned in
// uses, or a request that must not close) is a false close: none is allowed.
func TestPhrasings(t *testing.T) {
	cases := readPhrasings(t)
	root := filepath.Join(runtime.GOROOT(), "src", "net", "http")
	if cases[0].Go != runtime.Version() {
		t.Skipf("the set's positions are %s's; this is %s (regenerate with go run gen.go)", cases[0].Go, runtime.Version())
	}
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
	casc, err := tiers.New(&Stage{Key: ed25519.NewKeyFromSeed(make([]byte, 32)), Snapshot: snap}, &l2.Stage{Index: ix})
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ n, correct, falseClose, through int }
	count := map[string]*tally{}
	for _, c := range cases {
		if testing.Short() && c.Kind == "rename" {
			continue // each type-checks net/http: minutes in all
		}
		if count[c.Kind] == nil {
			count[c.Kind] = &tally{}
		}
		tl := count[c.Kind]
		tl.n++
		res, err := casc.Run(ctx, &tiers.Request{Prompt: c.Prompt, Root: root})
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if !res.Closed() {
			tl.through++
			t.Logf("through %s %q: %s", c.ID, c.Prompt, why(res))
			continue
		}
		if bad := wrong(c, res); bad != "" {
			tl.falseClose++
			t.Errorf("FALSE CLOSE %s %q at %s: %s\n%s", c.ID, c.Prompt, res.Closing, bad, clip(res.Resolution.Answer))
			continue
		}
		tl.correct++
	}
	kinds := make([]string, 0, len(count))
	for k := range count {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		tl := count[k]
		t.Logf("%-10s %3d requests: %3d closed correctly, %d false closes, %3d fell through", k, tl.n, tl.correct, tl.falseClose, tl.through)
	}
	for _, k := range []string{"definition", "callers"} {
		if tl := count[k]; tl.correct*100 < 95*tl.n {
			t.Errorf("%s: %d of %d closed correctly, want at least 95%%", k, tl.correct, tl.n)
		}
	}
}

// wrong says why a close is not the expected answer, or "".
func wrong(c phrasing, res *tiers.Result) string {
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

func why(res *tiers.Result) string {
	var out []string
	for _, c := range res.Consulted {
		if c.Err != nil {
			out = append(out, fmt.Sprintf("%s: %v", c.Tier, c.Err))
		}
	}
	return clip(strings.Join(out, "; "))
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func readPhrasings(t *testing.T) []phrasing {
	f, err := os.Open(filepath.Join("..", "testdata", "phrasings", "nethttp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []phrasing
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p phrasing
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if len(out) < 300 {
		t.Fatalf("%d phrasings, want at least 300", len(out))
	}
	return out
}
