//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// pythonHook is the baseline every hook figure is measured beside: the
// smallest useful python3 Claude Code hook, which parses the payload and
// prints an allow.
const pythonHook = `import json, sys
event = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": event.get("tool_name")}}))
`

// goFloor is the smallest static Go program that reads the payload and
// prints a decision: no Go hook process can cost less.
const goFloor = `package main

import (
	"encoding/json"
	"os"
)

func main() {
	var event map[string]any
	json.NewDecoder(os.Stdin).Decode(&event)
	json.NewEncoder(os.Stdout).Encode(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": event["tool_name"]}})
}
`

// BenchmarkHookClient measures one Claude Code PreToolUse decision with a
// real grant and a durable receipt, each way a host can run it, in one run
// beside the python3 hook and the Go floor:
//
//   - steady: joule-hook with its resident gate running, in a home of its
//     own whose gate starts once and serves every steady call (target
//     ≤ 1.5× the Go floor, steady-x-gofloor);
//   - first: joule-hook with no gate running: it decides in-process and
//     starts the gate (target ≤ 1.2× joule hook, first-x-hook);
//   - hook: today's `joule hook claude-code`, a whole joule per decision;
//   - contained: the same steady call and joule hook with --contain, the
//     default install's line, which the gate answers with a rewrite to
//     joule-exec and its policy (steady-contain-x-steady: what containment
//     adds to the thin client's path; steady-contain-x-hook-contain: the
//     thin client against a whole joule per contained decision);
//   - system: the same steady call in system mode (joule-hook --system,
//     the line joule install --system writes), to a gate running as
//     another uid, the peer check included, as root only (the system
//     gate runs as another uid); beside it the time of one fsync of 4 KiB
//     on the same file system, measured in the same run, since the goal
//     is that a steady call adds no more than one durable commit and
//     1 ms to the Go floor (steady-system-over-gofloor-ms, and the same
//     less the fsync);
//   - 64 concurrent clients against one gate, in decisions per second,
//     beside 64 concurrent joule hook processes (target ≥ 5×,
//     concurrent-x-process) and 64 Go floor processes, the ceiling of
//     any process per decision (concurrent-x-gofloor).
func BenchmarkHookClient(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 not found: no baseline")
	}
	if out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
		py = strings.TrimSpace(string(out))
	}
	b.StopTimer()
	f := newFixture(b, "--budget", "100kJ")
	dir := b.TempDir()
	hookPy := filepath.Join(dir, "hook.py")
	os.WriteFile(hookPy, []byte(pythonHook), 0o644)
	os.WriteFile(filepath.Join(dir, "floor.go"), []byte(goFloor), 0o644)
	floor := filepath.Join(dir, "floor")
	build := exec.Command("go", "build", "-trimpath", "-o", floor, filepath.Join(dir, "floor.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the Go floor: %v\n%s", err, out)
	}
	// The first calls stop and start f's gate; the steady calls go to a
	// second home, whose gate runs from before the loop to its end, as a
	// host's session reaches it after its first call.
	sf := newFixture(b, "--budget", "100kJ")
	in := func(f *fixture) func(name string, args ...string) {
		payload := f.claude("bench", "go test ./... && git status")
		env := append(os.Environ(), f.env...)
		return func(name string, args ...string) {
			cmd := exec.Command(name, args...)
			cmd.Env = env
			cmd.Dir = f.ws
			cmd.Stdin = strings.NewReader(string(payload))
			out, err := cmd.Output()
			if err != nil || strings.Contains(string(out), "deny") {
				b.Fatalf("%s: %v %s", name, err, out)
			}
		}
	}
	run, runSteady := in(f), in(sf)
	// System mode, where this runs as root.
	var sysf *sysFixture
	var runSystem func()
	if os.Geteuid() == 0 {
		sysf = newSysFixture(b)
		payload := sysf.claude("bench", "go test ./... && git status")
		runSystem = func() {
			if r := sysf.client(payload, nil); !isClaudeAllow(r) {
				b.Fatalf("system mode: %+v", r)
			}
		}
	}
	client := filepath.Join(f.bin, "joule-hook")
	jouleBin := filepath.Join(f.bin, "joule")
	clock := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	// The machine's load changes from second to second: each iteration
	// runs every path once, in turn, and the figures are medians, so the
	// ratios compare paths under the same load.
	n := b.N
	var pyD, floorD, hookD, firstD, steadyD, containD, hookContainD, systemD, fsyncD []time.Duration
	f.serveGate()
	steadyGate := sf.serveGate()
	for range 5 {
		runSteady(client, "claude-code")
		if sysf != nil {
			runSystem()
		}
	}
	b.ResetTimer()
	for i := 0; i < n; i++ {
		b.StopTimer()
		pyD = append(pyD, clock(func() { run(py, hookPy) }))
		hookD = append(hookD, clock(func() { run(jouleBin, "hook", "claude-code") }))
		hookContainD = append(hookContainD, clock(func() { run(jouleBin, "hook", "claude-code", "--contain") }))
		pid := f.waitGate(0)
		f.joule(nil, "gate", "stop")
		waitGone(b, pid)
		// No gate: this call decides in-process and starts one.
		firstD = append(firstD, clock(func() { run(client, "claude-code") }))
		f.waitGate(0)
		// The floor and the steady call one after the other, under the
		// same load, and the contained steady call beside them, before or
		// after in turn.
		contained := func() { containD = append(containD, clock(func() { runSteady(client, "claude-code", "--contain") })) }
		if i%2 == 0 {
			contained()
		}
		// The system-mode call right beside the user-mode one, before or
		// after it in turn, both next to the floor.
		system := func() {
			if sysf != nil {
				systemD = append(systemD, clock(runSystem))
			}
		}
		floorD = append(floorD, clock(func() { run(floor) }))
		if i%2 == 1 {
			system()
		}
		b.StartTimer()
		steadyD = append(steadyD, clock(func() { runSteady(client, "claude-code") }))
		b.StopTimer()
		if i%2 == 0 {
			system()
		}
		if sysf != nil {
			fsyncD = append(fsyncD, clock(func() { fsync4k(b, sysf.base) }))
		}
		if i%2 == 1 {
			contained()
		}
	}
	b.StopTimer()
	if p := sf.gatePID(); p != steadyGate {
		b.Fatalf("the steady gate %d was replaced by %d: the steady calls did not all reach one running gate", steadyGate, p)
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	pyNs, floorNs, hookNs, firstNs, steadyNs := median(pyD), median(floorD), median(hookD), median(firstD), median(steadyD)
	containNs, hookContainNs := median(containD), median(hookContainD)
	const conc = 64
	// Bursts of 64 at once, a few per run (one burst is a noisy sample),
	// the three kinds in turn.
	bursts := max(1, n/10)
	burst := func(name string, args ...string) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < conc; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(name, args...)
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	var floorT, procT, clientT time.Duration
	for range bursts {
		floorT += burst(floor)
		procT += burst(jouleBin, "hook", "claude-code")
		clientT += burst(client, "claude-code")
	}
	rate := func(d time.Duration) float64 { return float64(conc*bursts) / d.Seconds() }
	floorRate, procRate, clientRate := rate(floorT), rate(procT), rate(clientT)
	b.ReportMetric(pyNs/1e6, "python-ms/op")
	b.ReportMetric(floorNs/1e6, "gofloor-ms/op")
	b.ReportMetric(hookNs/1e6, "hook-ms/op")
	b.ReportMetric(firstNs/1e6, "first-ms/op")
	b.ReportMetric(steadyNs/1e6, "steady-ms/op")
	b.ReportMetric(steadyNs/floorNs, "steady-x-gofloor")
	b.ReportMetric(steadyNs/pyNs, "steady-x-python")
	b.ReportMetric(firstNs/hookNs, "first-x-hook")
	b.ReportMetric((steadyNs-floorNs)/1e6, "steady-over-gofloor-ms")
	if sysf != nil {
		systemNs, fsyncNs := median(systemD), median(fsyncD)
		b.ReportMetric(systemNs/1e6, "steady-system-ms/op")
		b.ReportMetric(systemNs/steadyNs, "steady-system-x-steady")
		b.ReportMetric(systemNs/floorNs, "steady-system-x-gofloor")
		b.ReportMetric((systemNs-floorNs)/1e6, "steady-system-over-gofloor-ms")
		b.ReportMetric(fsyncNs/1e6, "fsync-ms")
		b.ReportMetric((systemNs-floorNs-fsyncNs)/1e6, "steady-system-over-gofloor-less-fsync-ms")
	}
	b.ReportMetric(containNs/1e6, "steady-contain-ms/op")
	b.ReportMetric(hookContainNs/1e6, "hook-contain-ms/op")
	b.ReportMetric(containNs/steadyNs, "steady-contain-x-steady")
	b.ReportMetric(containNs/hookContainNs, "steady-contain-x-hook-contain")
	b.ReportMetric(procRate, "process-64-dec/s")
	b.ReportMetric(clientRate, "client-64-dec/s")
	b.ReportMetric(clientRate/procRate, "concurrent-x-process")
	// The ceiling: 64 Go floor processes at once, which decide nothing.
	b.ReportMetric(floorRate, "gofloor-64-dec/s")
	b.ReportMetric(clientRate/floorRate, "concurrent-x-gofloor")
}

// fsync4k writes 4 KiB to a new file in dir and syncs it: the cost of one
// durable commit on that file system, for the goal the steady figures are
// held to.
func fsync4k(b *testing.B, dir string) {
	f, err := os.CreateTemp(dir, "fsync-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	f.Write(make([]byte, 4096))
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
}
