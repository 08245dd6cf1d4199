// Package e2e runs the real OpenCode CLI (opencode-ai, pinned in
// testdata/package.json, installed by .ci/setup.d/10-hosts.sh) headless
// and offline against a fake Chat Completions endpoint, with joule
// installed by `joule install opencode --project` as a user would.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook/hosttest"
)

// joule-hook beside joule, as make build puts it: the plugin runs the thin
// client, which forwards the install's containment mode to the resident gate.
func TestMain(m *testing.M) { os.Exit(hosttest.Main(m, "../../..", "joule-hook")) }

// opencodeBin finds the pinned CLI, asking its version once per run (a
// start of the CLI is slow).
func opencodeBin(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("testdata/node_modules")
	binOnce.Do(func() {
		for _, c := range []string{filepath.Join(root, "opencode-linux-x64", "bin", "opencode"), filepath.Join(root, ".bin", "opencode")} {
			if out, err := exec.Command(c, "--version").Output(); err == nil && strings.TrimSpace(string(out)) == "1.18.33" {
				binPath = c
				return
			}
		}
	})
	if binPath == "" {
		hosttest.NeedTool(t, "the pinned OpenCode CLI (opencode-ai 1.18.33) under "+root, "run .ci/setup.d/10-hosts.sh (npm ci --prefix plugins/opencode/e2e/testdata)")
	}
	return binPath
}

var (
	binOnce sync.Once
	binPath string
)

// world is one user: a $JOULE_HOME with a grant for ws, a home with
// OpenCode's user configuration pointing at the fake model server.
type world struct {
	t              *testing.T
	joule          string
	home, user, ws string
	api            *hosttest.Server
	env            []string
	opencode       string
	session        string // the last run's session id
	lastRunOutput  string
	installOut     string
}

func newWorld(t *testing.T, installArgs ...string) *world {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	w := &world{t: t, joule: filepath.Join(hosttest.Bin, "joule"), opencode: opencodeBin(t),
		home: filepath.Join(dir, "home"), user: filepath.Join(dir, "user"), ws: filepath.Join(dir, "ws")}
	os.MkdirAll(filepath.Join(w.ws, "src"), 0o755)
	os.MkdirAll(filepath.Join(w.user, ".config", "opencode"), 0o755)
	api, err := hosttest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	w.api = api
	w.env = []string{"HOME=" + w.user, "JOULE_HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin",
		"TMPDIR=" + filepath.Join(dir, "tmp"), "XDG_CONFIG_HOME=" + filepath.Join(w.user, ".config"),
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1"}
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	if r := w.run("init", "--steward", "test.example", "--workspace", w.ws); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	// The resident gate joule-hook starts for this home.
	t.Cleanup(func() { w.run("gate", "stop") })
	// joule's own MCP tools are gated too: this grant lets one through.
	if r := w.run("grant", "issue", "--template", "dev", "--allow", "mcp__joule__read_file", "--workspace", w.ws, "--use"); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	// The user's own OpenCode configuration: the model provider. joule
	// writes only the project's.
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": api.URL, "apiKey": "sk-test-dummy"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "Fake", "tool_call": true}},
		}},
		"model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled",
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(filepath.Join(w.user, ".config", "opencode", "opencode.json"), b, 0o644)
	// Offline, OpenCode installs @opencode-ai/plugin into each config
	// directory in the background and waits for it; npm's retries make
	// that about 70 s. A registry on a closed port, without retries, fails
	// it at once.
	os.WriteFile(filepath.Join(w.user, ".npmrc"), []byte("registry=http://127.0.0.1:9/\nfetch-retries=0\nfetch-timeout=2000\n"), 0o644)
	w.install(installArgs...)
	return w
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs joule with the world's environment, in ws.
func (w *world) run(args ...string) result {
	w.t.Helper()
	cmd := exec.Command(w.joule, args...)
	cmd.Dir, cmd.Env = w.ws, w.env
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("joule %v: %v", args, err)
	}
	return result{code, so.String(), se.String()}
}

func (w *world) install(extra ...string) {
	w.t.Helper()
	r := w.run(append([]string{"install", "opencode", "--project"}, extra...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "armed: every opencode tool call is decided by joule") {
		w.t.Fatalf("joule install opencode --project %v: %+v", extra, r)
	}
	w.installOut = r.stdout
}

// opencodeRun runs `opencode run --format json` in ws and returns its
// events; the run's session id is kept for receipts.
func (w *world) opencodeRun(extraEnv ...string) []map[string]any {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(w.opencode, "run", "--format", "json", "--print-logs", "--log-level", "INFO", "do the task")
	cmd.Dir, cmd.Env = w.ws, append(append([]string{}, w.env...), extraEnv...)
	start := time.Now()
	out, err := hosttest.Run(ctx, cmd)
	w.t.Logf("opencode run took %v", time.Since(start).Round(time.Millisecond))
	w.lastRunOutput = string(out)
	if err != nil {
		w.t.Fatalf("opencode run: %v\n%s", err, tail(string(out), 6000))
	}
	var events []map[string]any
	for _, line := range strings.Split(string(out), "\n") {
		var ev map[string]any
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		events = append(events, ev)
		if s, _ := ev["sessionID"].(string); s != "" {
			w.session = s
		}
	}
	if w.session == "" {
		w.t.Fatalf("no session id in opencode's events:\n%s", tail(string(out), 6000))
	}
	return events
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// toolResult is what the model was sent back for its scripted call number
// i (0-based over the run's tool calls, in order).
func (w *world) toolResult(i int) string {
	w.t.Helper()
	results := w.api.ToolResults()
	var ids []string
	for _, r := range w.api.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && !contains(ids, m.ToolCallID) {
				ids = append(ids, m.ToolCallID)
			}
		}
	}
	if i >= len(ids) {
		w.t.Fatalf("the model got %d tool results, not %d:\n%s", len(ids), i+1, tail(w.api.AllText(), 4000))
	}
	return results[ids[i]]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func bash(command string) hosttest.Turn {
	return hosttest.Turn{Calls: []hosttest.Call{{Name: "bash", Args: map[string]any{"command": command, "description": "scripted by the test"}}}}
}

// receipts lists the last run's session's receipts.
func (w *world) receipts() string {
	w.t.Helper()
	return w.run("receipts", "ls", w.session).stdout
}

// TestOpenCodeE2E: one task whose model denies, allows, writes and calls
// joule's MCP server, each checked by its effect, by what the model was
// sent back and by the sealed receipts.
func TestOpenCodeE2E(t *testing.T) {
	t.Parallel() // each task is one slow OpenCode start
	w := newWorld(t)
	plugin, err := os.ReadFile(filepath.Join(w.ws, ".opencode", "plugins", "joule.ts"))
	if err != nil || !strings.Contains(string(plugin), w.joule) {
		t.Fatalf("the plugin does not run %s: %v\n%s", w.joule, err, plugin)
	}
	os.WriteFile(filepath.Join(w.ws, "src", "hello.txt"), []byte("hello from the workspace\n"), 0o644)
	w.api.Script(
		bash("dd if=/dev/null of=denied.txt"),
		// Contained (the default).
		bash("touch src/allowed.txt && echo ran > src/allowed.txt"),
		hosttest.Turn{Calls: []hosttest.Call{{Name: "write", Args: map[string]any{"filePath": filepath.Join(w.ws, "src", "written.txt"), "content": "written by the model\n"}}}},
		hosttest.Turn{Calls: []hosttest.Call{{Name: "joule_read_file", Args: map[string]any{"path": "src/hello.txt"}}}},
		hosttest.Turn{Text: "all done"},
	)
	w.opencodeRun()
	t.Logf("loopback-only network namespace: %v", hosttest.NetNS)

	t.Run("config loaded", func(t *testing.T) {
		reqs := w.api.Requests()
		var tools []string
		for _, r := range reqs {
			if len(r.Tools) > 0 {
				tools = r.Tools
				break
			}
		}
		// joule's MCP server (mcp.joule in opencode.json) is offered.
		for _, want := range []string{"bash", "write", "joule_read_file", "joule_run_command", "joule_gate"} {
			if !contains(tools, want) {
				t.Errorf("the model was not offered %s: %v", want, tools)
			}
		}
	})
	rs := w.receipts()
	t.Logf("receipts:\n%s", rs)
	t.Run("denied", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(w.ws, "denied.txt")); err == nil {
			t.Fatal("denied.txt exists: the deny did not bind")
		}
		if got := w.toolResult(0); !strings.Contains(got, "joule deny (action-not-granted)") {
			t.Fatalf("the model's next request does not carry joule's reason: %q", got)
		}
		if !strings.Contains(rs, " deny ") || !strings.Contains(rs, "Bash: dd if=/dev/null of=denied.txt") {
			t.Fatal("the deny is not sealed")
		}
	})
	t.Run("allowed after the deny, same task", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(w.ws, "src", "allowed.txt"))
		if err != nil || strings.TrimSpace(string(b)) != "ran" {
			t.Fatalf("the allowed command did not run (%v, %q); tool result %q", err, b, w.toolResult(1))
		}
		if !strings.Contains(rs, "Bash: touch src/allowed.txt") || !strings.Contains(rs, " rewrite ") {
			t.Fatal("the contained allow is not sealed")
		}
	})
	t.Run("write gated as a write", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(w.ws, "src", "written.txt"))
		if err != nil || string(b) != "written by the model\n" {
			t.Fatalf("the write did not happen (%v, %q); tool result %q", err, b, w.toolResult(2))
		}
		if !strings.Contains(rs, "Write: "+filepath.Join(w.ws, "src", "written.txt")) {
			t.Fatal("the write is not sealed as Write")
		}
	})
	t.Run("gated MCP tool", func(t *testing.T) {
		if got := w.toolResult(3); !strings.Contains(got, "hello from the workspace") {
			t.Fatalf("joule_read_file through OpenCode returned %q", got)
		}
		if !strings.Contains(rs, "allow     allowed") || !strings.Contains(rs, "mcp__joule__read_file") {
			t.Fatal("the plugin did not gate the MCP call")
		}
	})
	t.Run("receipts verify", func(t *testing.T) {
		r := w.run("receipts", "verify")
		if r.code != 0 || !strings.Contains(r.stdout, "receipts verified") {
			t.Fatalf("receipts verify: %+v", r)
		}
	})
}

// failures are what the plugin meets when joule fails, one per call of one
// task, chosen by a counter the stand-in hook binary keeps. The last call
// finds no binary at all: the one before removes it.
var failures = []struct{ name, script string }{
	{"crash", `kill -SEGV $$`},
	{"exit 1, no output", `exit 1`},
	{"exit 2, no output", `exit 2`},
	{"exit 0, empty output", `exit 0`},
	{"garbage output", `echo 'this is not json'; exit 0`},
	{"truncated JSON", `printf '{"decision":"allow"'; exit 0`},
	{"timeout", `sleep 30`},
	{"missing binary", ``},
}

// TestOpenCodeFailures runs one task whose every tool call meets a failing
// joule, and checks that each is blocked, by its effect and by what the
// model is told, and that the task goes on to the next call.
func TestOpenCodeFailures(t *testing.T) {
	t.Parallel() // each task is one slow OpenCode start
	w := newWorld(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "joule-failing")
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\nn=$(cat " + dir + "/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + dir + "/n\ncat > /dev/null\n")
	sh.WriteString(fmt.Sprintf("[ $n -ge %d ] && rm -f %s\ncase $n in\n", len(failures)-1, bin))
	var turns []hosttest.Turn
	for i, f := range failures {
		if f.script != "" {
			fmt.Fprintf(&sh, "%d) %s ;;\n", i+1, f.script)
		}
		turns = append(turns, bash(fmt.Sprintf("touch fail%d.txt", i+1)))
	}
	sh.WriteString("esac\n")
	os.WriteFile(bin, []byte(sh.String()), 0o755)
	w.api.Script(append(turns, hosttest.Turn{Text: "all done"})...)
	// The stand-in is both the client the plugin runs first and joule.
	w.opencodeRun("JOULE_HOOK_CLIENT="+bin, "JOULE_BIN="+bin, "JOULE_HOOK_TIMEOUT_MS=5000")
	for i, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(w.ws, fmt.Sprintf("fail%d.txt", i+1))); err == nil {
				t.Fatal("the command ran: the plugin failed open")
			}
			if got := w.toolResult(i); !strings.Contains(got, "the call is blocked") {
				t.Fatalf("the model was told %q", got)
			}
			t.Logf("the model was told: %s", w.toolResult(i))
		})
	}
}

// TestOpenCodeContain installs (contained, the default) under a grant whose
// bare Bash rule lets analysis allow anything: what a Makefile's recipe then does
// (which analysis cannot see) is stopped by the kernel, under joule exec,
// while ordinary work runs.
func TestOpenCodeContain(t *testing.T) {
	t.Parallel() // each task is one slow OpenCode start
	w := newWorld(t)
	if r := w.run("grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash", "--budget", "50J", "--workspace", w.ws, "--use"); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	w.install()
	// Through the thin client, which forwards --contain to the resident gate.
	if !strings.Contains(w.installOut, "ok   containment: allowed bash commands run under joule exec (landlock ABI") ||
		!strings.Contains(w.installOut, "joule-hook opencode --contain\n") {
		t.Fatalf("install:\n%s", w.installOut)
	}
	plugin, _ := os.ReadFile(filepath.Join(w.ws, ".opencode", "plugins", "joule.ts"))
	key, _ := os.ReadFile(filepath.Join(w.home, "steward.key"))
	makefile := "leak:\n\t-@cat $$JOULE_HOME/steward.key\n\t-@cp /dev/null .opencode/plugins/joule.ts\n" +
		"\t-@rm -f .opencode/plugins/joule.ts\n\t-@touch $$HOME/outside.txt\n\t@echo done\n"
	os.WriteFile(filepath.Join(w.ws, "Makefile"), []byte(makefile), 0o644)
	w.api.Script(
		bash("mkdir -p src/sub && echo ran > src/sub/allowed.txt; cat src/sub/allowed.txt"),
		bash("make -s leak"),
		hosttest.Turn{Text: "all done"},
	)
	w.opencodeRun()
	rs := w.receipts()
	t.Run("ordinary work runs contained", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(w.ws, "src", "sub", "allowed.txt")); err != nil || string(b) != "ran\n" {
			t.Fatalf("the contained command did not run (%v, %q): %q", err, b, w.toolResult(0))
		}
		if !strings.Contains(w.toolResult(0), "ran") {
			t.Fatalf("tool result %q", w.toolResult(0))
		}
		if !strings.Contains(rs, " rewrite ") {
			t.Fatalf("the receipt does not record the rewrite:\n%s", rs)
		}
	})
	t.Run("the kernel refuses what analysis let through", func(t *testing.T) {
		got := w.toolResult(1)
		for _, want := range []string{"steward.key: Permission denied", "joule.ts': ", "outside.txt': ", "done"} {
			if !strings.Contains(got, want) {
				t.Errorf("tool result lacks %q: %q", want, got)
			}
		}
		if len(key) > 0 && strings.Contains(got, strings.TrimSpace(string(key))) {
			t.Fatal("the steward key reached the model")
		}
		if b, _ := os.ReadFile(filepath.Join(w.ws, ".opencode", "plugins", "joule.ts")); string(b) != string(plugin) {
			t.Fatal("the plugin was changed by the contained command")
		}
		if _, err := os.Stat(filepath.Join(w.user, "outside.txt")); err == nil {
			t.Fatal("a file was written outside the workspace")
		}
	})
}
