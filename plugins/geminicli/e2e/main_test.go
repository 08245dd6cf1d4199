package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook/hosttest"

	"github.com/joulehook/joule/internal/testdeps"
)

// TestMain builds joule, joule-hook and joule-exec as make build does and
// runs the tests in a loopback-only network namespace (hosttest.Main); the
// tests find the binaries in hosttest.Bin.
func TestMain(m *testing.M) {
	os.Exit(hosttest.Main(m, "../../..", "joule-hook"))
}

// geminiJS finds the pinned CLI that .ci/setup.d/10-hosts.sh installs with
// npm ci into this directory.
func geminiJS(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the real Gemini CLI runs take minutes: not with -short")
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is missing: .ci/setup.d/10-hosts.sh installs it and the pinned Gemini CLI")
		}
		t.Skip("node is missing: install Node.js and run .ci/setup.d/10-hosts.sh to run the real Gemini CLI test")
	}
	js := filepath.Join(testdeps.NodeModules("."), "@google/gemini-cli/bundle/gemini.js")
	if _, err := os.Stat(js); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the pinned Gemini CLI is not installed (%v): run .ci/setup.d/10-hosts.sh", err)
		}
		t.Skipf("the pinned Gemini CLI is not installed (%v): run .ci/setup.d/10-hosts.sh", err)
	}
	return js
}

// fixture is one user: a home with Gemini's user settings, a $JOULE_HOME
// with a grant for ws, and the fake API the CLI talks to.
type fixture struct {
	t               *testing.T
	js              string
	home, jhome, ws string
	api             *fakeGemini
	addr            string
	env             []string
}

func newFixture(t *testing.T, initFlags ...string) *fixture {
	t.Helper()
	js := geminiJS(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	f := &fixture{t: t, js: js, home: filepath.Join(dir, "u"), jhome: filepath.Join(dir, "h"), ws: filepath.Join(dir, "ws"), api: &fakeGemini{}}
	os.MkdirAll(filepath.Join(f.ws, "src"), 0o755)
	os.MkdirAll(filepath.Join(f.home, ".gemini"), 0o755)
	// Gemini's user settings: an API key's auth, nothing sent home.
	os.WriteFile(filepath.Join(f.home, ".gemini", "settings.json"), []byte(`{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "telemetry": {"enabled": false}
}
`), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f.api}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f.addr = ln.Addr().String()
	f.env = []string{"HOME=" + f.home, "JOULE_HOME=" + f.jhome, "JOULE_GATE_IDLE=2m",
		"PATH=" + hosttest.Bin + ":/usr/local/bin:/usr/bin:/bin", "TMPDIR=" + filepath.Join(dir, "tmp")}
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	if r := f.joule(append([]string{"init", "--steward", "test.example", "--workspace", f.ws}, initFlags...)...); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	t.Cleanup(func() { f.joule("gate", "stop") })
	return f
}

type result struct {
	code           int
	stdout, stderr string
}

func run(ctx context.Context, dir string, env []string, stdin string, name string, args ...string) result {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	r := result{stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.code, r.stderr = -1, r.stderr+err.Error()
	}
	return r
}

// joule runs the joule binary as this fixture's user, in ws.
func (f *fixture) joule(args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return run(ctx, f.ws, f.env, "", filepath.Join(hosttest.Bin, "joule"), args...)
}

// gemini runs the real CLI headless in ws against the fake API.
func (f *fixture) gemini(extraEnv []string, args ...string) result {
	f.t.Helper()
	// Generous: on a loaded machine one run takes a minute or more.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := append(append([]string{}, f.env...), "GEMINI_API_KEY=test-dummy-key", "GOOGLE_GEMINI_BASE_URL=http://"+f.addr,
		"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1")
	env = append(env, extraEnv...)
	return run(ctx, f.ws, env, "", "node", append([]string{f.js, "--model", "gemini-2.5-flash", "--output-format", "json"}, args...)...)
}
