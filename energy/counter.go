package energy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Counter is a cumulative hardware energy counter.
type Counter interface {
	Name() string
	// ReadUJ returns the counter's cumulative energy in µJ.
	ReadUJ() (uint64, error)
	// RangeUJ is where the counter wraps to zero; 0 means it does not.
	RangeUJ() uint64
	// MaxPowerUW bounds a plausible reading in µW; 0 means unknown.
	MaxPowerUW() uint64
}

// PowercapRoot is where Linux exposes RAPL zones.
const PowercapRoot = "/sys/class/powercap"

// Zone is one RAPL zone read through powercap (package, core, dram, psys).
type Zone struct {
	name, dir  string
	rangeUJ    uint64
	maxPowerUW uint64
}

func (z *Zone) Name() string       { return "rapl:" + z.name }
func (z *Zone) RangeUJ() uint64    { return z.rangeUJ }
func (z *Zone) MaxPowerUW() uint64 { return z.maxPowerUW }

// ReadUJ reads energy_uj. Since Linux 5.10 only root may read it.
func (z *Zone) ReadUJ() (uint64, error) { return readUint(filepath.Join(z.dir, "energy_uj")) }

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	return n, nil
}

// RAPL lists the top-level RAPL zones under root (PowercapRoot): packages
// and psys, whose subzones (core, uncore, dram) they already include. It
// returns why there are none when there are none.
func RAPL(root string) ([]Counter, error) {
	if root == "" {
		root = PowercapRoot
	}
	dirs, err := filepath.Glob(filepath.Join(root, "intel-rapl:*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	var zones []Counter
	var problems []string
	for _, d := range dirs {
		if strings.Count(filepath.Base(d), ":") != 1 { // a subzone
			continue
		}
		name, err := os.ReadFile(filepath.Join(d, "name"))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		z := &Zone{name: strings.TrimSpace(string(name)), dir: d}
		if z.rangeUJ, err = readUint(filepath.Join(d, "max_energy_range_uj")); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		z.maxPowerUW, _ = readUint(filepath.Join(d, "constraint_0_max_power_uw"))
		if _, err := z.ReadUJ(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", z.Name(), err))
			continue
		}
		zones = append(zones, z)
	}
	if len(zones) == 0 {
		if len(dirs) == 0 {
			return nil, fmt.Errorf("no RAPL zones under %s (no powercap, or a container or VM that hides it)", root)
		}
		return nil, fmt.Errorf("no readable RAPL zone: %s", strings.Join(problems, "; "))
	}
	return zones, nil
}

// Delta is the energy between two readings of a counter that wraps at
// rangeUJ (energy.md §2.1). ok is false when cur < prev cannot be a wrap.
func Delta(prev, cur, rangeUJ uint64) (d uint64, ok bool) {
	if cur >= prev {
		return cur - prev, true
	}
	if rangeUJ == 0 || prev > rangeUJ {
		return 0, false
	}
	return rangeUJ - prev + cur, true
}

// Liveness is the evidence of a probe (energy.md §2.6).
type Liveness struct {
	Counter string
	Live    bool
	Reason  string // why not live, or the evidence summary when live
	IdleMW  uint64 // power at rest, milliwatts
	LoadMW  uint64 // power under the probe's load
	StepUJ  uint64 // smallest non-zero increment seen
	Probed  time.Time
}

// ProbeOptions tune a probe; zero values take the defaults.
type ProbeOptions struct {
	Idle   time.Duration // idle baseline window (1 s)
	Load   time.Duration // loaded window (1.5 s)
	Window time.Duration // each loaded sub-window must advance (100 ms)
	// Work runs the known load until ctx ends; default: one busy goroutine
	// per CPU, each on its own OS thread.
	Work func(ctx context.Context)
}

// DefaultPlausibleUW bounds a counter with no declared maximum: 1.5 kW.
const DefaultPlausibleUW = 1_500_000_000

// Probe decides whether c is live: it advances in every sub-window under a
// known load, tracks that load above idle, stays plausible, and never runs
// backwards except by a wrap.
func Probe(ctx context.Context, c Counter, opt ProbeOptions) Liveness {
	if opt.Idle <= 0 {
		opt.Idle = time.Second
	}
	if opt.Load <= 0 {
		opt.Load = 1500 * time.Millisecond
	}
	if opt.Window <= 0 {
		opt.Window = 100 * time.Millisecond
	}
	if opt.Work == nil {
		opt.Work = busyCPUs
	}
	lv := Liveness{Counter: c.Name(), Probed: time.Now()}
	fail := func(format string, args ...any) Liveness {
		lv.Reason = fmt.Sprintf(format, args...)
		return lv
	}
	read := func() (uint64, time.Time, error) {
		v, err := c.ReadUJ()
		return v, time.Now(), err
	}
	e0, t0, err := read()
	if err != nil {
		return fail("%s cannot be read: %v", c.Name(), err)
	}
	if !sleep(ctx, opt.Idle) {
		return fail("probe cancelled")
	}
	e1, t1, err := read()
	if err != nil {
		return fail("%s cannot be read: %v", c.Name(), err)
	}
	idle, ok := Delta(e0, e1, c.RangeUJ())
	if !ok {
		return fail("%s ran backwards at rest (%d → %d µJ)", c.Name(), e0, e1)
	}
	lv.IdleMW = milliwatts(idle, t1.Sub(t0))

	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); opt.Work(loadCtx) }()
	defer func() { stop(); wg.Wait() }()
	prev, tPrev := e1, t1
	if !sleep(ctx, opt.Window) { // let the load start
		return fail("probe cancelled")
	}
	if prev, tPrev, err = read(); err != nil {
		return fail("%s cannot be read: %v", c.Name(), err)
	}
	start, tStart := prev, tPrev
	var total uint64
	windows := int(opt.Load / opt.Window)
	for i := 0; i < max(windows, 1); i++ {
		if !sleep(ctx, opt.Window) {
			return fail("probe cancelled")
		}
		cur, _, err := read()
		if err != nil {
			return fail("%s cannot be read under load: %v", c.Name(), err)
		}
		d, ok := Delta(prev, cur, c.RangeUJ())
		if !ok {
			return fail("%s ran backwards under load (%d → %d µJ) beyond any wrap", c.Name(), prev, cur)
		}
		if d == 0 {
			return fail("%s is frozen: it did not advance in a %v window under load (reads %d µJ)", c.Name(), opt.Window, cur)
		}
		if lv.StepUJ == 0 || d < lv.StepUJ {
			lv.StepUJ = d
		}
		total += d
		prev = cur
	}
	_ = start
	lv.LoadMW = milliwatts(total, time.Since(tStart))
	bound := c.MaxPowerUW() / 1000 * 3 / 2
	if bound == 0 {
		bound = DefaultPlausibleUW / 1000
	}
	switch {
	case lv.LoadMW < lv.IdleMW || lv.LoadMW-lv.IdleMW < max(1000, lv.IdleMW/10):
		return fail("%s does not track work: %d mW at rest, %d mW under load", c.Name(), lv.IdleMW, lv.LoadMW)
	case lv.LoadMW >= bound:
		return fail("%s reads an implausible %d mW (bound %d mW)", c.Name(), lv.LoadMW, bound)
	}
	lv.Live = true
	lv.Reason = fmt.Sprintf("%s live: %d mW at rest, %d mW under load, smallest step %d µJ", c.Name(), lv.IdleMW, lv.LoadMW, lv.StepUJ)
	return lv
}

func milliwatts(uj uint64, d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	// µJ / µs = W; scale to mW without floats.
	us := uint64(d.Microseconds())
	if us == 0 {
		return 0
	}
	return mul(uj, 1000) / us
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// busyCPUs spins one goroutine per CPU, each on its own OS thread.
func busyCPUs(ctx context.Context) {
	var wg sync.WaitGroup
	for i := 0; i < runtime.NumCPU(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := uint64(1)
			for ctx.Err() == nil {
				for j := 0; j < 1<<16; j++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	wg.Wait()
}

// Meter measures windows of local work with the counters a probe showed
// live, and says why when it cannot.
type Meter struct {
	mu       sync.Mutex
	live     []Counter
	evidence []Liveness
	why      string // why no counter is live
}

// NewMeter probes every counter and keeps the live ones. With none, every
// window falls back to the estimator with the reason.
func NewMeter(ctx context.Context, counters []Counter, discoverErr error, opt ProbeOptions) *Meter {
	m := &Meter{}
	var reasons []string
	if discoverErr != nil {
		reasons = append(reasons, discoverErr.Error())
	}
	for _, c := range counters {
		lv := Probe(ctx, c, opt)
		m.evidence = append(m.evidence, lv)
		if lv.Live {
			m.live = append(m.live, c)
		} else {
			reasons = append(reasons, lv.Reason)
		}
	}
	if len(m.live) == 0 {
		if len(reasons) == 0 {
			reasons = append(reasons, "no hardware energy counter")
		}
		m.why = strings.Join(reasons, "; ")
	}
	return m
}

// Discover lists this machine's counters: RAPL zones, then NVIDIA GPUs.
func Discover() ([]Counter, error) {
	var all []Counter
	var errs []error
	rapl, err := RAPL("")
	all = append(all, rapl...)
	errs = append(errs, err)
	gpus, err := NVML()
	all = append(all, gpus...)
	errs = append(errs, err)
	if len(all) > 0 {
		return all, nil
	}
	return nil, errors.Join(errs...)
}

// Evidence returns each probe's result.
func (m *Meter) Evidence() []Liveness {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Liveness(nil), m.evidence...)
}

// Window is one measured stretch of work.
type Window struct {
	m     *Meter
	ctrs  []Counter
	start []uint64
	began time.Time
}

// MinWindow is the shortest window a zero reading is held against a
// counter: RAPL and NVML publish every millisecond or so, so a shorter
// window can honestly read nothing without the counter being frozen.
const MinWindow = 10 * time.Millisecond

// Start opens a window over the live counters.
func (m *Meter) Start() *Window {
	m.mu.Lock()
	ctrs := append([]Counter(nil), m.live...)
	m.mu.Unlock()
	w := &Window{m: m, began: time.Now()}
	for _, c := range ctrs {
		v, err := c.ReadUJ()
		if err != nil {
			m.downgrade(c, fmt.Sprintf("%s stopped reading: %v", c.Name(), err))
			continue
		}
		w.ctrs, w.start = append(w.ctrs, c), append(w.start, v)
	}
	return w
}

// Stop closes the window. ok is true only when every live counter advanced:
// the figure is then HwShunt. Otherwise note says why the caller must fall
// back to the estimator; a counter that did not move while work was done
// is no longer trusted.
func (w *Window) Stop() (uj uint64, ok bool, note string) {
	if len(w.ctrs) == 0 {
		w.m.mu.Lock()
		defer w.m.mu.Unlock()
		if w.m.why == "" {
			return 0, false, "no live hardware counter"
		}
		return 0, false, "no live hardware counter: " + w.m.why
	}
	for i, c := range w.ctrs {
		v, err := c.ReadUJ()
		if err != nil {
			w.m.downgrade(c, fmt.Sprintf("%s stopped reading: %v", c.Name(), err))
			return 0, false, "hardware counter fell back to the estimator: " + err.Error()
		}
		d, okd := Delta(w.start[i], v, c.RangeUJ())
		if okd && d == 0 && time.Since(w.began) < MinWindow {
			return 0, false, fmt.Sprintf("the work took less than %v, below %s's update interval; fell back to the estimator", MinWindow, c.Name())
		}
		if !okd || d == 0 {
			reason := fmt.Sprintf("%s did not advance while work was done", c.Name())
			w.m.downgrade(c, reason)
			return 0, false, reason + "; fell back to the estimator"
		}
		uj = sat(uj, d)
	}
	return uj, true, ""
}

func (m *Meter) downgrade(c Counter, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, l := range m.live {
		if l == c {
			m.live = append(m.live[:i:i], m.live[i+1:]...)
			break
		}
	}
	if len(m.live) == 0 {
		m.why = reason
	}
}
