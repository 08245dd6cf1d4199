package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/plugins/hosts"
)

// TestGateProtectsEveryHost: joule's gate, as this binary wires it, denies
// writing every configuration path of every registered host, in the
// workspace and in the home, and what lies below it, as a tamper with the
// gate.
func TestGateProtectsEveryHost(t *testing.T) {
	env, ws := initHome(t)
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	n := 0
	for _, h := range hosts.All() {
		var paths []string
		for _, p := range h.Config.Project {
			paths = append(paths, filepath.Join(ws, p))
		}
		for _, p := range h.Config.User {
			paths = append(paths, filepath.Join(home, p))
		}
		for _, p := range paths {
			for _, target := range []string{p, filepath.Join(p, "joule-test")} {
				in, _ := json.Marshal(map[string]any{"file_path": target, "content": "{}\n"})
				ev, _ := json.Marshal(map[string]any{"session_id": "hosts-test", "tool": "Write", "input": json.RawMessage(in), "cwd": ws})
				if d := gateOnce(t, env, string(ev)); d.Decision != "deny" || d.Code != "self-tamper" {
					t.Errorf("%s: Write %s: %s %s (%s), want deny self-tamper", h.Name, target, d.Decision, d.Code, d.Reason)
				}
				n++
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d writes tried", n)
	}
	// The gate still lets the workspace be written.
	in, _ := json.Marshal(map[string]any{"file_path": filepath.Join(ws, "src", "main.go"), "content": "package main\n"})
	ev, _ := json.Marshal(map[string]any{"session_id": "hosts-test", "tool": "Write", "input": json.RawMessage(in), "cwd": ws})
	if d := gateOnce(t, env, string(ev)); d.Code == "self-tamper" {
		t.Errorf("Write src/main.go: %s %s (%s)", d.Decision, d.Code, d.Reason)
	}
}
