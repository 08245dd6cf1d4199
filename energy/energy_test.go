package energy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
)

func TestClassOf(t *testing.T) {
	tests := []struct {
		model string
		want  Class
	}{
		{"claude-sonnet-4-5-20250929", Frontier},
		{"claude-opus-4-1", FrontierLarge},
		{"claude-haiku-4-5", Frontier},
		{"gpt-5", Frontier},
		{"gpt-4o-mini", Frontier},
		{"o3-mini", Frontier},
		{"text-embedding-3-small", Embedding},
		{"nomic-embed-text", Embedding},
		{"all-minilm", Embedding},
		{"llama3.2", Small},
		{"llama3.1:8b", Small},
		{"qwen2.5-coder:7b", Small},
		{"llama3.3:70b", Mid},
		{"qwen2.5:72b-instruct", Mid},
		{"Qwen/Qwen3-32B", Mid},
		{"mixtral:8x7b", Mid},
		{"some-new-model", Frontier},
		{"", Frontier},
	}
	var table *Table
	for _, tt := range tests {
		if got := table.ClassOf(tt.model); got != tt.want {
			t.Errorf("ClassOf(%q) = %s, want %s", tt.model, got, tt.want)
		}
	}
}

func TestEnergy(t *testing.T) {
	tests := []struct {
		name  string
		table *Table
		model string
		u     Usage
		want  uint64
		prov  core.Provenance
	}{
		// energy.md §1.10's illustrative Claude Code turn: 80k cache reads,
		// 2k cache writes, 300 output ≈ 4.0 + 1.0 + 0.9 kJ.
		{"claude code turn", nil, "claude-sonnet-4-5", Usage{CachedInput: 80_000, CacheWrite: 2_000, Output: 300}, 4_000_000_000 + 1_000_000_000 + 900_000_000, core.Estimator},
		// 400 in + 400 out frontier ≈ 1.4 kJ (0.39 Wh).
		{"chat", nil, "gpt-5", Usage{Input: 400, Output: 400}, 1_400_000_000, core.Estimator},
		{"opus ×3", nil, "claude-opus-4-1", Usage{Input: 1, Output: 1}, 10_500_000, core.Estimator},
		{"local", nil, "llama3.2", Usage{Input: 26, Output: 282}, 26*80_000 + 282*500_000, core.Estimator},
		{"calibrated", &Table{Calibrations: []Calibration{{Model: "llama3.2", ID: "rtx4090-2026-11", Rates: Rates{InputUJ: 10_000, CachedUJ: 1, OutputUJ: 200_000}}}},
			"llama3.2", Usage{Input: 10, Output: 10}, 2_100_000, core.ModelBased},
		{"configured class", &Table{Rules: []ClassRule{{"my-*", "mine"}}, Rates: map[Class]Rates{"mine": {InputUJ: 1, OutputUJ: 2}}},
			"my-model", Usage{Input: 5, Output: 5}, 15, core.Estimator},
		{"saturates", nil, "gpt-5", Usage{Output: 1 << 62}, ^uint64(0), core.Estimator},
		{"zero", nil, "gpt-5", Usage{}, 0, core.Estimator},
	}
	for _, tt := range tests {
		e := tt.table.Energy(tt.model, tt.u)
		if e.UJ != tt.want || e.Provenance != tt.prov {
			t.Errorf("%s: %d µJ %s, want %d %s", tt.name, e.UJ, e.Provenance, tt.want, tt.prov)
		}
	}
	if err := (&Table{Rules: []ClassRule{{"x", "nope"}}}).Validate(); err == nil {
		t.Error("a rule naming a class without rates validated")
	}
	if err := (&Table{Rules: []ClassRule{{"[", Small}}}).Validate(); err == nil {
		t.Error("a bad pattern validated")
	}
}

func TestDelta(t *testing.T) {
	tests := []struct {
		prev, cur, rng, want uint64
		ok                   bool
	}{
		{100, 250, 1000, 150, true},
		{900, 50, 1000, 150, true}, // wrapped at max_energy_range_uj
		{900, 50, 0, 0, false},     // a counter that cannot wrap ran backwards
		{2000, 50, 1000, 0, false}, // prev beyond the range: not a wrap
		{7, 7, 1000, 0, true},
	}
	for _, tt := range tests {
		d, ok := Delta(tt.prev, tt.cur, tt.rng)
		if d != tt.want || ok != tt.ok {
			t.Errorf("Delta(%d, %d, %d) = %d %v, want %d %v", tt.prev, tt.cur, tt.rng, d, ok, tt.want, tt.ok)
		}
	}
}

// fakeCounter integrates power over time: idleUW at rest, loadUW while
// its work runs; it wraps at rng.
type fakeCounter struct {
	mu             sync.Mutex
	v, rng         uint64
	idleUW, loadUW uint64
	loaded         bool
	last           time.Time
}

func (f *fakeCounter) Name() string       { return "fake" }
func (f *fakeCounter) RangeUJ() uint64    { return f.rng }
func (f *fakeCounter) MaxPowerUW() uint64 { return 0 }
func (f *fakeCounter) ReadUJ() (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if !f.last.IsZero() {
		p := f.idleUW
		if f.loaded {
			p = f.loadUW
		}
		f.v += p * uint64(now.Sub(f.last).Microseconds()) / 1_000_000
	}
	f.last = now
	if f.rng > 0 {
		f.v %= f.rng
	}
	return f.v, nil
}

func (f *fakeCounter) set(idle, load uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idleUW, f.loadUW = idle, load
}

func (f *fakeCounter) work(ctx context.Context) {
	f.mu.Lock()
	f.loaded = true
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	f.loaded = false
	f.mu.Unlock()
}

func TestProbe(t *testing.T) {
	fast := ProbeOptions{Idle: 50 * time.Millisecond, Load: 200 * time.Millisecond, Window: 20 * time.Millisecond}
	tests := []struct {
		name   string
		c      *fakeCounter
		live   bool
		reason string
	}{
		// 1 J per 20 ms window ≈ 50 W under load, a few mW at rest.
		{"live", &fakeCounter{idleUW: 5_000_000, loadUW: 50_000_000}, true, "live"},
		{"live across wraps", &fakeCounter{idleUW: 5_000_000, loadUW: 50_000_000, rng: 3_000_000}, true, "live"},
		// energy.md §2.7: the event opens and reads 0 under load.
		{"frozen at zero", &fakeCounter{}, false, "frozen"},
		{"moves but ignores load", &fakeCounter{idleUW: 20_000_000, loadUW: 20_000_000}, false, "does not track work"},
		{"implausible", &fakeCounter{idleUW: 1_000_000, loadUW: 1 << 42}, false, "implausible"},
	}
	for _, tt := range tests {
		opt := fast
		opt.Work = tt.c.work
		lv := Probe(context.Background(), tt.c, opt)
		if lv.Live != tt.live || !strings.Contains(lv.Reason, tt.reason) {
			t.Errorf("%s: live=%v %q", tt.name, lv.Live, lv.Reason)
		}
	}
}

func TestMeterFallsBack(t *testing.T) {
	fast := ProbeOptions{Idle: 30 * time.Millisecond, Load: 100 * time.Millisecond, Window: 20 * time.Millisecond}
	live := &fakeCounter{idleUW: 5_000_000, loadUW: 50_000_000}
	opt := fast
	opt.Work = live.work
	m := NewMeter(context.Background(), []Counter{live}, nil, opt)
	w := m.Start()
	time.Sleep(2 * MinWindow)
	uj, ok, note := w.Stop()
	if !ok || uj == 0 || note != "" {
		t.Fatalf("live counter: %d %v %q", uj, ok, note)
	}
	// The counter freezes: the next window with work done downgrades it.
	live.set(0, 0)
	// Too short a window reads nothing and says so, without blaming the counter.
	if _, ok, note := m.Start().Stop(); ok || !strings.Contains(note, "update interval") {
		t.Fatalf("short window: %v %q", ok, note)
	}
	w = m.Start()
	time.Sleep(2 * MinWindow)
	if _, ok, note := w.Stop(); ok || !strings.Contains(note, "did not advance") {
		t.Fatalf("frozen counter kept: %v %q", ok, note)
	}
	if _, ok, note := m.Start().Stop(); ok || !strings.Contains(note, "no live hardware counter") {
		t.Fatalf("after a downgrade: %v %q", ok, note)
	}
	frozen := &fakeCounter{}
	opt.Work = frozen.work
	m = NewMeter(context.Background(), []Counter{frozen}, nil, opt)
	if _, ok, note := m.Start().Stop(); ok || !strings.Contains(note, "frozen") {
		t.Errorf("frozen at probe: %v %q", ok, note)
	}
}

// TestThisMachine: whatever this machine has, nothing is claimed HwShunt
// unless a probe showed it live.
func TestThisMachine(t *testing.T) {
	counters, err := Discover()
	m := NewMeter(context.Background(), counters, err, ProbeOptions{Idle: 100 * time.Millisecond, Load: 300 * time.Millisecond})
	uj, ok, note := m.Start().Stop()
	for _, lv := range m.Evidence() {
		t.Logf("%s: live=%v %s", lv.Counter, lv.Live, lv.Reason)
	}
	if !ok && note == "" {
		t.Error("a fallback without a reason")
	}
	if ok {
		t.Logf("live hardware counter: %d µJ", uj)
	} else {
		t.Logf("fallback: %s", note)
	}
}

func TestRAPLSysfs(t *testing.T) {
	root := t.TempDir()
	write := func(zone, file, v string) {
		os.MkdirAll(filepath.Join(root, zone), 0o755)
		os.WriteFile(filepath.Join(root, zone, file), []byte(v+"\n"), 0o644)
	}
	write("intel-rapl:0", "name", "package-0")
	write("intel-rapl:0", "energy_uj", "123456")
	write("intel-rapl:0", "max_energy_range_uj", "262143328850")
	write("intel-rapl:0", "constraint_0_max_power_uw", "65000000")
	write("intel-rapl:0:0", "name", "core")
	write("intel-rapl:0:0", "energy_uj", "1")
	write("intel-rapl:0:0", "max_energy_range_uj", "262143328850")
	write("intel-rapl:1", "name", "psys")
	write("intel-rapl:1", "max_energy_range_uj", "262143328850") // energy_uj unreadable (root only since 5.10)
	zones, err := RAPL(root)
	if err != nil || len(zones) != 1 {
		t.Fatalf("zones %v, err %v", zones, err)
	}
	z := zones[0]
	v, err := z.ReadUJ()
	if z.Name() != "rapl:package-0" || v != 123456 || z.RangeUJ() != 262143328850 || z.MaxPowerUW() != 65_000_000 || err != nil {
		t.Errorf("%s %d %d %d %v", z.Name(), v, z.RangeUJ(), z.MaxPowerUW(), err)
	}
	if _, err := RAPL(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no RAPL zones") {
		t.Errorf("empty powercap: %v", err)
	}
	os.Remove(filepath.Join(root, "intel-rapl:0", "energy_uj"))
	if _, err := RAPL(root); err == nil || !strings.Contains(err.Error(), "no readable RAPL zone") {
		t.Errorf("unreadable zones: %v", err)
	}
}

func ExampleTable_Energy() {
	e := (&Table{}).Energy("claude-sonnet-4-5", Usage{Input: 10, CachedInput: 80_000, CacheWrite: 2_000, Output: 300})
	fmt.Println(e.UJ, e.Provenance, e.Basis)
	// Output: 5905000000 Estimator class frontier
}
