package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulehook/joule/plugins/hosts"
)

// TestGateProtectsEveryHost: joule's gate, as this binary wires it, denies
// writing every configuration path of every registered host, in the
// workspace, above it, in the home and where the environment moved it,
// and what lies below it, as a tamper with the gate. (Edit and shell
// redirects to the same paths: plugins/hosts TestGateDeniesHostConfig.)
func TestGateProtectsEveryHost(t *testing.T) {
	env, ws := initHome(t)
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	// A host's directory that its variable moved: the gate follows the
	// environment the hook runs in.
	moved := filepath.Join(filepath.Dir(ws), "codex-home")
	os.MkdirAll(moved, 0o755)
	env = append(env, "CODEX_HOME="+moved)
	// A .env above the workspace, which Gemini CLI and Qwen Code read.
	up := filepath.Join(filepath.Dir(ws), ".env")
	os.WriteFile(up, nil, 0o644)
	// Each path once (hosts share some), and the path itself: what lies
	// below one, and Edit and shell redirects, plugins/hosts tests in
	// process, without a process per decision.
	var paths []string
	for _, h := range hosts.All() {
		for _, p := range h.Config.Project {
			paths = append(paths, filepath.Join(ws, p))
		}
		for _, p := range h.Config.User {
			paths = append(paths, filepath.Join(home, p))
		}
		for _, d := range h.UserDirs {
			user, abs := d.Resolve(func(k string) string {
				if k == "CODEX_HOME" {
					return moved
				}
				return ""
			}, ws)
			for _, p := range user {
				paths = append(paths, filepath.Join(home, p))
			}
			paths = append(paths, abs...)
		}
		if slices.Contains(h.Config.Walk, ".env") {
			paths = append(paths, up)
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if !slices.Contains(paths, moved) {
		t.Fatalf("$CODEX_HOME %s is not among the paths", moved)
	}
	n := 0
	for _, target := range paths {
		in, _ := json.Marshal(map[string]any{"file_path": target, "content": "{}\n"})
		ev, _ := json.Marshal(map[string]any{"session_id": "hosts-test", "tool": "Write", "input": json.RawMessage(in), "cwd": ws})
		if d := gateOnce(t, env, string(ev)); d.Decision != "deny" || d.Code != "self-tamper" {
			t.Errorf("Write %s: %s %s (%s), want deny self-tamper", target, d.Decision, d.Code, d.Reason)
		}
		n++
	}
	if n < 90 {
		t.Fatalf("only %d writes tried", n)
	}
	// The gate still lets the workspace be written.
	in, _ := json.Marshal(map[string]any{"file_path": filepath.Join(ws, "src", "main.go"), "content": "package main\n"})
	ev, _ := json.Marshal(map[string]any{"session_id": "hosts-test", "tool": "Write", "input": json.RawMessage(in), "cwd": ws})
	if d := gateOnce(t, env, string(ev)); d.Code == "self-tamper" {
		t.Errorf("Write src/main.go: %s %s (%s)", d.Decision, d.Code, d.Reason)
	}
}
