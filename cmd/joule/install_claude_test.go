package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulehook/joule/mcpserver"
)

// claudeBin finds the pinned Claude Code CLI that .ci/setup.d/10-hosts.sh
// installs with npm ci into plugins/claudecode/e2e.
func claudeBin(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is missing: .ci/setup.d/10-hosts.sh installs it and the pinned Claude Code CLI")
		}
		t.Skip("node is missing: install Node.js and run .ci/setup.d/10-hosts.sh to run the real Claude Code test")
	}
	root, _ := filepath.Abs("../../plugins/claudecode/e2e/node_modules")
	candidates := []string{filepath.Join(root, ".bin", "claude")}
	if m, _ := filepath.Glob(filepath.Join(root, "@anthropic-ai", "claude-code-"+runtime.GOOS+"-*", "claude")); m != nil {
		candidates = append(m, candidates...)
	}
	for _, c := range candidates {
		if out, err := exec.Command(c, "--version").Output(); err == nil && strings.Contains(string(out), "Claude Code") {
			return c
		}
	}
	t.Fatalf("the pinned Claude Code CLI is not installed under %s: run .ci/setup.d/10-hosts.sh (npm ci --prefix plugins/claudecode/e2e)", root)
	return ""
}

// fakeAnthropic is an offline Anthropic Messages endpoint on 127.0.0.1 that
// scripts the model: the first turn of a run calls Bash with command, the
// turn after a tool result ends the conversation. It records every tool
// result the CLI sends back.
type fakeAnthropic struct {
	mu          sync.Mutex
	command     string
	toolResults []toolResult
	requests    int
	turns       int // model turns in the current run
	lastBodies  []string
	// What the fake reported over the Messages API: calls and tokens.
	calls, inTokens, outTokens int
}

type toolResult struct {
	ID      string
	IsError bool
	Content string
}

func (f *fakeAnthropic) script(command string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.command, f.toolResults, f.turns, f.lastBodies = command, nil, 0, nil
}

func (f *fakeAnthropic) results() []toolResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolResult(nil), f.toolResults...)
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") || strings.Contains(r.URL.Path, "count_tokens") {
		if strings.Contains(r.URL.Path, "count_tokens") {
			io.WriteString(w, `{"input_tokens":10}`)
		}
		return
	}
	var req struct {
		Stream   bool `json:"stream"`
		Tools    []json.RawMessage
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	f.mu.Lock()
	f.requests++
	// Tool results are read from every user message, not only the last:
	// a slow hook makes the CLI add a message of its own after the result.
	sawResult := false
	for _, m := range req.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
		}
		json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type != "tool_result" {
				continue
			}
			sawResult = true
			if !slices.ContainsFunc(f.toolResults, func(r toolResult) bool { return r.ID == b.ToolUseID }) {
				f.toolResults = append(f.toolResults, toolResult{b.ToolUseID, b.IsError, contentText(b.Content)})
			}
		}
	}
	command := f.command
	if len(req.Tools) > 0 {
		f.turns++
		f.lastBodies = append(f.lastBodies, string(body))
	}
	// A run is one tool call and its answer; a CLI that keeps asking is
	// told to stop rather than looping on a script that does not fit.
	useTool := len(req.Tools) > 0 && !sawResult && command != "" && f.turns == 1
	f.mu.Unlock()

	f.mu.Lock()
	f.calls++
	if req.Stream {
		f.inTokens, f.outTokens = f.inTokens+100, f.outTokens+20
	} else {
		f.inTokens, f.outTokens = f.inTokens+10, f.outTokens+1
	}
	f.mu.Unlock()
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_fake","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	stop := "end_turn"
	if useTool {
		input, _ := json.Marshal(map[string]string{"command": command, "description": "scripted by the test"})
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_fake%d", f.requests), "name": "Bash", "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		stop = "tool_use"
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 20}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// TestClaudeCodeE2E runs the real Claude Code CLI offline against a fake
// Messages endpoint, with joule installed by joule install.
func TestClaudeCodeE2E(t *testing.T) {
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

	api := &fakeAnthropic{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api}
	go srv.Serve(ln)
	defer srv.Close()

	r := joule(t, nil, env, "install", "claude-code", "--project", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "ok   PreToolUse hook") {
		t.Fatalf("install: %+v", r)
	}
	t.Logf("install:\n%s", r.stdout)
	// A project's .mcp.json servers start only in a trusted project once
	// the user approves them: what the CLI's two dialogs write.
	approval, _ := json.Marshal(map[string]any{"projects": map[string]any{ws: map[string]any{"hasTrustDialogAccepted": true, "enabledMcpjsonServers": []string{"joule"}}}})
	if err := os.WriteFile(filepath.Join(userHome, ".claude.json"), approval, 0o600); err != nil {
		t.Fatal(err)
	}

	claudeEnv := []string{
		"HOME=" + userHome, "PATH=" + filepath.Dir(jouleBin) + ":/usr/local/bin:/usr/bin:/bin",
		"JOULE_HOME=" + jouleHome,
		"ANTHROPIC_BASE_URL=http://" + ln.Addr().String(), "ANTHROPIC_API_KEY=sk-ant-test-dummy-key-0000000000",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
	}
	runClaude := func(t *testing.T, extraEnv []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, append([]string{"-p", "--output-format", "json"}, args...)...)
		cmd.Dir = ws
		cmd.Env = append(append([]string{}, claudeEnv...), extraEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// sealed checks the session's receipts name the decision and command.
	sealed := func(t *testing.T, out, decision, summary string) {
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
		r := joule(t, nil, env, "receipts", "ls", res.SessionID)
		if !strings.Contains(r.stdout, " "+decision+" ") || !strings.Contains(r.stdout, summary) {
			t.Fatalf("session %s receipts do not show %s of %q:\n%s", res.SessionID, decision, summary, r.stdout)
		}
	}
	deniedReason := func(t *testing.T, want string) {
		t.Helper()
		res := api.results()
		if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, want) {
			api.mu.Lock()
			for _, b := range api.lastBodies {
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("request tail: %s", b)
			}
			api.mu.Unlock()
			t.Fatalf("the model's next request should carry the deny as an error tool result containing %q; got %+v", want, res)
		}
	}

	t.Run("denied", func(t *testing.T) {
		api.script("dd if=/dev/null of=denied.txt")
		out := runClaude(t, nil, "make the file", "--allowedTools", "Bash")
		if _, err := os.Stat(filepath.Join(ws, "denied.txt")); err == nil {
			t.Fatalf("denied.txt exists: the deny did not bind\n%s", out)
		}
		deniedReason(t, "joule deny (action-not-granted)")
		sealed(t, out, "deny", "Bash: dd if=/dev/null of=denied.txt")
	})
	t.Run("allowed", func(t *testing.T) {
		// Contained (the default), at the workspace root, which lies in
		// the temp dir (TMPDIR unset: /tmp) and holds none of the other
		// hosts' configuration: each absent protected name is a stand-in
		// for the run (docs/gate.md, "Containment").
		api.script("touch allowed.txt && echo ran > allowed.txt")
		out := runClaude(t, nil, "write the file", "--allowedTools", "Bash")
		b, err := os.ReadFile(filepath.Join(ws, "allowed.txt"))
		if err != nil || strings.TrimSpace(string(b)) != "ran" {
			t.Fatalf("the allowed command did not run (%v, %q)\n%s\n%+v", err, b, out, api.results())
		}
		if res := api.results(); len(res) != 1 || res[0].IsError {
			t.Fatalf("tool result %+v", res)
		}
		sealed(t, out, "rewrite", "Bash: touch allowed.txt")
	})
	// The committed settings.json names joule by a variable and PATH; the
	// uncommitted settings.local.json's env carries this user's binary
	// and JOULE_HOME. Claude Code must hand that env to its hook.
	t.Run("committed settings", func(t *testing.T) {
		bare := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "JOULE_HOME="}
		if b, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json")); strings.Contains(string(b), jouleBin) || strings.Contains(string(b), jouleHome) {
			t.Fatalf("the committed settings.json names this user's paths:\n%s", b)
		}
		api.script("dd if=/dev/null of=committed.txt")
		out := runClaude(t, bare, "make the file", "--allowedTools", "Bash")
		if _, err := os.Stat(filepath.Join(ws, "committed.txt")); err == nil {
			t.Fatalf("committed.txt exists\n%s", out)
		}
		deniedReason(t, "joule deny (action-not-granted)")
		sealed(t, out, "deny", "Bash: dd if=/dev/null of=committed.txt")
		// The committed .mcp.json names no path of this user's either, and
		// its server still starts with no joule on PATH: its tools are
		// in the model's request (in the deferred tools' list).
		if b, _ := os.ReadFile(filepath.Join(ws, ".mcp.json")); strings.Contains(string(b), jouleBin) || strings.Contains(string(b), jouleHome) {
			t.Errorf("the committed .mcp.json names this user's paths:\n%s", b)
		}
		api.mu.Lock()
		mcpTools := len(api.lastBodies) > 0 && strings.Contains(api.lastBodies[0], "mcp__joule__"+mcpserver.ToolRead)
		api.mu.Unlock()
		if !mcpTools {
			t.Errorf("joule's MCP tools are not in the model's request: the committed .mcp.json did not start joule mcp from settings.local.json's JOULE_BIN")
		}

		// Both files' hooks: does Claude Code run a handler twice when
		// settings.json and settings.local.json hold the same command?
		local := filepath.Join(ws, ".claude", "settings.local.json")
		saved, _ := os.ReadFile(local)
		shared, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json"))
		var sh, lo map[string]any
		json.Unmarshal(shared, &sh)
		json.Unmarshal(saved, &lo)
		lo["hooks"] = sh["hooks"]
		both, _ := json.Marshal(lo)
		os.WriteFile(local, both, 0o644)
		api.script("touch twice.txt")
		out = runClaude(t, bare, "make the file", "--allowedTools", "Bash")
		var res struct {
			SessionID string `json:"session_id"`
		}
		if i := strings.LastIndex(out, "\n{"); i >= 0 {
			out = out[i+1:]
		}
		json.Unmarshal([]byte(strings.TrimSpace(out)), &res)
		r := joule(t, nil, env, "receipts", "ls", res.SessionID)
		if n := strings.Count(r.stdout, "Bash: touch twice.txt"); n != 1 {
			t.Errorf("the same command in settings.json and settings.local.json was decided %d times, want 1 (Claude Code dedupes by command):\n%s", n, r.stdout)
		}

		// A teammate without settings.local.json and no joule on PATH:
		// the hook fails (sh: not found) and onFailure: block blocks.
		os.Remove(local)
		defer os.WriteFile(local, saved, 0o644)
		api.script("touch teammate.txt")
		out = runClaude(t, bare, "make the file", "--allowedTools", "Bash")
		if _, err := os.Stat(filepath.Join(ws, "teammate.txt")); err == nil {
			t.Fatalf("teammate.txt exists: a committed hook that finds no joule let the call run\n%s", out)
		}
		if res := api.results(); len(res) != 1 || !res[0].IsError {
			t.Fatalf("tool results %+v", res)
		} else {
			t.Logf("without joule the model got: %.300s", res[0].Content)
		}
	})
	t.Run("bypass", func(t *testing.T) {
		api.script("dd if=/dev/null of=bypass.txt")
		out := runClaude(t, []string{"IS_SANDBOX=1"}, "--dangerously-skip-permissions", "make the file")
		if _, err := os.Stat(filepath.Join(ws, "bypass.txt")); err == nil {
			t.Fatalf("bypass.txt exists: the deny did not bind under --dangerously-skip-permissions\n%s", out)
		}
		deniedReason(t, "joule deny (action-not-granted)")
		sealed(t, out, "deny", "Bash: dd if=/dev/null of=bypass.txt")
	})
	t.Run("resident", func(t *testing.T) {
		// The same deny through the http hook and joule serve.
		r := joule(t, nil, env, "install", "claude-code", "--project", ws, "--resident", "--addr", freeAddr(t))
		if r.code != 0 {
			t.Fatalf("install --resident: %+v", r)
		}
		startServe(t, env)
		api.script("dd if=/dev/null of=resident.txt")
		out := runClaude(t, nil, "make the file", "--allowedTools", "Bash")
		if _, err := os.Stat(filepath.Join(ws, "resident.txt")); err == nil {
			t.Fatalf("resident.txt exists: the resident deny did not bind\n%s", out)
		}
		deniedReason(t, "joule deny (action-not-granted)")
		sealed(t, out, "deny", "Bash: dd if=/dev/null of=resident.txt")
		if b, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json")); strings.Contains(string(b), " hook claude-code") {
			t.Fatalf("the command hook is still installed next to the resident one:\n%s", b)
		}
	})
	// The whole session through joule proxy, on a grant the size of the
	// README's metered example, and on the 200 kJ the README used to give,
	// on which every call (Opus, ~22,000 input tokens, max_tokens 32,000:
	// about 320 kJ) must be fitted: issue 16's failing session.
	for _, budget := range []string{"30MJ", "200kJ"} {
		t.Run("metered "+budget, func(t *testing.T) {
			// The command hook again: the resident one's server is gone.
			if r := joule(t, nil, env, "install", "claude-code", "--project", ws); r.code != 0 {
				t.Fatalf("install: %+v", r)
			}
			if r := joule(t, nil, env, "grant", "issue", "--template", "dev", "--budget", budget, "--use", "--workspace", ws); r.code != 0 {
				t.Fatalf("grant issue: %+v", r)
			}
			proxyURL, stop := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", "http://"+ln.Addr().String())
			os.Remove(filepath.Join(ws, "src", "metered.txt"))
			api.script("touch src/metered.txt") // in src, as "allowed" above
			api.mu.Lock()
			api.calls, api.inTokens, api.outTokens = 0, 0, 0
			api.mu.Unlock()
			started := time.Now()
			out := runClaude(t, []string{"ANTHROPIC_BASE_URL=" + proxyURL}, "--model", "claude-opus-4-5", "make the file", "--allowedTools", "Bash")
			if _, err := os.Stat(filepath.Join(ws, "src", "metered.txt")); err != nil {
				t.Fatalf("the session through the proxy did not run its command: %v\n%s", err, out)
			}
			logs := stop()
			api.mu.Lock()
			calls, in, outTok := api.calls, api.inTokens, api.outTokens
			api.mu.Unlock()
			if calls == 0 || strings.Contains(logs, "refused") {
				t.Fatalf("%d calls reached the upstream; proxy log:\n%s", calls, logs)
			}
			// Every call the upstream answered has its receipt, with the
			// upstream's own token counts.
			t.Setenv("JOULE_HOME", jouleHome)
			ep, err := openEndpoint()
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			keys, err := ep.keys()
			if err != nil {
				t.Fatal(err)
			}
			sessions, err := ep.store.Sessions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var n, gotIn, gotOut, fitted int
			for _, si := range sessions {
				sid := si.ID
				entries, err := ep.store.Session(context.Background(), sid)
				if err != nil {
					t.Fatal(err)
				}
				for _, en := range entries {
					a, err := keys.Open(en.Envelope)
					if err != nil {
						t.Fatal(err)
					}
					if e := a.Efficiency; e != nil && e.Coverage == "enforced" && en.Time.After(started) {
						// A receipt may cover calls that ended together.
						n, gotIn, gotOut = n+e.CallCount(), gotIn+int(e.InputTokens+e.CachedInputTokens+e.CacheWriteTokens), gotOut+int(e.OutputTokens)
						if e.Status != "complete" {
							t.Errorf("receipt %s #%d: %+v", sid, e.Sequence, e)
						}
						fitted += e.FittedCount()
					}
				}
			}
			if n != calls || gotIn != in || gotOut != outTok {
				t.Errorf("%d receipts with %d in / %d out tokens; the upstream answered %d calls with %d / %d", n, gotIn, gotOut, calls, in, outTok)
			}
			api.mu.Lock()
			for _, b := range api.lastBodies {
				var req struct {
					Model     string `json:"model"`
					MaxTokens int    `json:"max_tokens"`
				}
				json.Unmarshal([]byte(b), &req)
				t.Logf("request model %s max_tokens %d (%d bytes)", req.Model, req.MaxTokens, len(b))
			}
			api.mu.Unlock()
			if budget == "200kJ" && fitted != n {
				t.Errorf("%d of %d calls fitted on a %s grant", fitted, n, budget)
			}
			t.Logf("%s: %d calls through joule proxy, %d fitted, %d in / %d out tokens", budget, calls, fitted, in, outTok)
		})
	}
	// joule otel prints the variables that turn Claude Code's telemetry on;
	// a shell that runs them as printed starts a claude whose token usage
	// reaches joule as observed receipts.
	t.Run("telemetry as joule otel prints it", func(t *testing.T) {
		tokenFile := filepath.Join(t.TempDir(), "otlp.token")
		os.WriteFile(tokenFile, []byte("otlp-test-token-0123456789\n"), 0o600)
		cmd := exec.Command(jouleBin, "otel", "--listen", "127.0.0.1:0", "--token-file", tokenFile)
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				cmd.Process.Signal(os.Interrupt)
				cmd.Wait()
			}
		}
		defer stop()
		br := bufio.NewReader(stdout)
		var printed []string
		for !strings.Contains(strings.Join(printed, "\n"), "OTEL_EXPORTER_OTLP_HEADERS") {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("joule otel printed %q: %v\n%s", printed, err, stderr.String())
			}
			printed = append(printed, strings.TrimSpace(l))
		}
		if strings.Contains(strings.Join(printed, "\n"), "otlp-test-token") {
			t.Fatalf("joule otel printed its token: %q", printed)
		}
		sh := exec.Command("sh", "-c", strings.Join(printed[1:], "\n")+"\nenv")
		sh.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("the printed lines in sh: %v", err)
		}
		var telemetry []string
		for _, kv := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "CLAUDE_CODE_") {
				telemetry = append(telemetry, kv)
			}
		}
		api.script("go version")
		res := runClaude(t, append(telemetry, "OTEL_METRIC_EXPORT_INTERVAL=1000", "OTEL_LOGS_EXPORT_INTERVAL=500"), "what go is this", "--allowedTools", "Bash")
		var session struct {
			SessionID string `json:"session_id"`
		}
		if i := strings.LastIndex(res, "\n{"); i >= 0 {
			res = res[i+1:]
		}
		json.Unmarshal([]byte(strings.TrimSpace(res)), &session)
		stop()
		r := joule(t, nil, env, "receipts", "ls", session.SessionID)
		if session.SessionID == "" || !strings.Contains(r.stdout, "observed") {
			t.Fatalf("no observed receipt in session %q with %q:\n%s%s\njoule otel: %s", session.SessionID, telemetry, r.stdout, r.stderr, stderr.String())
		}
	})
	t.Run("mcp listed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, "mcp", "list")
		cmd.Dir, cmd.Env = ws, claudeEnv
		out, _ := cmd.CombinedOutput()
		found := false
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			// claude mcp list shows the committed command (sh -c …) and
			// runs it with claudeEnv's PATH, which has this joule.
			if strings.HasPrefix(sc.Text(), "joule:") && strings.Contains(sc.Text(), "Connected") {
				found = true
			}
		}
		if !found {
			t.Fatalf("claude mcp list does not list joule's server:\n%s", out)
		}
	})
	// Every decision the CLI caused is sealed, and every receipt verifies.
	r = joule(t, nil, env, "receipts", "verify")
	if r.code != 0 || !strings.Contains(r.stdout, "receipts verified") {
		t.Fatalf("receipts verify: %+v", r)
	}
	r = joule(t, nil, env, "receipts", "ls")
	if strings.Count(r.stdout, "\n") < 2 {
		t.Fatalf("receipts ls: %+v", r)
	}
	t.Logf("receipts:\n%s", r.stdout)
}

// TestClaudePluginValidates runs the real CLI's own validator over the
// marketplace at the repository root and the plugin in plugins/claudecode.
func TestClaudePluginValidates(t *testing.T) {
	claude := claudeBin(t)
	for _, dir := range []string{"../..", "../../plugins/claudecode"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, claude, "plugin", "validate", dir)
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "Validation passed") {
			t.Errorf("claude plugin validate %s: %v\n%s", dir, err, out)
		}
	}
}
