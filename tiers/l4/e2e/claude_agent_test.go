package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// claudeAgentRemote is the remote command line and environment for the real
// Claude Code through claude-agent-acp (the successor of claude-code-acp),
// offline. It writes files and runs commands with Claude Code's own tools:
// no fs/write_text_file, no terminal/create, and in its permissive modes no
// permission request either.
func claudeAgentRemote(t testing.TB, h *home) ([]string, []string) {
	adapter := need(t, "@agentclientprotocol/claude-agent-acp/dist/index.js", "@agentclientprotocol/claude-agent-acp")
	remote, env := claudeRemote(t, h)
	return []string{remote[0], adapter}, env
}

// TestClaudeAgentACP: the real Claude Code through claude-agent-acp 0.101.0
// as joule acp's L4, its whole process tree contained by joule-exec with
// the session's grant, in its default permission mode and in
// bypassPermissions (joule acp --remote-mode, set over ACP). Allowed, its own Write and Bash land on the disk and are
// one signed op, its model calls metered through joule proxy; denied (a
// write in the workspace, a command that writes, a write outside the
// workspace), nothing touches the disk and the agent's own tool reports
// the failure to the model in the turn. In bypassPermissions no permission
// request reaches joule: only the kernel stops the writes.
func TestClaudeAgentACP(t *testing.T) {
	for _, mode := range []string{"default", "bypassPermissions"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			t.Run("allowed", func(t *testing.T) {
				h, remote, env, api, proxyURL := claudeAgentHome(t, mode)
				h.run(t, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
				s := h.acp(t, remote, proxyURL, env...)
				stop, said := s.prompt(t, "WRITE AND RUN: make out.txt and record the run")
				t.Logf("the editor saw:\n%s\ntool results: %v", said, api.results)
				if stop != acp.StopReasonEndTurn {
					t.Fatalf("stop %s", stop)
				}
				if b, err := os.ReadFile(filepath.Join(h.ws, "out.txt")); err != nil || string(b) != "hello from claude\n" {
					t.Errorf("out.txt: %q %v; tool results %v", b, err, api.results)
				}
				if b, err := os.ReadFile(filepath.Join(h.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
					t.Errorf("ran.txt: %q %v; tool results %v", b, err, api.results)
				}
				if strings.Contains(said, "undid") {
					t.Errorf("joule undid something of an allowed turn: %s", said)
				}
				checkSealed(t, h, s, api, []string{"out.txt", "ran.txt"})
				s.close(t)
				h.noneLeft(t, "after the session")
			})
			t.Run("denied", func(t *testing.T) {
				h, remote, env, api, proxyURL := claudeAgentHome(t, mode)
				h.run(t, "grant", "issue", "--allow", "Read", "--deny", "Write", "--deny", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
				s := h.acp(t, remote, proxyURL, env...)
				for _, p := range []string{"WRITE AND RUN: make out.txt", "RUN ONLY: record the run", "OUTSIDE: write next to the workspace"} {
					checkDeniedTurn(t, s, api, p, true, failed)
				}
				checkNothingWritten(t, h)
				if len(s.ed.asked) != 0 {
					t.Errorf("the editor was asked %v: the grant decides", s.ed.asked)
				}
				checkMetered(t, h, s, api)
				s.close(t)
				h.noneLeft(t, "after the session")
			})
		})
	}
}

// claudeAgentHome is a fresh home, workspace, fake Anthropic endpoint and
// joule proxy for one claude-agent-acp session in mode.
func claudeAgentHome(t *testing.T, mode string) (*home, []string, []string, *fakeAnthropic, string) {
	h := newHome(t)
	remote, env := claudeAgentRemote(t, h)
	if mode != "default" {
		// Claude Code drops an escalating defaultMode from the settings of a
		// workspace it was not told to trust: the session's mode is set
		// over ACP instead (joule acp --remote-mode).
		env = append(env, "JOULE_ACP_REMOTE_MODE="+mode)
	}
	api := &fakeAnthropic{ws: h.ws}
	return h, remote, env, api, h.proxy(t, "--anthropic", serve(t, api))
}

// failed says whether a tool result the fake endpoint recorded ("id
// error=BOOL content") is a failure: flagged as an error, or saying the
// system call was refused.
func failed(result string) bool {
	if strings.Contains(result, "error=true") {
		return true
	}
	for _, w := range []string{"Read-only file system", "EROFS", "EACCES", "Permission denied", "ermission denied", "not permitted"} {
		if strings.Contains(result, w) {
			return true
		}
	}
	return false
}

// checkMetered checks the session's model calls (metered).
func checkMetered(t testing.TB, h *home, s *acpSession, api tokenCounter) {
	t.Helper()
	metered(t, h.receipts(t, string(s.id)), api)
}
