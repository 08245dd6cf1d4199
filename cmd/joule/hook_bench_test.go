package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/tiers/config"
)

// pythonClaudeHook is the baseline: the smallest useful python3 Claude Code
// hook, which parses the payload and prints an allow.
const pythonClaudeHook = `import json, sys
event = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": event.get("tool_name")}}))
`

// BenchmarkHookClaudeCode measures one Claude Code PreToolUse decision with
// a real grant and a durable receipt, three ways in one run: the python3
// baseline as a process, `joule hook claude-code` as a process, and the
// resident http path through joule serve. x-python is joule's time over
// python3's (targets: process ≤ 0.25, resident ≤ 0.05).
func BenchmarkHookClaudeCode(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 not found: no baseline")
	}
	// A version manager's shim (pyenv) would make the baseline a shell
	// script: time the interpreter itself.
	if out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
		py = strings.TrimSpace(string(out))
	}
	env, ws := initHome(b)
	hookPy := filepath.Join(b.TempDir(), "hook.py")
	os.WriteFile(hookPy, []byte(pythonClaudeHook), 0o644)
	payload := fmt.Sprintf(`{"session_id":"bench","transcript_path":"/tmp/t.jsonl","cwd":%q,"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./... && git status","description":"test"},"tool_use_id":"toolu_1"}`, ws)
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = ws
		cmd.Stdin = strings.NewReader(payload)
		out, err := cmd.Output()
		if err != nil || strings.Contains(string(out), "deny") {
			b.Fatalf("%s: %v %s", name, err, out)
		}
	}
	addr := freeAddr(b)
	install := exec.Command(jouleBin, "install", "claude-code", "--project", ws, "--resident", "--addr", addr)
	install.Env = append(os.Environ(), env...)
	if out, err := install.CombinedOutput(); err != nil {
		b.Fatalf("install: %v %s", err, out)
	}
	startServe(b, env)
	cfg, err := config.LoadServe(strings.TrimPrefix(env[0], "JOULE_HOME="))
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{}
	post := func() {
		req, _ := http.NewRequest("POST", "http://"+addr+"/hooks/claude-code", strings.NewReader(payload))
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(out), "deny") {
			b.Fatalf("resident: %d %s", resp.StatusCode, out)
		}
	}
	timeIt := func(f func()) float64 {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			f()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	b.StopTimer()
	pyNs := timeIt(func() { run(py, hookPy) })
	residentNs := timeIt(post)
	// The setup above ran on the benchmark clock: only joule's loop counts.
	b.ResetTimer()
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		run(jouleBin, "hook", "claude-code")
	}
	b.StopTimer()
	ours := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(pyNs/1e6, "python-ms/op")
	b.ReportMetric(ours/1e6, "process-ms/op")
	b.ReportMetric(residentNs/1e6, "resident-ms/op")
	b.ReportMetric(ours/pyNs, "process-x-python")
	b.ReportMetric(residentNs/pyNs, "resident-x-python")
}
