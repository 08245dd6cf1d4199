package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/joulehook/joule/plugins/hook/hosttest"
)

// TestMain builds joule, joule-hook and joule-exec and runs the tests in
// a loopback-only network namespace and a mount namespace of their own
// (hosttest.Main).
func TestMain(m *testing.M) {
	os.Exit(hosttest.Main(m, "../../..", "joule-hook"))
}

// claudeBin finds the pinned Claude Code CLI.
func claudeBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the real Claude Code runs take minutes: not with -short")
	}
	root, _ := filepath.Abs("node_modules")
	candidates := []string{filepath.Join(root, ".bin", "claude")}
	if m, _ := filepath.Glob(filepath.Join(root, "@anthropic-ai", "claude-code-"+runtime.GOOS+"-*", "claude")); m != nil {
		candidates = append(m, candidates...)
	}
	for _, c := range candidates {
		if out, err := exec.Command(c, "--version").Output(); err == nil && strings.Contains(string(out), "Claude Code") {
			return c
		}
	}
	msg := "the pinned Claude Code CLI is not installed under " + root + ": run .ci/setup.d/10-hosts.sh (npm ci --prefix plugins/claudecode/e2e)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
