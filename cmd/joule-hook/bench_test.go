//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
//   - steady: joule-hook with its resident gate running (target ≤ 1.5× the
//     Go floor, steady-x-gofloor);
//   - first: joule-hook with no gate running: it decides in-process and
//     starts the gate (target ≤ 1.2× joule hook, first-x-hook);
//   - hook: today's `joule hook claude-code`, a whole joule per decision;
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
	payload := f.claude("bench", "go test ./... && git status")
	env := append(os.Environ(), f.env...)
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		cmd.Dir = f.ws
		cmd.Stdin = strings.NewReader(string(payload))
		out, err := cmd.Output()
		if err != nil || strings.Contains(string(out), "deny") {
			b.Fatalf("%s: %v %s", name, err, out)
		}
	}
	client := filepath.Join(f.bin, "joule-hook")
	jouleBin := filepath.Join(f.bin, "joule")
	timeIt := func(n int, before, f func()) float64 {
		var total time.Duration
		for i := 0; i < n; i++ {
			if before != nil {
				before()
			}
			start := time.Now()
			f()
			total += time.Since(start)
		}
		return float64(total.Nanoseconds()) / float64(n)
	}
	n := b.N
	pyNs := timeIt(n, nil, func() { run(py, hookPy) })
	floorNs := timeIt(n, nil, func() { run(floor) })
	hookNs := timeIt(n, nil, func() { run(jouleBin, "hook", "claude-code") })
	// Each first call starts the gate the next iteration stops.
	f.serveGate()
	stopGate := func() {
		pid := f.waitGate(0)
		f.joule(nil, "gate", "stop")
		waitGone(b, pid)
	}
	firstNs := timeIt(n, stopGate, func() { run(client, "claude-code") })
	f.waitGate(0) // the gate runs from here on
	b.ResetTimer()
	b.StartTimer()
	for i := 0; i < n; i++ {
		run(client, "claude-code")
	}
	b.StopTimer()
	steadyNs := float64(b.Elapsed().Nanoseconds()) / float64(n)
	const conc = 64
	// Bursts of 64 at once, a few per run: one burst is a noisy sample.
	bursts := max(1, n/10)
	rate := func(name string, args ...string) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for range bursts {
			for i := 0; i < conc; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					run(name, args...)
				}()
			}
			wg.Wait()
		}
		return float64(conc*bursts) / time.Since(start).Seconds()
	}
	floorRate := rate(floor)
	procRate := rate(jouleBin, "hook", "claude-code")
	clientRate := rate(client, "claude-code")
	b.ReportMetric(pyNs/1e6, "python-ms/op")
	b.ReportMetric(floorNs/1e6, "gofloor-ms/op")
	b.ReportMetric(hookNs/1e6, "hook-ms/op")
	b.ReportMetric(firstNs/1e6, "first-ms/op")
	b.ReportMetric(steadyNs/1e6, "steady-ms/op")
	b.ReportMetric(steadyNs/floorNs, "steady-x-gofloor")
	b.ReportMetric(steadyNs/pyNs, "steady-x-python")
	b.ReportMetric(firstNs/hookNs, "first-x-hook")
	b.ReportMetric(procRate, "process-64-dec/s")
	b.ReportMetric(clientRate, "client-64-dec/s")
	b.ReportMetric(clientRate/procRate, "concurrent-x-process")
	// The ceiling: 64 Go floor processes at once, which decide nothing.
	b.ReportMetric(floorRate, "gofloor-64-dec/s")
	b.ReportMetric(clientRate/floorRate, "concurrent-x-gofloor")
}
