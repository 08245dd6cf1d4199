package e2e

import (
	"strings"
	"testing"
)

// TestCodexTrustSteps proves the armed check against the real CLI: with
// either of Codex's two trusts missing, the install says "not armed" and
// a real run makes no hook call at all (a command the grant denies runs,
// and no receipt is sealed); joule install --trust then arms it.
func TestCodexTrustSteps(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	r := newRig(t, fake)
	t.Cleanup(r.stopGate)
	res := r.joule("install", "codex", "--project", r.ws)
	if res.code != 0 || !strings.Contains(res.stdout, "not armed yet: 3 thing(s) to do above") ||
		!strings.Contains(res.stdout, "Codex ignores "+r.ws+"/.codex (hooks and MCP) until the project is trusted: run joule install codex --project "+r.ws+" --trust") ||
		!strings.Contains(res.stdout, "Codex has not trusted joule's PreToolUse hook") {
		t.Fatalf("install without trust: %+v", res)
	}
	for _, c := range []struct {
		name           string
		project, hooks bool
		todo           string
	}{
		{"project trusted, hooks not", true, false, "todo Codex has not trusted joule's PreToolUse hook"},
		{"hooks trusted, project not", false, true, "todo Codex ignores " + r.ws + "/.codex"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r.writeUserConfig(r.trustConfig(c.project, c.hooks))
			res := r.joule("install", "codex", "--project", r.ws)
			if !strings.Contains(res.stdout, c.todo) || strings.Contains(res.stdout, "armed: every") {
				t.Fatalf("the armed check does not say what is missing: %+v", res)
			}
			marker := "untrusted-" + map[bool]string{true: "p", false: "h"}[c.project] + ".txt"
			run := r.exec("make the file", call{Name: "exec_command", Args: `{"cmd":"dd if=/dev/null of=` + marker + `"}`})
			if !r.exists(marker) {
				t.Fatalf("%s was not created: Codex called a hook it should not have\n%+v\n%+v", marker, run, fake.outputs())
			}
			if got := r.receipts(sessionOf(t, run)); strings.Contains(got, "Bash") {
				t.Fatalf("a receipt was sealed, so joule was called:\n%s", got)
			}
		})
	}
	t.Run("--trust arms it", func(t *testing.T) {
		r.writeUserConfig("")
		res := r.joule("install", "codex", "--project", r.ws, "--trust")
		if !strings.Contains(res.stdout, "armed: every codex tool call is decided by joule") {
			t.Fatalf("install --trust: %+v", res)
		}
		// Idempotent: a second run writes nothing and stays armed.
		again := r.joule("install", "codex", "--project", r.ws, "--trust")
		if strings.Contains(again.stdout, "wrote ") || !strings.Contains(again.stdout, "armed: every") {
			t.Fatalf("a second install --trust changed something: %+v", again)
		}
		run := r.exec("make the file", call{Name: "exec_command", Args: `{"cmd":"dd if=/dev/null of=trusted.txt"}`})
		if r.exists("trusted.txt") {
			t.Fatalf("trusted.txt exists: the armed hook did not deny\n%+v", run)
		}
	})
}
