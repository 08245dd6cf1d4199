package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// fakeAnthropic is the Messages API as Claude Code uses it, streamed (SSE).
// A request with tools plays the script its first user message names: the
// tool uses in order, one per answer, each after the previous one's result,
// then a closing text. Every other request gets a short text.
type fakeAnthropic struct {
	ws string

	mu       sync.Mutex
	calls    int
	in, out  uint64 // the tokens it reported
	results  []string
	tools    [][]string
	requests []string
}

// configProbe is the project configuration the CONFIGURE script tries to
// leave: a setting that OpenCode's resolved configuration would show.
const configProbe = `{"username": "joule-config-probe"}`

type toolUse struct {
	name  string
	input map[string]any
}

func (f *fakeAnthropic) script(prompt string) []toolUse {
	write := toolUse{"mcp__acp__Write", map[string]any{"file_path": filepath.Join(f.ws, "out.txt"), "content": "hello from claude\n"}}
	run := toolUse{"mcp__acp__Bash", map[string]any{"command": "echo ran > ran.txt", "description": "record the run", "timeout": 60000}}
	switch {
	case strings.Contains(prompt, "OUTSIDE"):
		return []toolUse{{"mcp__acp__Write", map[string]any{"file_path": filepath.Join(filepath.Dir(f.ws), "outside.txt"), "content": "escaped\n"}}}
	case strings.Contains(prompt, "CONFIGURE"):
		// A project configuration for the host, in each of OpenCode's
		// protected names: by the write tool and by a command.
		return []toolUse{
			{"mcp__acp__Write", map[string]any{"file_path": filepath.Join(f.ws, "opencode.json"), "content": configProbe}},
			{"mcp__acp__Write", map[string]any{"file_path": filepath.Join(f.ws, ".opencode", "opencode.json"), "content": configProbe}},
			{"mcp__acp__Bash", map[string]any{"command": "echo '" + configProbe + "' > opencode.jsonc", "description": "configure", "timeout": 60000}},
		}
	case strings.Contains(prompt, "WRITE AND RUN"):
		return []toolUse{write, run}
	case strings.Contains(prompt, "RUN ONLY"):
		return []toolUse{run}
	}
	return nil
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	if strings.Contains(r.URL.Path, "count_tokens") {
		io.WriteString(w, `{"input_tokens":10}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream bool `json:"stream"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	first, results := "", 0
	for i, m := range req.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
			ToolUseID string          `json:"tool_use_id"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			var s string
			json.Unmarshal(m.Content, &s)
			blocks = append(blocks, struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				IsError   bool            `json:"is_error"`
				Content   json.RawMessage `json:"content"`
				ToolUseID string          `json:"tool_use_id"`
			}{Type: "text", Text: s})
		}
		for _, b := range blocks {
			if m.Role == "user" && b.Type == "text" && i == 0 {
				first += b.Text
			}
			if b.Type == "tool_result" {
				results++
				if len(req.Tools) > 0 && i == len(req.Messages)-1 {
					f.mu.Lock()
					f.results = append(f.results, fmt.Sprintf("%s error=%v %s", b.ToolUseID, b.IsError, b.Content))
					f.mu.Unlock()
				}
			}
		}
	}
	var use *toolUse
	if len(req.Tools) > 0 {
		names := []string{}
		for _, t := range req.Tools {
			names = append(names, t.Name)
		}
		if s := f.script(first); results < len(s) {
			use = &s[results]
			// claude-agent-acp offers Claude Code's own tools, not the ACP
			// adapter's mcp__acp__ ones.
			if bare := strings.TrimPrefix(use.name, "mcp__acp__"); !slices.Contains(names, use.name) && slices.Contains(names, bare) {
				use = &toolUse{bare, use.input}
			} else if low := strings.ToLower(bare); !slices.Contains(names, use.name) && slices.Contains(names, low) {
				// OpenCode's own tools: write {filePath, content}, bash
				// {command, description}.
				in := map[string]any{}
				for k, v := range use.input {
					switch k {
					case "file_path":
						in["filePath"] = v
					case "timeout":
					default:
						in[k] = v
					}
				}
				use = &toolUse{low, in}
			}
		}
		f.mu.Lock()
		f.tools = append(f.tools, names)
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.calls++
	f.requests = append(f.requests, fmt.Sprintf("tools=%d results=%d stream=%v", len(req.Tools), results, req.Stream))
	n := f.calls
	f.mu.Unlock()
	in, out := uint64(100+n), uint64(20+n)
	f.mu.Lock()
	f.in, f.out = f.in+in, f.out+out
	f.mu.Unlock()
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_fake%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d}}`, n, in, out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake%d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
	stop := "end_turn"
	if use != nil {
		input, _ := json.Marshal(use.input)
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_fake%d", n), "name": use.name, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		stop = "tool_use"
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

func (f *fakeAnthropic) tokens() (calls int, in, out uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.in, f.out
}

func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// claudeRemote is the remote command line and environment for the real
// Claude Code through claude-code-acp, offline.
func claudeRemote(t testing.TB, h *home) ([]string, []string) {
	adapter := need(t, "@zed-industries/claude-code-acp/dist/index.js", "@zed-industries/claude-code-acp")
	node, err := lookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	env := []string{"ANTHROPIC_API_KEY=sk-ant-test-dummy-key-0000000000", "CLAUDE_CONFIG_DIR=" + filepath.Join(h.user, ".claude"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_TELEMETRY=1",
		"ANTHROPIC_MODEL=claude-sonnet-4-5"}
	if os.Geteuid() == 0 {
		// CI runs as root, where Claude Code refuses to start unless told it
		// is sandboxed; the session's permission mode stays "default".
		env = append(env, "IS_SANDBOX=1")
	}
	return []string{node, adapter}, env
}

// TestClaudeCodeACP: the real Claude Code, through claude-code-acp in its
// default permission mode, as joule acp's L4. Allowed by the grant, its
// write (fs/write_text_file) and its command (terminal/create, run by joule)
// become one signed op; denied, neither happens. Its model calls are
// metered by joule proxy into the L4 session, and nothing it started is
// left running.
func TestClaudeCodeACP(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	remote, env := claudeRemote(t, h)
	api := &fakeAnthropic{ws: h.ws}
	proxyURL := h.proxy(t, "--anthropic", serve(t, api))

	t.Run("allowed", func(t *testing.T) {
		h.run(t, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
		s := h.acp(t, remote, proxyURL, env...)
		stop, said := s.prompt(t, "WRITE AND RUN: make out.txt and record the run")
		t.Logf("the editor saw:\n%s", said)
		if stop != acp.StopReasonEndTurn {
			t.Fatalf("stop %s", stop)
		}
		if b, err := os.ReadFile(filepath.Join(h.ws, "out.txt")); err != nil || string(b) != "hello from claude\n" {
			t.Errorf("out.txt: %q %v; tool results %v", b, err, api.results)
		}
		if b, err := os.ReadFile(filepath.Join(h.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
			t.Errorf("ran.txt: %q %v; tool results %v", b, err, api.results)
		}
		if len(s.ed.asked) != 0 {
			t.Errorf("the editor was asked %v: the grant decides", s.ed.asked)
		}
		checkSealed(t, h, s, api, []string{"out.txt", "ran.txt"})
		h.noneLeft(t, "after the turn", s.cmd.Process.Pid)
		s.close(t)
		h.noneLeft(t, "after the session")
	})

	t.Run("denied", func(t *testing.T) {
		os.Remove(filepath.Join(h.ws, "out.txt"))
		os.Remove(filepath.Join(h.ws, "ran.txt"))
		h.run(t, "grant", "issue", "--allow", "Read", "--deny", "Write", "--deny", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
		s := h.acp(t, remote, proxyURL, env...)
		for _, p := range []struct{ prompt, thought string }{
			{"WRITE AND RUN: make out.txt", "joule denied the remote agent's Write"},
			{"RUN ONLY: record the run", "joule denied the remote agent's Bash \"echo ran > ran.txt\""},
		} {
			stop, said := s.prompt(t, p.prompt)
			t.Logf("the editor saw:\n%s", said)
			if stop != acp.StopReasonEndTurn || !strings.Contains(said, p.thought) {
				t.Errorf("%q: stop %s; the editor was not told %q", p.prompt, stop, p.thought)
			}
		}
		for _, f := range []string{"out.txt", "ran.txt"} {
			if _, err := os.Stat(filepath.Join(h.ws, f)); err == nil {
				t.Errorf("%s exists: the grant denied it", f)
			}
		}
		if len(s.ed.asked) != 0 {
			t.Errorf("the editor was asked %v: the grant decides", s.ed.asked)
		}
		denials := 0
		for _, r := range h.receipts(t, string(s.id)) {
			if r["decision"] == "deny" && (r["tool"] == "Write" || r["tool"] == "Bash") {
				denials++
			}
		}
		if denials < 2 {
			t.Errorf("%d sealed denials of Write and Bash, want 2", denials)
		}
		s.close(t)
		h.noneLeft(t, "after the session")
	})
}
