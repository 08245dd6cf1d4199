package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeContainE2E runs the real Claude Code CLI with joule
// installed by `joule install claude-code` (contained, the default), under
// a grant whose bare Bash rule lets analysis allow anything: what is then
// stopped is stopped by the kernel, under joule exec, through the command
// hook and through joule serve's http hook alike.
func TestClaudeCodeContainE2E(t *testing.T) {
	claude := claudeBin(t)
	env, ws := initHome(t)
	var jouleHome, userHome string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "JOULE_HOME="); ok {
			jouleHome = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	os.MkdirAll(userHome, 0o755)
	r := joule(t, nil, env, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash", "--budget", "50J", "--workspace", ws, "--use")
	if r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	r = joule(t, nil, env, "install", "claude-code", "--project", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "ok   containment: allowed Bash commands run under joule exec (landlock ABI") {
		t.Fatalf("install: %+v", r)
	}
	settings, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json"))
	if !strings.Contains(string(settings), ` claude-code --contain"`) {
		t.Fatalf("settings.json has no contained hook:\n%s", settings)
	}

	api := &fakeAnthropic{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api}
	go srv.Serve(ln)
	defer srv.Close()
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, append([]string{"-p", "--output-format", "json", "do it"}, args...)...)
		cmd.Dir = ws
		cmd.Env = []string{"HOME=" + userHome, "PATH=" + filepath.Dir(jouleBin) + ":/usr/local/bin:/usr/bin:/bin",
			"JOULE_HOME=" + jouleHome,
			"ANTHROPIC_BASE_URL=http://" + ln.Addr().String(), "ANTHROPIC_API_KEY=sk-ant-test-dummy-key-0000000000",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "IS_SANDBOX=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude: %v\n%s", err, out)
		}
		return string(out)
	}
	receipts := func(t *testing.T, out string) string {
		t.Helper()
		var res struct {
			SessionID string `json:"session_id"`
		}
		if i := strings.LastIndex(out, "\n{"); i >= 0 {
			out = out[i+1:]
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil || res.SessionID == "" {
			t.Fatalf("no session id in claude's output: %v\n%s", err, out)
		}
		return joule(t, nil, env, "receipts", "ls", res.SessionID).stdout
	}

	t.Run("ordinary work runs contained", func(t *testing.T) {
		// At the workspace root too (below /tmp, the temp dir, with TMPDIR
		// unset), where the other hosts' configuration is absent: each
		// protected name is a stand-in for the run.
		api.script("mkdir -p src/sub && echo ran > src/sub/allowed.txt && echo more >> main.txt && echo top > top.txt; cat src/sub/allowed.txt")
		os.WriteFile(filepath.Join(ws, "main.txt"), nil, 0o644)
		var before []string // what the install wrote: .claude/, .mcp.json
		for _, n := range rootProtected(ws) {
			if _, err := os.Lstat(filepath.Join(ws, strings.TrimSuffix(n, "/"))); err == nil {
				before = append(before, n)
			}
		}
		out := run(t, "--allowedTools", "Bash")
		if b, err := os.ReadFile(filepath.Join(ws, "src", "sub", "allowed.txt")); err != nil || string(b) != "ran\n" {
			t.Fatalf("the contained command did not run (%v, %q)\n%s\n%+v", err, b, out, api.results())
		}
		if b, err := os.ReadFile(filepath.Join(ws, "top.txt")); err != nil || string(b) != "top\n" {
			t.Fatalf("no entry was created at the workspace root (%v, %q)\n%s\n%+v", err, b, out, api.results())
		}
		for _, n := range rootProtected(ws) {
			if _, err := os.Lstat(filepath.Join(ws, strings.TrimSuffix(n, "/"))); err == nil && !slices.Contains(before, n) {
				t.Errorf("%s is left in the workspace", n)
			}
		}
		if res := api.results(); len(res) != 1 || res[0].IsError || !strings.Contains(res[0].Content, "ran") {
			t.Fatalf("tool result %+v", res)
		}
		if rs := receipts(t, out); !strings.Contains(rs, " rewrite ") {
			t.Fatalf("the receipt does not record the rewrite:\n%s", rs)
		}
	})
	leak := func(t *testing.T) {
		t.Helper()
		key, _ := os.ReadFile(filepath.Join(jouleHome, "steward.key"))
		// make is granted, and what a Makefile runs is the workspace's,
		// which the analysis cannot see: only the kernel stands between
		// its recipe and the gate's files.
		makefile := "leak:\n\t-@cat $$JOULE_HOME/steward.key\n\t-@cp /dev/null .claude/settings.json\n" +
			"\t-@rm -f .claude/settings.json\n\t-@touch $$HOME/outside.txt\n\t@echo done\n"
		if err := os.WriteFile(filepath.Join(ws, "Makefile"), []byte(makefile), 0o644); err != nil {
			t.Fatal(err)
		}
		api.script(`make -s leak`)
		out := run(t, "--allowedTools", "Bash")
		res := api.results()
		if len(res) != 1 {
			t.Fatalf("tool results %+v\n%s", res, out)
		}
		// The settings are a read-only mount in the namespace construction
		// (EROFS), refused by Landlock alone (EACCES): either error is the
		// kernel's, and the file is checked unchanged below.
		for _, want := range []string{"steward.key: Permission denied", "cannot create regular file '.claude/settings.json': ", "cannot remove '.claude/settings.json': ", "outside.txt': ", "done"} {
			if !strings.Contains(res[0].Content, want) {
				t.Errorf("tool result lacks %q: %q", want, res[0].Content)
			}
		}
		if strings.Contains(res[0].Content, strings.TrimSpace(string(key))) {
			t.Fatal("the steward key reached the model")
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json")); string(b) != string(settings) {
			t.Fatalf("settings.json changed:\n%s", b)
		}
		if _, err := os.Stat(filepath.Join(userHome, "outside.txt")); err == nil {
			t.Fatal("a file was written outside the workspace")
		}
	}
	t.Run("the kernel refuses what analysis let through", leak)
	t.Run("the host still asks", func(t *testing.T) {
		// Without --allowedTools a -p run cannot show Claude Code's prompt:
		// the rewrite must not have approved the command in its place.
		api.script("echo ran > asked.txt")
		out := run(t)
		if _, err := os.Stat(filepath.Join(ws, "asked.txt")); err == nil {
			t.Fatalf("the command ran without Claude Code's approval\n%s", out)
		}
		if res := api.results(); len(res) != 1 || !res[0].IsError {
			t.Fatalf("tool results %+v", res)
		}
	})
	t.Run("resident", func(t *testing.T) {
		// joule serve's http hook carries the same updatedInput: the
		// resident install contains too.
		r := joule(t, nil, env, "install", "claude-code", "--project", ws, "--resident", "--addr", freeAddr(t))
		if r.code != 0 || !strings.Contains(r.stdout, "ok   containment: ") {
			t.Fatalf("install --resident: %+v", r)
		}
		local, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.local.json"))
		if !strings.Contains(string(local), "/hooks/claude-code/contain") {
			t.Fatalf("the http hook is not the contained one:\n%s", local)
		}
		startServe(t, env)
		os.Remove(filepath.Join(ws, "src", "sub", "allowed.txt"))
		api.script("mkdir -p src/sub && echo resident > src/sub/allowed.txt; cat src/sub/allowed.txt")
		out := run(t, "--allowedTools", "Bash")
		if b, err := os.ReadFile(filepath.Join(ws, "src", "sub", "allowed.txt")); err != nil || string(b) != "resident\n" {
			t.Fatalf("the contained command did not run (%v, %q)\n%s\n%+v", err, b, out, api.results())
		}
		if rs := receipts(t, out); !strings.Contains(rs, " rewrite ") {
			t.Fatalf("the receipt does not record the rewrite:\n%s", rs)
		}
		settings, _ = os.ReadFile(filepath.Join(ws, ".claude", "settings.json"))
		leak(t)
	})
}
