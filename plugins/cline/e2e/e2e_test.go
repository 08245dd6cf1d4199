// Package e2e runs the real Cline CLI (cline, pinned in
// testdata/package.json, installed by .ci/setup.d/10-hosts.sh) headless
// and offline against a fake Chat Completions endpoint, with joule
// installed by `joule install cline --project` as a user would.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook/hosttest"
)

func TestMain(m *testing.M) { os.Exit(hosttest.Main(m, "../../..")) }

// clineBin finds the pinned CLI's native binary (the npm package's bin is a
// node wrapper around it).
func clineBin(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("testdata/node_modules")
	for _, c := range []string{filepath.Join(root, "@cline", "cli-linux-x64", "bin", "cline"), filepath.Join(root, "cline", "bin", ".cline")} {
		if st, err := os.Stat(c); err == nil && st.Mode()&0o111 != 0 {
			return c
		}
	}
	hosttest.NeedTool(t, "the pinned Cline CLI (cline 3.0.65) under "+root, "run .ci/setup.d/10-hosts.sh (npm ci --prefix plugins/cline/e2e/testdata)")
	return ""
}

type world struct {
	t              *testing.T
	joule, cline   string
	home, user, ws string
	api            *hosttest.Server
	env            []string
	installOut     string
}

type result struct {
	code           int
	stdout, stderr string
}

func newWorld(t *testing.T, install ...string) *world {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	w := &world{t: t, joule: filepath.Join(hosttest.Bin, "joule"), cline: clineBin(t),
		home: filepath.Join(dir, "home"), user: filepath.Join(dir, "user"), ws: filepath.Join(dir, "ws")}
	os.MkdirAll(filepath.Join(w.ws, "src"), 0o755)
	os.MkdirAll(w.user, 0o755)
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	api, err := hosttest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	w.api = api
	// The hook runs in the CLI's own process tree: the local backend, not
	// the hub daemon that outlives it.
	w.env = []string{"HOME=" + w.user, "JOULE_HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin",
		"TMPDIR=" + filepath.Join(dir, "tmp"), "CLINE_SESSION_BACKEND_MODE=local", "CLINE_TELEMETRY_DISABLED=1"}
	if r := w.run(w.joule, "init", "--steward", "test.example", "--workspace", w.ws); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	r := w.run(w.joule, append([]string{"install", "cline", "--project"}, install...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "armed: every cline tool call is decided by joule") ||
		!strings.Contains(r.stdout, "ok   joule's MCP server in "+filepath.Join(w.user, ".cline", "data", "settings", "cline_mcp_settings.json")) {
		t.Fatalf("joule install cline --project %v: %+v", install, r)
	}
	w.installOut = r.stdout
	// The user's own step: the model provider.
	if r := w.runCtx(3*time.Minute, w.cline, "auth", "-p", "openai-compatible", "-k", "sk-test-dummy", "-m", "fake-model", "-b", api.URL); r.code != 0 {
		t.Fatalf("cline auth: %+v", r)
	}
	return w
}

func (w *world) run(bin string, args ...string) result {
	w.t.Helper()
	return w.runCtx(time.Minute, bin, args...)
}

func (w *world) runCtx(d time.Duration, bin string, args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = w.ws, w.env
	out, err := hosttest.Run(ctx, cmd)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return result{code: code, stdout: string(out)}
}

// task runs one headless task in ws, with the CLI's flags.
func (w *world) task(flags ...string) result {
	w.t.Helper()
	start := time.Now()
	r := w.runCtx(6*time.Minute, w.cline, append(append([]string{"--json"}, flags...), "do the task")...)
	w.t.Logf("cline task took %v, exit %d", time.Since(start).Round(time.Millisecond), r.code)
	return r
}

func runCommands(command string) hosttest.Turn {
	return hosttest.Turn{Calls: []hosttest.Call{{Name: "run_commands", Args: map[string]any{"commands": []string{command}}}}}
}

// toolResult is what the model was sent back for the run's tool call
// number i (0-based, in order).
func (w *world) toolResult(i int) string {
	w.t.Helper()
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
	return w.api.ToolResults()[ids[i]]
}

// after is everything the model was shown after tool call number i's
// result: the hook's context arrives there.
func (w *world) after(i int) string {
	w.t.Helper()
	reqs := w.api.Requests()
	var b strings.Builder
	for _, r := range reqs {
		tools := 0
		for _, m := range r.Messages {
			if m.Role == "tool" {
				tools++
			}
		}
		if tools > i {
			for _, m := range r.Messages {
				b.WriteString(m.Role + ": " + m.Content + "\n")
			}
			break
		}
	}
	return b.String()
}

// taskID is the task (joule's session) the CLI's JSON events name.
func taskID(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.TaskID != "" {
			return ev.TaskID
		}
	}
	t.Fatalf("no taskId in cline's output:\n%s", tail(out, 3000))
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestClineE2E: one task whose model is denied a command, then runs an
// allowed one and an edit in the same task, each checked by its effect, by
// what the model was sent and by the sealed receipts.
func TestClineE2E(t *testing.T) {
	t.Parallel() // each task is one slow Cline start
	w := newWorld(t)
	// The dev template, and one of joule's own MCP tools: what it does is
	// gated again inside joule mcp.
	if r := w.run(w.joule, "grant", "issue", "--template", "dev", "--allow", "mcp__joule__write_file", "--workspace", w.ws, "--use"); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	w.api.Script(
		runCommands("dd if=/dev/null of=denied.txt"),
		// Contained (the default).
		runCommands("touch src/allowed.txt && echo ran > src/allowed.txt"),
		hosttest.Turn{Calls: []hosttest.Call{{Name: "editor", Args: map[string]any{"path": "src/written.txt", "new_text": "written by the model\n"}}}},
		// Shapes of run_commands input Cline runs (TestClineFailures shows
		// it): an argv entry, and a command key that a valid commands
		// list shadows.
		hosttest.Turn{Calls: []hosttest.Call{{Name: "run_commands", Args: map[string]any{"commands": []any{"ls", map[string]any{"command": "dd", "args": []string{"if=/dev/null", "of=argv.txt"}}}}}}},
		hosttest.Turn{Calls: []hosttest.Call{{Name: "run_commands", Args: map[string]any{"commands": []string{"dd if=/dev/null of=shadow.txt"}, "command": "ls"}}}},
		// joule's MCP server: a tool the grant does not name, then one it
		// does, in the same task.
		hosttest.Turn{Calls: []hosttest.Call{{Name: "joule__run_command", Args: map[string]any{"command": "touch mcp-denied.txt"}}}},
		hosttest.Turn{Calls: []hosttest.Call{{Name: "joule__write_file", Args: map[string]any{"path": "src/mcp.txt", "content": "via mcp\n"}}}},
		hosttest.Turn{Text: "all done"},
	)
	r := w.task()
	t.Logf("loopback-only network namespace: %v", hosttest.NetNS)
	if testing.Verbose() {
		t.Logf("cline output:\n%s", tail(r.stdout, 3000))
	}
	rs := w.run(w.joule, "receipts", "ls", taskID(t, r.stdout)).stdout
	t.Logf("receipts:\n%s", rs)
	t.Run("config loaded", func(t *testing.T) {
		var tools []string
		for _, r := range w.api.Requests() {
			if len(r.Tools) > 0 {
				tools = r.Tools
				break
			}
		}
		for _, want := range []string{"run_commands", "editor"} {
			if !contains(tools, want) {
				t.Errorf("the model was not offered %s: %v", want, tools)
			}
		}
	})
	t.Run("denied, and the model told why", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(w.ws, "denied.txt")); err == nil {
			t.Fatal("denied.txt exists: the deny did not bind")
		}
		if !strings.Contains(rs, " deny ") || !strings.Contains(rs, "Bash: dd if=/dev/null of=denied.txt") {
			t.Fatal("the deny is not sealed")
		}
		t.Logf("tool result: %q", w.toolResult(0))
		if got := w.after(0); !strings.Contains(got, "joule deny (action-not-granted)") {
			t.Fatalf("the model's next request does not carry joule's reason:\n%s", tail(got, 3000))
		}
	})
	t.Run("allowed after the deny, same task", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(w.ws, "src", "allowed.txt"))
		if err != nil || strings.TrimSpace(string(b)) != "ran" {
			t.Fatalf("the allowed command did not run (%v, %q)", err, b)
		}
		if !strings.Contains(rs, "Bash: touch src/allowed.txt") || !strings.Contains(rs, " rewrite ") {
			t.Fatal("the allow is not sealed")
		}
	})
	t.Run("edit gated as a write", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(w.ws, "src", "written.txt"))
		if err != nil || string(b) != "written by the model\n" {
			t.Fatalf("the edit did not happen (%v, %q)", err, b)
		}
		if !strings.Contains(rs, "Edit: "+filepath.Join(w.ws, "src", "written.txt")) {
			t.Fatal("the edit is not sealed as Edit")
		}
	})
	t.Run("every run_commands shape judged as Cline runs it", func(t *testing.T) {
		for i, f := range []string{"argv.txt", "shadow.txt"} {
			if _, err := os.Stat(filepath.Join(w.ws, f)); err == nil {
				t.Errorf("%s exists: the command ran", f)
			}
			if got := w.after(3 + i); !strings.Contains(got, "joule deny (action-not-granted)") {
				t.Errorf("the model was not told why %s was refused:\n%s", f, tail(got, 2000))
			}
		}
		// receipts ls prints a summary's newline as its escape, \n, so the
		// two-line command stays in one cell.
		for _, want := range []string{`Bash: ls\ndd 'if=/dev/null' 'of=argv.txt'`, "Bash: dd if=/dev/null of=shadow.txt"} {
			if !strings.Contains(rs, want) {
				t.Errorf("no receipt for %q", want)
			}
		}
	})
	t.Run("joule's MCP tools offered", func(t *testing.T) {
		var tools []string
		for _, r := range w.api.Requests() {
			if len(r.Tools) > 0 {
				tools = r.Tools
				break
			}
		}
		for _, want := range []string{"joule__write_file", "joule__run_command", "joule__status"} {
			if !contains(tools, want) {
				t.Errorf("the model was not offered %s: %v", want, tools)
			}
		}
	})
	t.Run("MCP deny per call, the task goes on", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(w.ws, "mcp-denied.txt")); err == nil {
			t.Fatal("mcp-denied.txt exists: the denied MCP call ran")
		}
		t.Logf("tool result: %q", w.toolResult(5))
		if got := w.after(5); !strings.Contains(got, "joule deny (action-not-granted)") || !strings.Contains(got, "mcp__joule__run_command") {
			t.Fatalf("the model's next request does not carry joule's reason:\n%s", tail(got, 3000))
		}
		if !strings.Contains(rs, "mcp__joule__run_command") {
			t.Fatal("the MCP deny is not sealed")
		}
	})
	t.Run("MCP allowed after the deny, gated again in joule mcp", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(w.ws, "src", "mcp.txt")); err != nil || string(b) != "via mcp\n" {
			t.Fatalf("joule's MCP write_file did not write (%v, %q): %q", err, b, w.toolResult(6))
		}
		if !strings.Contains(rs, "mcp__joule__write_file") {
			t.Fatal("the hook's allow of the MCP call is not sealed")
		}
		if got := w.run(w.joule, "receipts", "ls", "--tool", "Write").stdout; !strings.Contains(got, filepath.Join(w.ws, "src", "mcp.txt")) {
			t.Fatalf("joule mcp did not seal its Write:\n%s", got)
		}
	})
	t.Run("receipts verify", func(t *testing.T) {
		r := w.run(w.joule, "receipts", "verify")
		if r.code != 0 || !strings.Contains(r.stdout, "receipts verified") {
			t.Fatalf("receipts verify: %+v", r)
		}
	})
}

// clineFailures are what Cline does with a PreToolUse hook that fails, one
// per call of one task, measured with a stand-in hook that a counter
// drives. ranOpen is what Cline 3.0.65 did (docs/hosts.md's table): the
// command ran anyway. The last call runs joule's installed script with its
// joule binary gone, which must deny (and so ends the task).
var clineFailures = []struct {
	name, script string
	ranOpen      bool
	// input is the run_commands input that touches file (default: one
	// command); two of them are shapes TestClineE2E has joule refuse.
	input func(file string) any
}{
	{"crash", `kill -SEGV $$`, true, nil},
	{"exit 1, no output", `exit 1`, true, nil},
	{"exit 2, no output", `exit 2`, true, nil},
	{"exit 0, empty output (an argv entry)", `exit 0`, true, func(f string) any {
		return map[string]any{"commands": []any{map[string]any{"command": "touch", "args": []string{f}}}}
	}},
	{"garbage output (commands shadows command)", `echo 'this is not json'; exit 0`, true, func(f string) any {
		return map[string]any{"commands": []string{"touch " + f}, "command": "true"}
	}},
	{"missing binary", `exec /nonexistent/joule hook cline`, true, nil},
}

func TestClineFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	hookFile := filepath.Join(w.ws, ".cline", "hooks", "PreToolUse")
	installed, err := os.ReadFile(hookFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// joule's script, with a joule binary that is no longer there.
	gone := filepath.Join(dir, "joule-gone")
	ours := strings.ReplaceAll(string(installed), w.joule, gone)
	os.WriteFile(filepath.Join(dir, "ours"), []byte(ours), 0o755)
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\nn=$(cat " + dir + "/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + dir + "/n\n")
	sh.WriteString("case $n in\n")
	var turns []hosttest.Turn
	for i, f := range clineFailures {
		fmt.Fprintf(&sh, "%d) cat >/dev/null; %s ;;\n", i+1, f.script)
		file := fmt.Sprintf("fail%d.txt", i+1)
		if f.input != nil {
			turns = append(turns, hosttest.Turn{Calls: []hosttest.Call{{Name: "run_commands", Args: f.input(file)}}})
		} else {
			turns = append(turns, runCommands("touch "+file))
		}
	}
	fmt.Fprintf(&sh, "*) exec %s/ours ;;\nesac\n", dir)
	turns = append(turns, runCommands("touch ours.txt"), hosttest.Turn{Text: "all done"})
	os.WriteFile(hookFile, []byte(sh.String()), 0o755)
	w.api.Script(turns...)
	r := w.task()
	for i, f := range clineFailures {
		t.Run(f.name, func(t *testing.T) {
			_, err := os.Stat(filepath.Join(w.ws, fmt.Sprintf("fail%d.txt", i+1)))
			ran := err == nil
			t.Logf("%s: the command ran: %v", f.name, ran)
			if ran != f.ranOpen {
				t.Fatalf("Cline %s the command on a hook that fails with %s; docs/hosts.md says otherwise", map[bool]string{true: "ran", false: "blocked"}[ran], f.name)
			}
		})
	}
	t.Run("joule's script denies when joule is missing", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(w.ws, "ours.txt")); err == nil {
			t.Fatalf("the command ran: the script failed open\n%s", tail(r.stdout, 2000))
		}
		// And the hook was called for it: the stand-in counted every call.
		if b, _ := os.ReadFile(filepath.Join(dir, "n")); strings.TrimSpace(string(b)) != fmt.Sprint(len(clineFailures)+1) {
			t.Fatalf("the hook was called %q times, not %d", b, len(clineFailures)+1)
		}
	})
}

// TestClineHookTimeout measures what Cline does with a PreToolUse hook that
// hangs (a stand-in that sleeps: Cline kills it at its 120 s tool_call
// limit and runs the command), then runs joule's installed script with a
// joule that hangs: the script's timeout answers the deny well before
// Cline's, and the command does not run.
func TestClineHookTimeout(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	hookFile := filepath.Join(w.ws, ".cline", "hooks", "PreToolUse")
	installed, err := os.ReadFile(hookFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(installed), " -k 2 25 ") {
		t.Fatalf("the installed script does not bound joule with timeout(1):\n%s", installed)
	}
	dir := t.TempDir()
	hang := filepath.Join(dir, "joule-hangs")
	os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 300\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "ours"), []byte(strings.ReplaceAll(string(installed), w.joule, hang)), 0o755)
	sh := "#!/bin/sh\nn=$(cat " + dir + "/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + dir + "/n; date +%s.%N > " + dir + "/start$n\n" +
		"case $n in\n1) cat >/dev/null; exec sleep 300 ;;\n*) exec " + dir + "/ours ;;\nesac\n"
	os.WriteFile(hookFile, []byte(sh), 0o755)
	w.api.Script(runCommands("touch hang.txt"), runCommands("touch ours.txt"), hosttest.Turn{Text: "all done"})
	r := w.task()
	end := time.Now()
	started := func(n int) time.Time {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("start%d", n)))
		var sec float64
		if err != nil || func() error { _, err := fmt.Sscan(string(b), &sec); return err }() != nil {
			t.Fatalf("the hook was not called a %d. time: %v\n%s", n, err, tail(r.stdout, 2000))
		}
		return time.Unix(0, int64(sec*1e9))
	}
	t.Run("a hanging hook: Cline runs the command at its timeout", func(t *testing.T) {
		st, err := os.Stat(filepath.Join(w.ws, "hang.txt"))
		if err != nil {
			t.Fatalf("the command did not run after the hanging hook (%v); docs/hosts.md says it does", err)
		}
		took := st.ModTime().Sub(started(1))
		t.Logf("Cline gave up on the hanging hook and ran the command after %v (its limit: %d s)", took.Round(time.Second), 120)
		if took < 100*time.Second {
			t.Fatalf("Cline ran the command %v after the hook started, well before its documented 120 s", took)
		}
	})
	t.Run("joule's script answers before Cline's timeout", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(w.ws, "ours.txt")); err == nil {
			t.Fatal("ours.txt exists: the script let a hanging joule fail open")
		}
		took := end.Sub(started(2))
		t.Logf("the script's deny ended the task %v after the hook started", took.Round(time.Second))
		if took > 100*time.Second {
			t.Fatalf("the script took %v: Cline's timeout came first", took)
		}
	})
}

// TestClineContain: with joule install cline (contained, the default) an allowed
// run_commands call runs under joule exec (overrideInput carries the
// rewritten command), so a grant with a bare Bash rule still has the
// kernel refuse reading the steward key, changing the hook and writing
// outside the workspace, while ordinary work runs.
func TestClineContain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if !strings.Contains(w.installOut, "ok   containment: allowed run_commands calls run under joule exec (landlock ABI") {
		t.Fatalf("install:\n%s", w.installOut)
	}
	if r := w.run(w.joule, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash", "--budget", "50J", "--workspace", w.ws, "--use"); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	hookFile := filepath.Join(w.ws, ".cline", "hooks", "PreToolUse")
	script, _ := os.ReadFile(hookFile)
	key, _ := os.ReadFile(filepath.Join(w.home, "steward.key"))
	makefile := "leak:\n\t-@cat $$JOULE_HOME/steward.key\n\t-@cp /dev/null .cline/hooks/PreToolUse\n" +
		"\t-@rm -f .cline/hooks/PreToolUse\n\t-@touch $$HOME/outside.txt\n\t@echo done\n"
	os.WriteFile(filepath.Join(w.ws, "Makefile"), []byte(makefile), 0o644)
	w.api.Script(
		runCommands("mkdir -p src/sub && echo ran > src/sub/allowed.txt; cat src/sub/allowed.txt"),
		runCommands("make -s leak"),
		hosttest.Turn{Text: "all done"},
	)
	r := w.task()
	rs := w.run(w.joule, "receipts", "ls", taskID(t, r.stdout)).stdout
	t.Logf("receipts:\n%s", rs)
	t.Run("ordinary work runs contained", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(w.ws, "src", "sub", "allowed.txt")); err != nil || string(b) != "ran\n" {
			t.Fatalf("the contained command did not run (%v, %q): %q", err, b, w.toolResult(0))
		}
		if !strings.Contains(w.toolResult(0), "ran") {
			t.Fatalf("tool result %q", w.toolResult(0))
		}
		if strings.Count(rs, " rewrite ") != 2 {
			t.Fatalf("the receipts do not record both rewrites:\n%s", rs)
		}
	})
	t.Run("the kernel refuses what analysis let through", func(t *testing.T) {
		got := w.toolResult(1)
		t.Logf("tool result: %q", got)
		// A protected file is a read-only mount in the namespace construction
		// ("Read-only file system") and a refused path under Landlock alone
		// ("Permission denied"): either is the kernel's refusal.
		for _, want := range []string{"steward.key: Permission denied", "cannot create regular file '.cline/hooks/PreToolUse': ",
			"cannot remove '.cline/hooks/PreToolUse': ", "outside.txt': ", "done"} {
			if !strings.Contains(got, want) {
				t.Errorf("tool result lacks %q", want)
			}
		}
		if len(key) > 0 && strings.Contains(w.api.AllText(), strings.TrimSpace(string(key))) {
			t.Fatal("the steward key reached the model")
		}
		if b, _ := os.ReadFile(hookFile); string(b) != string(script) {
			t.Fatal("the hook script was changed by the contained command")
		}
		if _, err := os.Stat(filepath.Join(w.user, "outside.txt")); err == nil {
			t.Fatal("a file was written outside the workspace")
		}
	})
	// Cline's own approval still applies to the rewritten input: with
	// --auto-approve false a headless task asks for it (and, with no TTY,
	// refuses), the request naming the joule exec line.
	w.api.Script(runCommands("echo hi > approval.txt"), hosttest.Turn{Text: "all done"})
	r = w.task("--auto-approve", "false")
	t.Run("Cline's approval applies to the rewritten line", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(w.ws, "approval.txt")); err == nil {
			t.Fatal("approval.txt exists: the rewrite skipped Cline's approval")
		}
		if got := w.toolResult(0); !strings.Contains(got, `requires approval`) {
			t.Fatalf("tool result %q", got)
		}
		asked := false
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Contains(line, `"content_start"`) && strings.Contains(line, `"run_commands"`) &&
				strings.Contains(line, "joule-exec' --policy ") && strings.Contains(line, "-- /bin/bash -c 'echo hi > approval.txt'") {
				asked = true
			}
		}
		if !asked {
			t.Fatalf("Cline did not show the joule exec line as the call's input:\n%s", tail(r.stdout, 3000))
		}
		if rs := w.run(w.joule, "receipts", "ls", taskID(t, r.stdout)).stdout; !strings.Contains(rs, " rewrite ") {
			t.Fatalf("the rewrite is not sealed:\n%s", rs)
		}
	})
}
