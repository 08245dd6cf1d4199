package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pythonHook is the baseline of the gate benchmarks: the smallest useful
// python3 hook, which only parses the event and prints a decision.
const pythonHook = `import json, sys
event = json.load(sys.stdin)
print(json.dumps({"decision": "allow", "tool": event.get("tool")}))
`

// goHook is the floor beside the baseline: the same hook as pythonHook in
// Go, built static like joule. No Go hook process costs less than this.
const goHook = `package main

import (
	"encoding/json"
	"os"
)

func main() {
	var event map[string]any
	json.NewDecoder(os.Stdin).Decode(&event)
	json.NewEncoder(os.Stdout).Encode(map[string]any{"decision": "allow", "tool": event["tool"]})
}
`

// BenchmarkGateProcess runs `joule gate` as a host would, one process per
// decision with a real grant and a durable receipt, beside the python3
// baseline measured in the same run. x-python is joule's time per decision
// over python3's (target ≤ 0.25); go-floor-x-python is the same for the
// smallest Go hook, which only parses and prints: what starting any Go
// process costs here, before joule does anything.
func BenchmarkGateProcess(b *testing.B) {
	py, err := realPython()
	if err != nil {
		b.Skip("python3 not found: no baseline")
	}
	env, ws := initHome(b)
	dir := b.TempDir()
	hook := filepath.Join(dir, "hook.py")
	os.WriteFile(hook, []byte(pythonHook), 0o644)
	goSrc := filepath.Join(dir, "gohook.go")
	os.WriteFile(goSrc, []byte(goHook), 0o644)
	goBin := filepath.Join(dir, "gohook")
	build := exec.Command("go", "build", "-trimpath", "-o", goBin, goSrc)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the Go floor: %v\n%s", err, out)
	}
	event := fmt.Sprintf(`{"session_id":"bench","tool":"Bash","input":{"command":"go test ./... && git status"},"cwd":%q}`, ws)
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(event)
		out, err := cmd.Output()
		if err != nil || !strings.Contains(strings.ReplaceAll(string(out), " ", ""), `"decision":"allow"`) {
			b.Fatalf("%s: %v %s", name, err, out)
		}
	}
	timeIt := func(name string, args ...string) float64 {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			run(name, args...)
		}
		return float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	b.StopTimer()
	pyNs := timeIt(py, hook)
	goNs := timeIt(goBin)
	// The setup above ran on the benchmark clock: only joule's loop counts.
	b.ResetTimer()
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		run(jouleBin, "gate")
	}
	b.StopTimer()
	ours := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(pyNs/1e6, "python-ms/op")
	b.ReportMetric(goNs/1e6, "go-floor-ms/op")
	b.ReportMetric(ours/1e6, "joule-ms/op")
	b.ReportMetric(ours/pyNs, "x-python")
	b.ReportMetric(goNs/pyNs, "go-floor-x-python")
}

// realPython finds the python3 interpreter itself, not a version-manager
// shim in front of it (a pyenv shim costs a shell start), so the baseline is
// the fastest honest python3 hook.
func realPython() (string, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
