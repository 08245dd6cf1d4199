package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sessions lists the receipts' sessions, one line each after the header.
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

// TestGeminiE2E runs the real Gemini CLI headless against the fake API,
// with joule installed by joule install as a user would.
func TestGeminiE2E(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	// Installed but not trusted: the armed check says so, and it is true.
	r := f.joule("install", "gemini-cli", "--project")
	if r.code != 0 || !strings.Contains(r.stdout, "ok   BeforeTool hook on every tool") ||
		!strings.Contains(r.stdout, "todo "+f.ws+" is not a trusted folder") || !strings.Contains(r.stdout, "not armed yet: 1 thing(s)") {
		t.Fatalf("install: %+v", r)
	}
	f.api.play(call{"run_shell_command", map[string]any{"command": "touch untrusted.txt"}})
	if g := f.gemini(nil, "-p", "make the file", "--approval-mode", "yolo"); g.code != 55 {
		t.Fatalf("an untrusted headless run exits %d, not 55:\n%s\n%s", g.code, g.stdout, g.stderr)
	}
	if rs := f.receipts(t); strings.Contains(rs, "untrusted.txt") {
		t.Fatalf("the hook ran in an untrusted folder:\n%s", rs)
	}

	// --trust performs Gemini's trust step: now armed, and a run calls joule.
	r = f.joule("install", "gemini-cli", "--project", "--trust")
	if r.code != 0 || !strings.Contains(r.stdout, "ok   "+f.ws+" is a trusted folder") || !strings.Contains(r.stdout, "armed: every gemini-cli tool call is decided by joule") {
		t.Fatalf("install --trust: %+v", r)
	}
	trusted := filepath.Join(f.home, ".gemini", "trustedFolders.json")
	if st, err := os.Stat(trusted); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", trusted, st, err)
	}
	if r := f.joule("install", "gemini-cli", "--project", "--trust"); strings.Contains(r.stdout, "wrote") {
		t.Fatalf("a second install wrote:\n%s", r.stdout)
	}

	// The dev template, and joule's own MCP tools through Gemini's hook:
	// what they do is gated again inside joule mcp.
	if r := f.joule("grant", "issue", "--template", "dev", "--allow", "mcp__joule__write_file", "--allow", "mcp__joule__run_command", "--use", "--workspace", f.ws); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	f.api.play(
		call{"run_shell_command", map[string]any{"command": "dd if=/dev/null of=denied.txt"}},
		// Contained (the default).
		call{"run_shell_command", map[string]any{"command": "touch src/allowed.txt && echo ran > src/allowed.txt"}},
		call{"write_file", map[string]any{"file_path": filepath.Join(f.ws, "src", "written.txt"), "content": "hi\n"}},
		call{"mcp_joule_write_file", map[string]any{"path": "src/mcp.txt", "content": "via mcp\n"}},
		call{"mcp_joule_run_command", map[string]any{"command": "dd if=/dev/null of=mcp-denied.txt"}},
	)
	g := f.gemini(nil, "-p", "do the work", "--approval-mode", "yolo")
	if g.code != 0 {
		t.Fatalf("gemini: %d\n%s\n%s", g.code, g.stdout, g.stderr)
	}
	res := f.api.got()
	for i, r := range res {
		t.Logf("tool response %d %s: %.300s", i, r.Name, r.text())
	}
	if len(res) != 5 {
		t.Fatalf("%d tool responses reached the model, want 5\n%s", len(res), g.stderr)
	}
	t.Run("denied", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(f.ws, "denied.txt")); err == nil {
			t.Fatal("denied.txt exists: the deny did not bind")
		}
		if !strings.Contains(res[0].text(), "joule deny (action-not-granted)") {
			t.Fatalf("joule's reason did not reach the model: %s", res[0].text())
		}
	})
	t.Run("allowed", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(f.ws, "src", "allowed.txt")); err != nil || string(b) != "ran\n" {
			t.Fatalf("the allowed command did not run: %v %q; %s", err, b, res[1].text())
		}
	})
	t.Run("write", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(f.ws, "src", "written.txt")); err != nil || string(b) != "hi\n" {
			t.Fatalf("write_file: %v %q; %s", err, b, res[2].text())
		}
	})
	t.Run("mcp", func(t *testing.T) {
		offered := strings.Join(f.api.offered(), " ")
		for _, want := range []string{"mcp_joule_write_file", "mcp_joule_run_command", "mcp_joule_status"} {
			if !strings.Contains(offered, want) {
				t.Errorf("Gemini did not offer %s: %s", want, offered)
			}
		}
		if b, err := os.ReadFile(filepath.Join(f.ws, "src", "mcp.txt")); err != nil || string(b) != "via mcp\n" {
			t.Fatalf("joule's MCP write_file: %v %q; %s", err, b, res[3].text())
		}
		if _, err := os.Stat(filepath.Join(f.ws, "mcp-denied.txt")); err == nil {
			t.Fatal("mcp-denied.txt exists: joule's MCP run_command ran a denied command")
		}
		if !strings.Contains(res[4].text(), "denied by the joule gate (action-not-granted)") {
			t.Fatalf("the MCP deny's reason did not reach the model: %s", res[4].text())
		}
	})
	t.Run("sealed", func(t *testing.T) {
		rs := f.receipts(t)
		for _, want := range []string{"deny", "Bash: dd if=/dev/null of=denied.txt", " rewrite ", "Bash: touch src/allowed.txt", "Write: " + filepath.Join(f.ws, "src", "written.txt"), "mcp__joule__write_file"} {
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
}
