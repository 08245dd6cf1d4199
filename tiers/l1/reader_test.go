package l1

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// memoLoad memoises loadPackages for one test: the fixture is read-only,
// so every request of the table sees the same packages.
func memoLoad(t *testing.T) {
	type loaded struct {
		fset *token.FileSet
		pkgs []*packages.Package
		err  error
	}
	var mu sync.Mutex
	memo := map[string]loaded{}
	orig := loadPackages
	loadPackages = func(cfg *packages.Config, patterns ...string) ([]*packages.Package, error) {
		if len(cfg.Overlay) > 0 {
			return orig(cfg, patterns...)
		}
		k := cfg.Dir + "\x00" + strings.Join(patterns, "\x00")
		mu.Lock()
		defer mu.Unlock()
		l, ok := memo[k]
		if !ok {
			l.pkgs, l.err = orig(cfg, patterns...)
			l.fset = cfg.Fset
			memo[k] = l
		}
		cfg.Fset = l.fset
		return l.pkgs, l.err
	}
	t.Cleanup(func() { loadPackages = orig })
}

// shopFixture copies testdata/shop, a small multi-package module, to a
// temporary directory; its *.go.in files become *.go (kept apart so that
// the repository's gofmt check leaves their bad formatting alone).
func shopFixture(t testing.TB) string {
	root := cloneDir(t, filepath.Join("testdata", "shop"))
	ins, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.go.in"))
	for _, in := range ins {
		if err := os.Rename(in, strings.TrimSuffix(in, ".in")); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type tableRow struct {
	line                   int
	verdict, prompt, wants string
}

func readTable(t testing.TB) []tableRow {
	f, err := os.Open(filepath.Join("testdata", "requests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []tableRow
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		parts := strings.Split(l, "\t")
		if len(parts) != 3 || (parts[0] != "close" && parts[0] != "miss") {
			t.Fatalf("requests.txt:%d: want verdict<TAB>request<TAB>expectation: %q", n, l)
		}
		rows = append(rows, tableRow{n, parts[0], parts[1], parts[2]})
	}
	return rows
}

// class is a row's request class, for the figures: its expectation's
// first word for a close, the reader's verb for a miss.
func (r tableRow) class() string {
	if r.verdict == "close" {
		return strings.Fields(r.wants)[0]
	}
	switch w := strings.ToLower(strings.Fields(r.prompt + " x")[0]); w {
	case "rename", "format", "gofmt", "replace", "find", "where", "who", "extract", "inline":
		return w
	}
	return "other"
}

// needsGopls reports whether a row goes to gopls: a refactoring.
func (r tableRow) needsGopls() bool {
	switch r.class() {
	case "refactor", "extract", "inline":
		return true
	}
	return false
}

// TestRequestTable puts every request of testdata/requests.txt to the L1
// stage on the shop fixture: a request that must close closes with the
// meaning the table gives it (the declaration renamed, the definition or
// call cited, the files formatted or replaced), and a near-miss does not
// close, with its reason. It logs the figures per class.
func TestRequestTable(t *testing.T) {
	memoLoad(t)
	rows := readTable(t)
	if len(rows) < 300 {
		t.Fatalf("the table has %d requests, want at least 300", len(rows))
	}
	root := shopFixture(t)
	files, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	st := &Stage{Key: key, Snapshot: func(context.Context, string) (core.Files, error) { return files, nil }}
	type tally struct{ n, closed, correct, falseClose, missed int }
	by := map[string]*tally{}
	_, noGopls := lsp.Look(lsp.Gopls.Name)
	if noGopls != nil && os.Getenv("CI") != "" {
		t.Errorf("gopls is not installed: .ci/setup.d/40-acp.sh installs it; the refactoring rows need it")
	}
	skipped := 0
	// A refactoring goes to gopls, seconds each: the distinct ones are
	// resolved once, a few at a time, before the table is walked (the
	// same command on the same tree gives the same op).
	type outcome struct {
		res *tiers.Resolution
		err error
	}
	memo := map[string]*outcome{}
	if noGopls == nil {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 3)
		var mu sync.Mutex
		for _, r := range rows {
			c, err := Read(r.prompt)
			if _, ok := c.(Refactor); !ok || err != nil {
				continue
			}
			k := fmt.Sprintf("%#v", c)
			if memo[k] != nil {
				continue
			}
			o := &outcome{}
			memo[k] = o
			wg.Add(1)
			go func(prompt string) {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				res, err := st.TryResolve(context.Background(), &tiers.Request{Prompt: prompt, Root: root})
				mu.Lock()
				o.res, o.err = res, err
				mu.Unlock()
			}(r.prompt)
		}
		wg.Wait()
	}
	for _, r := range rows {
		if noGopls != nil && r.needsGopls() {
			skipped++
			continue
		}
		tl := by[r.verdict+" "+r.class()]
		if tl == nil {
			tl = &tally{}
			by[r.verdict+" "+r.class()] = tl
		}
		tl.n++
		var res *tiers.Resolution
		var err error
		if c, _ := Read(r.prompt); c != nil && memo[fmt.Sprintf("%#v", c)] != nil {
			o := memo[fmt.Sprintf("%#v", c)]
			res, err = o.res, o.err
		} else {
			res, err = st.TryResolve(context.Background(), &tiers.Request{Prompt: r.prompt, Root: root})
		}
		if res != nil {
			tl.closed++
		}
		switch {
		case r.verdict == "miss" && res != nil:
			tl.falseClose++
			t.Errorf("requests.txt:%d: %q closed (%s), want a miss", r.line, r.prompt, firstLine(res.Answer))
		case r.verdict == "miss":
			var d *Declined
			if r.wants != "" && (err == nil || !strings.Contains(err.Error(), r.wants)) {
				t.Errorf("requests.txt:%d: %q missed with %v, want a reason holding %q", r.line, r.prompt, err, r.wants)
			} else if err != nil && errors.As(err, &d) && strings.Contains(d.Reason, "\n") {
				t.Errorf("requests.txt:%d: the reason is not one line: %q", r.line, d.Reason)
			}
		case res == nil:
			tl.missed++
			t.Errorf("requests.txt:%d: %q did not close: %v", r.line, r.prompt, err)
		default:
			if why := checkMeaning(files, r.wants, res); why != "" {
				tl.falseClose++
				t.Errorf("requests.txt:%d: %q closed wrongly: %s\n%s", r.line, r.prompt, why, res.Answer)
			} else {
				tl.correct++
			}
		}
	}
	var keys []string
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-16s %5s %6s %7s %6s\n", "class", "n", "closed", "correct", "false")
	for _, k := range keys {
		v := by[k]
		fmt.Fprintf(&sb, "%-16s %5d %6d %7d %6d\n", k, v.n, v.closed, v.correct, v.falseClose)
	}
	if skipped > 0 {
		fmt.Fprintf(&sb, "(%d refactoring rows skipped: gopls is not installed)\n", skipped)
	}
	t.Logf("the request table on testdata/shop:\n%s", sb.String())
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// checkMeaning says how res differs from what the table expects, or "".
func checkMeaning(files core.Files, wants string, res *tiers.Resolution) string {
	f := strings.Fields(wants)
	next := files
	if res.Op != nil {
		var err error
		if next, err = core.Apply(files, &res.Op.Op); err != nil {
			return "the op does not apply: " + err.Error()
		}
	}
	changed := func(want string) string {
		var got []string
		for p, b := range next {
			if string(files[p]) != string(b) {
				got = append(got, p)
			}
		}
		sort.Strings(got)
		if want == "-" {
			want = ""
		}
		if g := strings.Join(got, ","); g != want {
			return fmt.Sprintf("changed %q, want %q", g, want)
		}
		return ""
	}
	def := func(loc string) string {
		if !strings.Contains(firstLine(res.Answer), "declared at "+loc+":") {
			return "the answer does not begin with the declaration at " + loc
		}
		return ""
	}
	switch f[0] {
	case "rename":
		var file string
		var line, col int
		if _, err := fmt.Sscanf(strings.ReplaceAll(f[1], ":", " "), "%s %d %d", &file, &line, &col); err != nil || res.Op == nil {
			return "no rename op"
		}
		ls := strings.Split(string(next[file]), "\n")
		if line > len(ls) || col-1 > len(ls[line-1]) || !strings.HasPrefix(ls[line-1][col-1:], f[2]) {
			return fmt.Sprintf("%s:%d:%d does not hold %s after the rename", file, line, col, f[2])
		}
		if res.Op == nil || len(res.Op.Op.Edits) == 0 {
			return "no edit"
		}
	case "def":
		return def(f[1])
	case "uses", "callers":
		if why := def(f[1]); why != "" {
			return why
		}
		if f[0] == "callers" && !strings.Contains(res.Answer, "call(s) ") && f[2] != "-" {
			return "the answer lists no calls"
		}
		if f[2] != "-" && !strings.Contains(res.Answer, "\n"+f[2]+":") {
			return "the answer does not cite " + f[2]
		}
	case "format", "replace":
		if f[0] == "format" && f[1] == "-" && res.Op != nil {
			return "an op for files already formatted"
		}
		return changed(f[1])
	case "refactor":
		text := strings.Join(f[2:], " ")
		if res.Op == nil {
			return "no refactoring op"
		}
		if strings.Contains(string(files[f[1]]), text) || !strings.Contains(string(next[f[1]]), text) {
			return fmt.Sprintf("%s does not gain %q:\n%s", f[1], text, next[f[1]])
		}
	case "text":
		if res.Op != nil || !strings.Contains(res.Answer, "hold") {
			return "not a text search"
		}
	default:
		return "unknown expectation " + wants
	}
	return ""
}

func FuzzRead(f *testing.F) {
	for _, r := range readTable(f) {
		f.Add(r.prompt)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Read(s)
		if c != nil && err != nil {
			t.Fatalf("Read(%q) = %#v and %v", s, c, err)
		}
		var d *Declined
		if err != nil && !errors.As(err, &d) {
			t.Fatalf("Read(%q): %v is not a *Declined", s, err)
		}
		if d != nil && (d.Reason == "" || strings.Contains(d.Reason, "\n")) {
			t.Fatalf("Read(%q): reason %q is not one line", s, d.Reason)
		}
		switch c := c.(type) {
		case Rename:
			if c.To == "" || (c.Target.Name == "" && !c.Target.Pos()) {
				t.Fatalf("Read(%q) = %#v: a rename without a target or a new name", s, c)
			}
		case Lookup:
			if c.Target.Name == "" {
				t.Fatalf("Read(%q) = %#v: a look-up of nothing", s, c)
			}
		case Replace:
			if c.Old == "" {
				t.Fatalf("Read(%q) = %#v: replacing nothing", s, c)
			}
		case Refactor:
			if c.Kind == "" || !strings.HasSuffix(c.File, ".go") || c.Line < 1 || (c.Col < 1 && c.Callee == "") ||
				c.EndLine != 0 && (c.EndLine < c.Line || c.EndLine == c.Line && c.EndCol != 0 && c.EndCol <= c.Col) {
				t.Fatalf("Read(%q) = %#v: a refactoring of no Go span", s, c)
			}
		case Format:
			if validGlob(c.Glob) != nil {
				t.Fatalf("Read(%q) = %#v: a bad glob", s, c)
			}
		}
	})
}
