package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// hookMode is one way a PreToolUse hook can fail.
type hookMode struct {
	name, script string
	timeout      int
}

// failureModes are the hook failures docs/hosts.md's Codex table lists.
var failureModes = []hookMode{
	{"missing binary", "", 30},
	{"crash, SIGSEGV", "cat >/dev/null; kill -SEGV $$", 30},
	{"exit 1 with a message", "cat >/dev/null; echo boom >&2; exit 1", 30},
	{"exit 2, empty stderr", "cat >/dev/null; exit 2", 30},
	{"exit 0, empty output", "cat >/dev/null; exit 0", 30},
	{"exit 0, garbage that looks like JSON", "cat >/dev/null; echo '{not json'", 30},
	{"exit 0, plain text", "cat >/dev/null; echo hello", 30},
	{"timeout", "cat >/dev/null; sleep 5", 1},
}

// writeHook makes ws/.codex/hooks.json one trusted PreToolUse hook.
func (r *rig) writeHook(command string, timeout int) {
	r.t.Helper()
	os.MkdirAll(filepath.Join(r.ws, ".codex"), 0o755)
	doc := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": ".*",
		"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": timeout}}}}}}
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(r.ws, ".codex", "hooks.json"), b, 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.writeUserConfig(r.trustConfig(true, true))
}

// TestCodexHookFailures measures what the real CLI does with a tool
// whose hook fails (each mode's marker file says whether the tool ran),
// and checks that joule's installed hook answers a block when joule
// itself is missing or crashes.
func TestCodexHookFailures(t *testing.T) {
	codexBin(t)
	for _, m := range failureModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, newFake(t))
			cmd := filepath.Join(r.dir, "no-such-hook")
			if m.script != "" {
				cmd = filepath.Join(r.dir, "hook.sh")
				os.WriteFile(cmd, []byte("#!/bin/sh\n"+m.script+"\n"), 0o755)
			}
			r.writeHook(cmd, m.timeout)
			res := r.exec("make the file", call{Name: "exec_command", Args: `{"cmd":"touch ran.txt"}`})
			ran := r.exists("ran.txt")
			t.Logf("Codex with a hook that fails by %s: tool ran = %v; tool output %+v", m.name, ran, r.fake.outputs())
			if !ran {
				t.Errorf("the tool did not run: Codex 0.169.0 fails open on %s, as docs/hosts.md says; update the table\n%+v", m.name, res)
			}
		})
	}
	for _, c := range []struct{ name, replace string }{
		{"joule missing", ""},
		{"joule crashing", "#!/bin/sh\nkill -SEGV $$\n"},
		{"joule printing garbage and exiting 1", "#!/bin/sh\necho '{\"hookSpecificOutput\":'\nexit 1\n"},
	} {
		t.Run("installed hook, "+c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, newFake(t))
			t.Cleanup(r.stopGate)
			own := filepath.Join(r.dir, "bin")
			os.MkdirAll(own, 0o755)
			for _, n := range []string{"joule", "joule-hook"} {
				b, _ := os.ReadFile(filepath.Join(binDir, n))
				os.WriteFile(filepath.Join(own, n), b, 0o755)
			}
			if res := r.run(time.Minute, "", filepath.Join(own, "joule"), "install", "codex", "--project", r.ws, "--trust"); !strings.Contains(res.stdout, "armed: every") {
				t.Fatalf("install: %+v", res)
			}
			os.Remove(filepath.Join(own, "joule-hook"))
			if c.replace != "" {
				os.WriteFile(filepath.Join(own, "joule-hook"), []byte(c.replace), 0o755)
			}
			res := r.exec("make the file", call{Name: "exec_command", Args: `{"cmd":"touch ran.txt"}`})
			if r.exists("ran.txt") {
				t.Fatalf("the tool ran with %s: joule's hook failed open\n%+v", c.name, res)
			}
			if outs := r.fake.outputs(); len(outs) != 1 || !strings.Contains(outs[0].Text, "joule deny (hook-failed)") {
				t.Fatalf("the model should see the hook's block: %+v", outs)
			}
		})
	}
}

// TestCodexJouleAnswersInTime runs the hook command joule installed, as
// Codex runs it ($SHELL -lc), under faults that stop joule from deciding,
// and checks it answers a block well inside the 30 s timeout it installed
// (past it Codex would run the tool).
func TestCodexJouleAnswersInTime(t *testing.T) {
	codexBin(t)
	for _, fault := range []string{"locked store", "missing key"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, newFake(t))
			t.Cleanup(r.stopGate)
			if res := r.joule("install", "codex", "--project", r.ws); res.code != 0 {
				t.Fatalf("install: %+v", res)
			}
			var doc struct {
				Hooks map[string][]struct {
					Hooks []struct {
						Command string `json:"command"`
						Timeout int    `json:"timeout"`
					} `json:"hooks"`
				} `json:"hooks"`
			}
			b, _ := os.ReadFile(filepath.Join(r.ws, ".codex", "hooks.json"))
			json.Unmarshal(b, &doc)
			h := doc.Hooks["PreToolUse"][0].Hooks[0]
			switch fault {
			case "locked store":
				db, err := sql.Open("sqlite", filepath.Join(r.jhome, "joule.db"))
				if err != nil {
					t.Fatal(err)
				}
				conn, err := db.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.ExecContext(context.Background(), "ROLLBACK"); conn.Close(); db.Close() })
			case "missing key":
				if err := os.Remove(filepath.Join(r.jhome, "steward.key")); err != nil {
					t.Fatal(err)
				}
			}
			payload, _ := json.Marshal(map[string]any{"session_id": "01a2-fault", "turn_id": "t1", "transcript_path": nil, "cwd": r.ws,
				"hook_event_name": "PreToolUse", "model": "gpt-5.5", "permission_mode": "bypassPermissions",
				"tool_name": "Bash", "tool_input": map[string]string{"command": "touch x.txt"}, "tool_use_id": "call_fault"})
			start := time.Now()
			res := r.run(time.Duration(h.Timeout+10)*time.Second, string(payload), "/bin/sh", "-lc", h.Command)
			took := time.Since(start)
			t.Logf("%s: answered in %v (Codex's timeout %ds): exit %d, stdout %q, stderr %q", fault, took, h.Timeout, res.code, res.stdout, res.stderr)
			if took >= time.Duration(h.Timeout)*time.Second {
				t.Fatalf("no answer within Codex's %d s timeout: Codex would run the tool", h.Timeout)
			}
			blocked := res.code == 2 && strings.TrimSpace(res.stderr) != "" ||
				res.code == 0 && strings.Contains(res.stdout, `"permissionDecision":"deny"`) && strings.Contains(res.stdout, "joule deny (")
			if !blocked {
				t.Fatalf("the answer is not one of Codex's blocks: %+v", res)
			}
		})
	}
}
