// Command cascade is the cascade benchmark (`make bench-cascade`): it builds
// a workload with ground truth from the Go toolchain's own sources, runs it
// through the real L0, L1 and L2 tiers with scripted L3 and L4 tiers, and
// reports per tier what closed, how much of it correctly, and the joules
// spent, beside sending everything to L4.
package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l0"
	"github.com/joulehook/joule/tiers/l1"
	"github.com/joulehook/joule/tiers/l2"
)

type config struct {
	n         int
	seed      uint64
	out       string
	goroot    string
	pkgs      int
	repeat    float64
	watts     float64
	l3Model   string
	l4Model   string
	l3Share   float64
	index     string
	langs     bool
	onlyLangs bool
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 200, "requests in the first pass")
	flag.Uint64Var(&c.seed, "seed", 1, "seed for every sampling and script draw")
	flag.StringVar(&c.out, "out", filepath.Join("bench", "cascade", "out"), "directory for cascade.csv, requests.csv, cascade.svg and summary.txt")
	flag.StringVar(&c.goroot, "goroot", "", "Go tree whose src/ is the workload (default: go env GOROOT)")
	flag.IntVar(&c.pkgs, "pkgs", 36, "std packages the lookup requests are drawn from")
	flag.Float64Var(&c.repeat, "repeat", 0.5, "share of the first pass put again in a second pass (L0's chance)")
	flag.Float64Var(&c.watts, "watts", 10, "watts per busy CPU core, for the cheap tiers' measured CPU time")
	flag.StringVar(&c.l3Model, "l3-model", "qwen2.5-coder:7b", "model the scripted L3 stands for (sets its energy class)")
	flag.StringVar(&c.l4Model, "l4-model", "claude-sonnet-4-5", "model the scripted L4 stands for (sets its energy class)")
	flag.Float64Var(&c.l3Share, "l3-share", 0.4, "share of what reaches the scripted L3 that it closes")
	flag.StringVar(&c.index, "index", "", "L2 index file to use (default: a fresh one, so the build is timed)")
	flag.BoolVar(&c.langs, "langs", true, "also put the TypeScript and Python workloads to L1 through their language servers")
	flag.BoolVar(&c.onlyLangs, "only-langs", false, "run only the TypeScript and Python workloads")
	flag.Parse()
	if err := c.check(); err != nil {
		fmt.Fprintln(os.Stderr, "cascade:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cascade:", err)
		os.Exit(1)
	}
}

func (c *config) check() error {
	switch {
	case c.n < 1:
		return errors.New("-n must be at least 1")
	case c.pkgs < 1:
		return errors.New("-pkgs must be at least 1")
	case c.repeat < 0 || c.repeat > 1:
		return errors.New("-repeat must be within [0, 1]")
	case c.l3Share < 0 || c.l3Share > 1:
		return errors.New("-l3-share must be within [0, 1]")
	case c.watts <= 0:
		return errors.New("-watts must be positive")
	}
	return nil
}

// logf prints a progress line on stderr with the time since start.
type logf func(format string, args ...any)

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	start := time.Now()
	say := logf(func(format string, args ...any) {
		fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	})
	if c.goroot == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			return fmt.Errorf("go env GOROOT: %w", err)
		}
		c.goroot = strings.TrimSpace(string(out))
	}
	if c.onlyLangs {
		work, err := os.MkdirTemp("", "joule-bench-langs-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
		return runLangs(ctx, c, work, say, stdout)
	}
	src := filepath.Join(c.goroot, "src")
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return fmt.Errorf("-goroot %s has no src directory", c.goroot)
	}
	env := append(os.Environ(), "GOROOT="+c.goroot, "GOWORK=off", "GOFLAGS=")
	work, err := os.MkdirTemp("", "joule-bench-cascade-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	wl, err := buildWorkload(ctx, c, env, src, work, say)
	if err != nil {
		return err
	}

	// L2 over the whole of GOROOT/src, built fresh so its build is timed.
	ixPath := c.index
	if ixPath == "" {
		ixPath = filepath.Join(work, "index.db")
	}
	ix, err := l2.Open(ixPath, src)
	if err != nil {
		return err
	}
	defer ix.Close()
	say("L2: indexing %s", src)
	c0, w0 := cpuTime(), time.Now()
	lastPhase := ""
	stats, err := ix.Update(ctx, func(p l2.Progress) {
		if p.Phase != lastPhase {
			lastPhase = p.Phase
			say("L2: %s (%d items)", p.Phase, p.Total)
		}
	})
	build, buildCPU := time.Since(w0), cpuTime()-c0
	if err != nil {
		return fmt.Errorf("L2 index build: %w", err)
	}
	say("L2: %d files, %d chunks in %s (%s CPU)", stats.Files, stats.Chunks, build.Round(time.Millisecond), buildCPU.Round(time.Millisecond))

	r, err := newRunner(c, work, ix)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(c.seed, 2))
	first := append([]*Request(nil), wl.Requests...)
	rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	second := sample(rng, wl.Requests, int(c.repeat*float64(len(wl.Requests))+0.5))
	var outs []*Outcome
	for pass, reqs := range [][]*Request{first, second} {
		say("pass %d: %d requests", pass+1, len(reqs))
		for i, req := range reqs {
			o, err := r.put(ctx, req, pass+1)
			if err != nil {
				return err
			}
			outs = append(outs, o)
			if (i+1)%50 == 0 {
				say("pass %d: %d of %d", pass+1, i+1, len(reqs))
			}
		}
	}

	say("L2: recall@5 and query latency")
	q, err := measureL2(ctx, ix, wl.Requests)
	if err != nil {
		return err
	}
	res := &results{
		c: c, src: src, goVersion: goVersionString(ctx, env), requests: wl.Requests, notes: wl.Notes,
		first: len(first), second: len(second), outs: outs, rows: Table(outs),
		stats: stats, build: build, buildCPU: buildCPU, semantic: ix.Semantic(),
		l2: q, l2Stage: r.l2Walls, cpu: r.cpu, cores: runtime.NumCPU(), elapsed: time.Since(start),
	}
	var sum bytes.Buffer
	res.summary(&sum)
	if c.langs {
		if err := runLangs(ctx, c, work, say, &sum); err != nil {
			return err
		}
	}
	if _, err := stdout.Write(sum.Bytes()); err != nil {
		return err
	}
	cas, base := res.rows[len(res.rows)-2].UJ, res.rows[len(res.rows)-1].UJ
	return writeOutputs(c.out, res.rows, outs, sum.Bytes(), fmt.Sprintf("Cascade benchmark on GOROOT/src: %d requests, %.1f× less energy than all-L4", len(outs), float64(base)/float64(max(cas, 1))))
}

// results is everything a run measured.
type results struct {
	c               config
	src, goVersion  string
	requests        []*Request
	notes           []string
	first, second   int
	outs            []*Outcome
	rows            []Row
	stats           l2.Stats
	build, buildCPU time.Duration
	semantic        bool
	l2              l2Quality
	l2Stage         []time.Duration
	cpu             map[core.Tier]time.Duration
	cores           int
	elapsed         time.Duration
}

// summary writes the report: the table, where each class closed, L2's
// figures and the targets.
func (res *results) summary(w io.Writer) {
	c, rows, q := res.c, res.rows, res.l2
	fmt.Fprintf(w, "cascade benchmark: %d requests (%d first pass, %d repeated), seed %d, %s\n",
		len(res.outs), res.first, res.second, c.seed, res.goVersion)
	fmt.Fprintf(w, "workload from %s: %s\n\n", res.src, mixString(res.requests))
	WriteTable(w, rows)
	cas, base := rows[len(rows)-2].UJ, rows[len(rows)-1].UJ
	if cas > 0 {
		fmt.Fprintf(w, "\ncascade %s J against %s J with everything at L4: %.1f× less energy\n", Joules(cas), Joules(base), float64(base)/float64(cas))
	}
	fmt.Fprintf(w, "\nclosing tier by class (requests over both passes):\n")
	writeMatrix(w, res.outs)
	fmt.Fprintf(w, "\nplain and phrased requests (phrased: as people type them in an editor; negative phrased: near-misses):\n")
	writePhrased(w, res.outs)
	fmt.Fprintf(w, "\nL2 index of GOROOT/src: %d files, %d chunks, built in %s wall, %s CPU (≈ %s J at %.0f W/core, once per tree; not in the totals)\n",
		res.stats.Files, res.stats.Chunks, res.build.Round(time.Millisecond), res.buildCPU.Round(time.Millisecond), Joules(cpuUJ(res.buildCPU, c.watts)), c.watts)
	fmt.Fprintf(w, "L2 recall@5 on %d definition lookups: Definitions %.3f, Search %.3f\n", q.n, q.recallDefs, q.recallSearch)
	fmt.Fprintf(w, "L2 query latency: Definitions p50 %s p99 %s (%d); Callers p50 %s p99 %s (%d); Search top 5 p50 %s p99 %s (%d)\n",
		pct(q.defs, 50), pct(q.defs, 99), len(q.defs), pct(q.callers, 50), pct(q.callers, 99), len(q.callers), pct(q.search, 50), pct(q.search, 99), len(q.search))
	fmt.Fprintf(w, "L2 stage (TryResolve, answer or hand-on included) over %d consultations: p50 %s, p99 %s\n", len(res.l2Stage), pct(res.l2Stage, 50), pct(res.l2Stage, 99))
	fmt.Fprintf(w, "mean CPU per consultation:")
	for i, t := range Tiers[:3] {
		if n := rows[i].Consulted; n > 0 {
			fmt.Fprintf(w, " %s %s", t, (res.cpu[t] / time.Duration(n)).Round(10*time.Microsecond))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "\ntargets:\n")
	cheapFalse := rows[0].False + rows[1].False + rows[2].False
	fmt.Fprintf(w, "  %s zero false closes at L0-L2: %d\n", mark(cheapFalse == 0), cheapFalse)
	fmt.Fprintf(w, "  %s recall@5 >= 0.9 on definition lookups: %.3f (Definitions), %.3f (Search)\n", mark(q.recallDefs >= 0.9), q.recallDefs, q.recallSearch)
	fmt.Fprintf(w, "  %s L2 query p50 <= 20ms on the whole GOROOT/src: Definitions %s, Callers %s\n",
		mark(p(q.defs, 50) <= 20*time.Millisecond && p(q.callers, 50) <= 20*time.Millisecond), pct(q.defs, 50), pct(q.callers, 50))
	fmt.Fprintf(w, "  %s L2 Search (free text, top 5) p50 <= 20ms: %s\n", mark(p(q.search, 50) <= 20*time.Millisecond), pct(q.search, 50))
	fmt.Fprintf(w, "  %s index build <= 90s: %s wall, %s CPU, on %d cores\n", mark(res.build <= 90*time.Second), res.build.Round(time.Second), res.buildCPU.Round(time.Second), res.cores)
	if !res.semantic {
		fmt.Fprintf(w, "L2 ran without an embedding model: %s\n", l2.LexicalOnly)
	}
	fmt.Fprintf(w, "energy: L0-L2 measured CPU time × %.0f W per core; L3 scripted as %s, L4 as %s, tokens × energy.Estimator coefficients\n", c.watts, c.l3Model, c.l4Model)
	for _, n := range res.notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "run time %s\n", res.elapsed.Round(time.Second))
}

func writeOutputs(dir string, rows []Row, outs []*Outcome, summary []byte, title string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var tb, ob, sb bytes.Buffer
	if err := WriteCSV(&tb, rows); err != nil {
		return err
	}
	if err := WriteOutcomesCSV(&ob, outs); err != nil {
		return err
	}
	if err := WriteSVG(&sb, rows, title); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"cascade.csv": tb.Bytes(), "requests.csv": ob.Bytes(), "cascade.svg": sb.Bytes(), "summary.txt": summary} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func goVersionString(ctx context.Context, env []string) string {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Env = env
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

func mixString(reqs []*Request) string {
	n := map[Class]int{}
	for _, r := range reqs {
		n[r.Class]++
	}
	var parts []string
	for _, c := range Classes {
		parts = append(parts, fmt.Sprintf("%d %s", n[c], c))
	}
	return strings.Join(parts, ", ")
}

func writeMatrix(w io.Writer, outs []*Outcome) {
	count := map[Class]map[core.Tier]int{}
	for _, o := range outs {
		if count[o.Req.Class] == nil {
			count[o.Req.Class] = map[core.Tier]int{}
		}
		count[o.Req.Class][o.Closing]++
	}
	fmt.Fprintf(w, "  %-9s", "class")
	for _, t := range Tiers {
		fmt.Fprintf(w, "%6s", t)
	}
	fmt.Fprintf(w, "%6s\n", "open")
	for _, c := range Classes {
		fmt.Fprintf(w, "  %-9s", c)
		for _, t := range Tiers {
			fmt.Fprintf(w, "%6d", count[c][t])
		}
		fmt.Fprintf(w, "%6d\n", count[c][""])
	}
}

func mark(ok bool) string {
	if ok {
		return "met    "
	}
	return "NOT MET"
}

// p is the p-th percentile of ds by nearest rank; 0 for none.
func p(ds []time.Duration, pc int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (pc*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

// pct is the p-th percentile of ds (nearest rank), rounded for print.
func pct(ds []time.Duration, pc int) string {
	if len(ds) == 0 {
		return "n/a"
	}
	return p(ds, pc).Round(10 * time.Microsecond).String()
}

// buildWorkload samples every class of request with its ground truth.
func buildWorkload(ctx context.Context, c config, env []string, src, work string, say logf) (*Workload, error) {
	rng := rand.New(rand.NewPCG(c.seed, 1))
	mix := Mix(c.n)
	all, err := listStd(ctx, env)
	if err != nil {
		return nil, err
	}
	wl := &Workload{Src: src}
	dirs, err := packageDirs(src)
	if err != nil {
		return nil, err
	}
	say("workload: loading %d std packages with types", c.pkgs)
	defs, calls, notes, err := lookups(ctx, rng, env, src, lookupPool(all, dirs), mix[Define], mix[Callers], c.pkgs)
	if err != nil {
		return nil, err
	}
	wl.Notes = append(wl.Notes, notes...)
	for _, r := range defs {
		r.Root, r.ReadBytes = src, fileBytes(src, r.Def.Path)
	}
	for _, r := range calls {
		paths := []string{r.Def.Path}
		for _, s := range r.Calls {
			paths = append(paths, s.Path)
		}
		r.Root, r.ReadBytes = src, fileBytes(src, paths...)
	}
	if len(defs) < mix[Define] || len(calls) < mix[Callers] {
		wl.Notes = append(wl.Notes, fmt.Sprintf("the lookup sample held %d definitions and %d caller questions for %d and %d asked; raise -pkgs", len(defs), len(calls), mix[Define], mix[Callers]))
	}
	say("workload: %d definition and %d caller lookups", len(defs), len(calls))

	gopls := goplsPath(ctx)
	say("workload: renames with gopls ground truth (%s)", orNone(gopls))
	ren, _, notes, err := renames(ctx, rng, env, gopls, work, renamePool(all, dirs), mix[Rename])
	if err != nil {
		return nil, err
	}
	wl.Notes = append(wl.Notes, notes...)

	gofmt := filepath.Join(c.goroot, "bin", "gofmt")
	if _, err := os.Stat(gofmt); err != nil {
		if gofmt, err = exec.LookPath("gofmt"); err != nil {
			return nil, errors.New("no gofmt binary in GOROOT/bin or on PATH: the format ground truth needs it")
		}
	}
	say("workload: formats with gofmt ground truth (%s)", gofmt)
	fmts, _, notes, err := formats(ctx, rng, gofmt, src, work, lookupPool(all, dirs), mix[Format])
	if err != nil {
		return nil, err
	}
	wl.Notes = append(wl.Notes, notes...)

	neg := negatives(rng, src, append(append([]*Request(nil), defs...), calls...), mix[Negative])
	var plain []*Request
	for _, group := range [][]*Request{defs, calls, ren, fmts} {
		plain = append(plain, group...)
	}
	near := phrase(rand.New(rand.NewPCG(c.seed, 3)), plain, mix[Negative])
	say("workload: %d requests phrased as people type them, %d near-misses", countPhrased(plain), len(near))
	for _, group := range [][]*Request{defs, calls, ren, fmts, neg, near} {
		wl.Requests = append(wl.Requests, group...)
	}
	for i, r := range wl.Requests {
		r.ID = i + 1
	}
	say("workload: %s", mixString(wl.Requests))
	return wl, nil
}

func countPhrased(reqs []*Request) int {
	n := 0
	for _, r := range reqs {
		if r.Phrased {
			n++
		}
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "not installed"
	}
	return s
}

// goplsPath finds gopls on PATH or in GOPATH/bin; "" when it is missing.
func goplsPath(ctx context.Context) string {
	if p, err := exec.LookPath("gopls"); err == nil {
		return p
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOPATH").Output()
	if err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "gopls")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}

// runner puts requests to the cascade and measures each tier.
type runner struct {
	c       config
	cascade *tiers.Cascade
	cache   *l0.Cache
	cheap   []*metered
	l3, l4  *scripted
	table   *energy.Table
	cur     *Request
	l2Walls []time.Duration
	cpu     map[core.Tier]time.Duration

	mu    sync.Mutex
	snaps map[string]core.Files
}

func newRunner(c config, work string, ix *l2.Index) (*runner, error) {
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, fmt.Sprintf("joule bench cascade seed %d", c.seed))
	key := ed25519.NewKeyFromSeed(seed)
	cache, err := l0.Open(filepath.Join(work, "l0"))
	if err != nil {
		return nil, err
	}
	r := &runner{c: c, cache: cache, table: &energy.Table{}, snaps: map[string]core.Files{}, cpu: map[core.Tier]time.Duration{}}
	cur := func() *Request { return r.cur }
	r.l3 = &scripted{tier: core.L3, model: c.l3Model, share: c.l3Share, seed: c.seed, table: r.table, cur: cur}
	r.l4 = &scripted{tier: core.L4, model: c.l4Model, share: 1, seed: c.seed, table: r.table, cur: cur}
	r.cheap = []*metered{
		{Stage: &l0.Stage{Cache: cache, Author: key.Public().(ed25519.PublicKey), Snapshot: r.snapshot}},
		{Stage: &l1.Stage{Key: key, Snapshot: r.snapshot}},
		{Stage: &l2.Stage{Index: ix}},
	}
	r.cascade, err = tiers.New(r.cheap[0], r.cheap[1], r.cheap[2], r.l3, r.l4)
	return r, err
}

// snapshot reads a workspace once: the benchmark never writes to one, as
// an editor's agent would hold the open tree in memory.
func (r *runner) snapshot(_ context.Context, root string) (core.Files, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.snaps[root]; ok {
		return f, nil
	}
	f, err := core.ReadDir(root)
	if err != nil {
		return nil, err
	}
	r.snaps[root] = f
	return f, nil
}

// put runs one request through the cascade, scores the close, and caches
// an op closed above L0 the way the ACP agent does.
func (r *runner) put(ctx context.Context, req *Request, pass int) (*Outcome, error) {
	r.cur = req
	defer func() { r.cur = nil }()
	res, err := r.cascade.Run(ctx, &tiers.Request{Session: "bench-cascade", Prompt: req.Prompt, Root: req.Root})
	if err != nil {
		return nil, fmt.Errorf("request %d %q: %w", req.ID, req.Prompt, err)
	}
	o := &Outcome{Req: req, Pass: pass, Closing: res.Closing, Baseline: r.table.Energy(r.c.l4Model, L4Usage(req)).UJ}
	for _, c := range res.Consulted {
		k := Consult{Tier: c.Tier, Closed: c.Closed}
		if c.Err != nil {
			k.Err = c.Err.Error()
		}
		switch c.Tier {
		case core.L3:
			k.UJ = r.l3.uj()
		case core.L4:
			k.UJ = r.l4.uj()
		default:
			m := r.cheap[tierIndex(c.Tier)]
			k.UJ = cpuUJ(m.cpu, r.c.watts)
			r.cpu[c.Tier] += m.cpu
			if c.Tier == core.L2 {
				r.l2Walls = append(r.l2Walls, m.wall)
			}
		}
		o.Consults = append(o.Consults, k)
	}
	for _, k := range o.Consults {
		if k.Err != "" && scoredTier(k.Tier) && !scoredTier(res.Closing) {
			o.Why += string(k.Tier) + " missed: " + firstLine(k.Err) + "; "
		}
	}
	o.Why = strings.TrimSuffix(o.Why, "; ")
	if scoredTier(res.Closing) {
		prior, err := r.snapshot(ctx, req.Root)
		if err != nil {
			return nil, err
		}
		o.Verdict, o.Why = Score(req, res.Resolution, prior)
	}
	if res.Resolution != nil && res.Resolution.Op != nil && res.Closing != core.L0 {
		if err := r.cache.Put(req.Prompt, res.Resolution.Op); err != nil {
			return nil, fmt.Errorf("l0 cache put: %w", err)
		}
	}
	return o, nil
}

// l2Quality is recall@5 and query latency measured on the index directly.
type l2Quality struct {
	n                        int
	recallDefs, recallSearch float64
	search, defs, callers    []time.Duration
}

func measureL2(ctx context.Context, ix *l2.Index, reqs []*Request) (l2Quality, error) {
	var q l2Quality
	var okDefs, okSearch int
	for _, r := range reqs {
		if r.Class == Callers {
			t := time.Now()
			if _, err := ix.Callers(ctx, r.Symbol); err != nil {
				return q, fmt.Errorf("l2 Callers %q: %w", r.Symbol, err)
			}
			q.callers = append(q.callers, time.Since(t))
		}
		if r.Class != Define {
			continue
		}
		q.n++
		t := time.Now()
		hits, err := ix.Definitions(ctx, r.Symbol)
		q.defs = append(q.defs, time.Since(t))
		if err != nil {
			return q, fmt.Errorf("l2 Definitions %q: %w", r.Symbol, err)
		}
		if Recall5(r.Def, hitLocs(hits)) {
			okDefs++
		}
		t = time.Now()
		hits, err = ix.Search(ctx, r.Prompt, 5)
		q.search = append(q.search, time.Since(t))
		if err != nil {
			return q, fmt.Errorf("l2 Search %q: %w", r.Prompt, err)
		}
		if Recall5(r.Def, hitLocs(hits)) {
			okSearch++
		}
	}
	if q.n > 0 {
		q.recallDefs, q.recallSearch = float64(okDefs)/float64(q.n), float64(okSearch)/float64(q.n)
	}
	return q, nil
}

func hitLocs(hits []l2.Hit) []Loc {
	out := make([]Loc, len(hits))
	for i, h := range hits {
		out[i] = Loc{Path: h.Path, Line: h.StartLine, End: h.EndLine}
	}
	return out
}
