package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exists reports whether ws/name was created.
func (r *rig) exists(name string) bool {
	_, err := os.Stat(filepath.Join(r.ws, name))
	return err == nil
}

// receipts is `joule receipts ls` for every session, or one.
func (r *rig) receipts(session ...string) string {
	r.t.Helper()
	return r.joule(append([]string{"receipts", "ls"}, session...)...).stdout
}

// sessionOf reads the thread id from codex exec --json's first event.
func sessionOf(t *testing.T, res result) string {
	t.Helper()
	const key = `"thread_id":"`
	i := strings.Index(res.stdout, key)
	if i < 0 {
		t.Fatalf("no thread id in codex exec's output: %+v", res)
	}
	rest := res.stdout[i+len(key):]
	return rest[:strings.IndexByte(rest, '"')]
}

// TestCodexE2E installs joule as a user would (joule install codex
// --project --trust) and drives the real CLI through a deny, an allow,
// two apply_patch writes and a gated MCP tool.
func TestCodexE2E(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	r := newRig(t, fake)
	t.Cleanup(r.stopGate)
	os.MkdirAll(filepath.Join(r.ws, "src"), 0o755)

	res := r.joule("install", "codex", "--project", r.ws, "--trust")
	if res.code != 0 || !strings.Contains(res.stdout, "armed: every codex tool call is decided by joule") {
		t.Fatalf("install --trust: %+v", res)
	}
	t.Logf("install:\n%s", res.stdout)
	// The CLI loads the config: it sees both hooks and trusts them.
	hooks, raw := r.hooksList()
	trusted := 0
	for _, h := range hooks {
		if strings.Contains(h.Command, "joule-hook") && h.TrustStatus == "trusted" && h.Enabled {
			trusted++
		}
	}
	if trusted != 2 {
		t.Fatalf("codex app-server hooks/list does not show joule's two hooks trusted: %s", raw)
	}

	t.Run("denied", func(t *testing.T) {
		res := r.exec("make the file", call{Name: "exec_command", Args: `{"cmd":"dd if=/dev/null of=denied.txt"}`})
		if r.exists("denied.txt") {
			t.Fatalf("denied.txt exists: the deny did not bind\n%+v", res)
		}
		outs := fake.outputs()
		if len(outs) != 1 || !strings.Contains(outs[0].Text, "joule deny (action-not-granted)") {
			t.Fatalf("the model's next request should carry joule's reason; got %+v\n%s", outs, res.stderr)
		}
		if got := r.receipts(sessionOf(t, res)); !strings.Contains(got, " deny ") || !strings.Contains(got, "dd if=/dev/null of=denied.txt") {
			t.Fatalf("no deny receipt:\n%s", got)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		// Contained (the default).
		os.MkdirAll(filepath.Join(r.ws, "src"), 0o755)
		res := r.exec("write the file", call{Name: "exec_command", Args: `{"cmd":"touch src/allowed.txt && echo ran > src/allowed.txt"}`})
		if b, err := os.ReadFile(filepath.Join(r.ws, "src", "allowed.txt")); err != nil || strings.TrimSpace(string(b)) != "ran" {
			t.Fatalf("the allowed command did not run (%v, %q)\n%+v\n%+v", err, b, res, fake.outputs())
		}
		if got := r.receipts(sessionOf(t, res)); !strings.Contains(got, " rewrite ") || !strings.Contains(got, "Bash: touch src/allowed.txt") {
			t.Fatalf("no allow receipt:\n%s", got)
		}
	})
	t.Run("apply_patch", func(t *testing.T) {
		// A patch inside the workspace is a Write the grant allows; one
		// outside it is a Write it does not.
		outside := filepath.Join(r.dir, "outside.txt")
		res := r.exec("patch",
			call{Name: "apply_patch", Custom: true, Args: "*** Begin Patch\n*** Add File: src/patched.txt\n+patched\n*** End Patch\n"},
			call{Name: "apply_patch", Custom: true, Args: "*** Begin Patch\n*** Add File: " + outside + "\n+escaped\n*** End Patch\n"})
		if b, err := os.ReadFile(filepath.Join(r.ws, "src", "patched.txt")); err != nil || strings.TrimSpace(string(b)) != "patched" {
			t.Fatalf("the allowed patch did not apply (%v)\n%+v\n%+v", err, res, fake.outputs())
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatalf("the patch outside the workspace applied\n%+v", fake.outputs())
		}
		outs := fake.outputs()
		if len(outs) != 2 || !strings.Contains(outs[1].Text, "joule deny") {
			t.Fatalf("the model should see joule's deny of the second patch: %+v", outs)
		}
		got := r.receipts(sessionOf(t, res))
		if !strings.Contains(got, "Write: "+filepath.Join(r.ws, "src", "patched.txt")) || !strings.Contains(got, "Write: "+outside) {
			t.Fatalf("apply_patch is not sealed as a Write of each file:\n%s", got)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		// Codex defers every MCP tool behind its own tool_search (not a hook
		// call); the tool it loads is then gated twice: by the PreToolUse
		// hook (mcp__joule__read_file, which the grant must name) and by
		// joule's MCP server itself (as a Read).
		if res := r.joule("grant", "issue", "--template", "dev", "--allow", "mcp__joule__read_file", "--use", "--workspace", r.ws); res.code != 0 {
			t.Fatalf("grant issue: %+v", res)
		}
		os.WriteFile(filepath.Join(r.ws, "src", "x.txt"), []byte("hello from x"), 0o644)
		res := r.exec("read it", call{Search: true, Args: `{"query":"joule read file","limit":5}`},
			call{Namespace: "mcp__joule", Name: "read_file", Args: `{"path":"src/x.txt"}`})
		reqs := fake.requests()
		if len(reqs) < 2 || !strings.Contains(reqs[1], `"name":"mcp__joule"`) || !strings.Contains(reqs[1], `"name":"read_file"`) {
			t.Fatalf("tool_search did not offer joule's MCP tools\n%+v", res)
		}
		outs := fake.outputs()
		if len(outs) != 2 || !strings.Contains(outs[1].Text, `"bytes":12`) || !strings.Contains(outs[1].Text, `"decision":"allow"`) {
			t.Fatalf("joule's read_file did not answer through Codex: %+v\n%s", outs, res.stderr)
		}
		if got := r.receipts(sessionOf(t, res)); !strings.Contains(got, "mcp__joule__read_file") {
			t.Fatalf("the hook did not seal the MCP call:\n%s", got)
		}
	})
	if res := r.joule("receipts", "verify"); res.code != 0 || !strings.Contains(res.stdout, "receipts verified") {
		t.Fatalf("receipts verify: %+v", res)
	}
	t.Logf("receipts:\n%s", r.receipts())
}
