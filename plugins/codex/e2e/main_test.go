package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// binDir holds joule and joule-hook side by side, built as make build
// builds them.
var binDir string

// netnsEnv marks the copy of the test binary that runs inside the
// loopback-only network namespace.
const netnsEnv = "JOULE_CODEX_E2E_NETNS"

func TestMain(m *testing.M) {
	if d := os.Getenv("JOULE_CODEX_E2E_BIN"); d != "" && os.Getenv(netnsEnv) == "1" {
		binDir = d
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "joule-codex-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	for _, b := range []struct{ name, pkg string }{{"joule", "../../../cmd/joule"}, {"joule-hook", "../../../cmd/joule-hook"}, {"joule-exec", "../../../cmd/joule-exec"}} {
		build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, b.name), b.pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			os.Stderr.Write(out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := 0
	if inNetns() {
		// The same test binary, with the same flags, in a namespace whose
		// only interface is loopback: nothing the CLI does can leave the
		// machine; and in a mount namespace of its own, where a system-mode
		// test overlays /etc (hosttest.Machine).
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
		cmd := exec.CommandContext(ctx, "unshare", append([]string{"-n", "-m", "--", "sh", "-c", `ip link set lo up && exec "$0" "$@"`, os.Args[0]}, os.Args[1:]...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), netnsEnv+"=1", "JOULE_CODEX_E2E_BIN="+dir)
		if err := cmd.Run(); err != nil {
			code = 1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		cancel()
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// inNetns reports whether this machine lets the test make a loopback-only
// network namespace (root, unshare and ip present, and the kernel allows
// it).
func inNetns() bool {
	if os.Getenv("JOULE_CODEX_E2E_NO_NETNS") != "" || runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return false
	}
	return exec.Command("unshare", "-n", "-m", "--", "sh", "-c", "ip link set lo up").Run() == nil
}

// codexBin finds the pinned Codex CLI's native binary, which
// .ci/setup.d/11-codex.sh installs with npm ci into testdata.
func codexBin(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("testdata/node_modules")
	m, _ := filepath.Glob(filepath.Join(root, "@openai", "codex-linux-*", "vendor", "*", "bin", "codex"))
	for _, c := range m {
		if out, err := exec.Command(c, "--version").Output(); err == nil && strings.HasPrefix(string(out), "codex-cli ") {
			return c
		}
	}
	msg := "the pinned Codex CLI is not installed under " + root + ": run .ci/setup.d/11-codex.sh (npm ci --prefix plugins/codex/e2e/testdata)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
