package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// receipts lists the receipts of every session, one listing each.
func (f *fixture) receipts(t *testing.T) string {
	t.Helper()
	r := f.joule("receipts", "ls")
	var all []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		if fs := strings.Fields(l); len(fs) > 0 {
			all = append(all, f.joule("receipts", "ls", fs[0]).stdout)
		}
	}
	return strings.Join(all, "\n")
}

// TestQwenE2E runs the real Qwen Code headless against the fake API, with
// joule installed by joule install as a user would: an allowed command
// runs, a denied one does not, joule's MCP tools are offered and gated,
// and every decision is a sealed receipt.
func TestQwenE2E(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	r := f.joule("install", "qwen-code", "--project")
	if r.code != 0 || !strings.Contains(r.stdout, "ok   PreToolUse hook on every tool") ||
		!strings.Contains(r.stdout, "armed: every qwen-code tool call is decided by joule") {
		t.Fatalf("install: %+v", r)
	}
	if r := f.joule("install", "qwen-code", "--project"); strings.Contains(r.stdout, "wrote") {
		t.Fatalf("a second install wrote:\n%s", r.stdout)
	}
	if r := f.joule("install", "qwen-code", "--project", "--contain"); r.code == 0 {
		t.Fatalf("--contain was accepted for a host whose hook cannot rewrite: %+v", r)
	}

	// The dev template, and joule's own MCP tools through Qwen's hook:
	// what they do is gated again inside joule mcp.
	if r := f.joule("grant", "issue", "--template", "dev", "--allow", "mcp__joule__write_file", "--allow", "mcp__joule__run_command", "--use", "--workspace", f.ws); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	f.api.play(
		call{"run_shell_command", map[string]any{"command": "dd if=/dev/null of=denied.txt"}},
		call{"run_shell_command", map[string]any{"command": "touch allowed.txt && echo ran > allowed.txt"}},
		call{"write_file", map[string]any{"file_path": filepath.Join(f.ws, "src", "written.txt"), "content": "hi\n"}},
		call{"mcp__joule__write_file", map[string]any{"path": "src/mcp.txt", "content": "via mcp\n"}},
		call{"mcp__joule__run_command", map[string]any{"command": "dd if=/dev/null of=mcp-denied.txt"}},
	)
	q := f.qwen("do the work")
	if q.code != 0 {
		t.Fatalf("qwen: %d\n%s\n%s", q.code, q.stdout, q.stderr)
	}
	res := f.api.got()
	for i, r := range res {
		t.Logf("tool response %d %s: %.300s", i, r.ID, r.Text)
	}
	if len(res) != 5 {
		t.Fatalf("%d tool responses reached the model, want 5\n%s", len(res), q.stderr)
	}
	t.Run("denied", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(f.ws, "denied.txt")); err == nil {
			t.Fatal("denied.txt exists: the deny did not bind")
		}
		if !strings.Contains(res[0].Text, "joule deny (action-not-granted)") {
			t.Fatalf("joule's reason did not reach the model: %s", res[0].Text)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(f.ws, "allowed.txt")); err != nil || string(b) != "ran\n" {
			t.Fatalf("the allowed command did not run: %v %q; %s", err, b, res[1].Text)
		}
	})
	t.Run("write", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(f.ws, "src", "written.txt")); err != nil || string(b) != "hi\n" {
			t.Fatalf("write_file: %v %q; %s", err, b, res[2].Text)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		// Qwen 0.24 defers MCP tools: they are not in the request's tools
		// but named to the model for tool_search, and a call by name runs.
		offered := strings.Join(f.api.offered(), " ")
		for _, want := range []string{"mcp__joule__write_file", "mcp__joule__run_command", "mcp__joule__status"} {
			if !strings.Contains(offered, want) && !f.api.mentioned(want) {
				t.Errorf("Qwen never named %s to the model (tools: %s)", want, offered)
			}
		}
		if b, err := os.ReadFile(filepath.Join(f.ws, "src", "mcp.txt")); err != nil || string(b) != "via mcp\n" {
			t.Fatalf("joule's MCP write_file: %v %q; %s", err, b, res[3].Text)
		}
		if _, err := os.Stat(filepath.Join(f.ws, "mcp-denied.txt")); err == nil {
			t.Fatal("mcp-denied.txt exists: joule's MCP run_command ran a denied command")
		}
		if !strings.Contains(res[4].Text, "denied by the joule gate (action-not-granted)") {
			t.Fatalf("the MCP deny's reason did not reach the model: %s", res[4].Text)
		}
	})
	t.Run("sealed", func(t *testing.T) {
		rs := f.receipts(t)
		for _, want := range []string{"deny", "Bash: dd if=/dev/null of=denied.txt", "Bash: touch allowed.txt", "Write: " + filepath.Join(f.ws, "src", "written.txt"), "mcp__joule__write_file"} {
			if !strings.Contains(rs, want) {
				t.Errorf("the receipts do not show %q", want)
			}
		}
		if t.Failed() {
			t.Logf("receipts:\n%s", rs)
		}
		if r := f.joule("receipts", "verify"); r.code != 0 || !strings.Contains(r.stdout, "receipts verified") {
			t.Fatalf("receipts verify: %+v", r)
		}
	})
	t.Run("uninstall", func(t *testing.T) {
		if r := f.joule("install", "qwen-code", "--project", "--uninstall"); r.code != 0 {
			t.Fatalf("uninstall: %+v", r)
		}
		b, _ := os.ReadFile(filepath.Join(f.ws, ".qwen", "settings.json"))
		var doc map[string]any
		if len(b) > 0 && json.Unmarshal(b, &doc) != nil || strings.Contains(string(b), "joule") {
			t.Fatalf("after uninstall:\n%s", b)
		}
	})
}
