package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// fakeResponses is the OpenAI Responses API as Codex uses it, streamed
// (SSE). A request plays the script its first user message names: a patch
// that adds out.txt, then a shell command, one per answer, each after the
// previous one's output, then a closing message; the tool shapes follow the
// tools the request offers (apply_patch as a function or a freeform tool;
// shell, shell_command or exec_command).
type fakeResponses struct {
	// plain: the command asks for no escalation (Codex's full-access mode
	// refuses such a request: it never asks)
	plain    bool
	mu       sync.Mutex
	calls    int
	in, out  uint64
	requests []string
	outputs  []string
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
		Input []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"`
		} `json:"input"`
	}
	json.Unmarshal(body, &req)
	prompt, outputs := "", 0
	for _, it := range req.Input {
		switch it.Type {
		case "message":
			if it.Role == "user" {
				prompt += string(it.Content)
			}
		case "function_call_output", "custom_tool_call_output":
			outputs++
			f.mu.Lock()
			f.outputs = append(f.outputs, string(it.Output))
			f.mu.Unlock()
		}
	}
	tools := map[string]string{}
	for _, t := range req.Tools {
		tools[t.Name] = t.Type
	}
	var steps []string
	switch {
	case strings.Contains(prompt, "WRITE AND RUN"):
		steps = []string{"patch", "run"}
	case strings.Contains(prompt, "RUN ONLY"):
		steps = []string{"run"}
	}
	f.mu.Lock()
	f.calls++
	n := f.calls
	names := make([]string, 0, len(tools))
	for k, v := range tools {
		names = append(names, k+":"+v)
	}
	f.requests = append(f.requests, fmt.Sprintf("POST %s tools=%v outputs=%d", r.URL.Path, names, outputs))
	in, out := uint64(200+n), uint64(30+n)
	f.in, f.out = f.in+in, f.out+out
	f.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
	}
	id := fmt.Sprintf("resp_fake%d", n)
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	var item map[string]any
	callID := fmt.Sprintf("call_fake%d", n)
	if outputs < len(steps) {
		switch steps[outputs] {
		case "patch":
			patch := "*** Begin Patch\n*** Add File: out.txt\n+hello from codex\n*** End Patch\n"
			if tools["apply_patch"] == "custom" {
				item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + callID, "call_id": callID, "name": "apply_patch", "input": patch, "status": "completed"}
			} else {
				args, _ := json.Marshal(map[string]any{"input": patch})
				item = map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": "apply_patch", "arguments": string(args), "status": "completed"}
			}
		case "run":
			var name string
			var args map[string]any
			switch {
			case tools["shell_command"] != "":
				name, args = "shell_command", map[string]any{"command": "echo ran > ran.txt", "sandbox_permissions": "require_escalated", "justification": "record the run"}
			case tools["exec_command"] != "":
				name, args = "exec_command", map[string]any{"cmd": "echo ran > ran.txt", "sandbox_permissions": "require_escalated", "justification": "record the run"}
			default:
				name, args = "shell", map[string]any{"command": []string{"bash", "-lc", "echo ran > ran.txt"}, "sandbox_permissions": "require_escalated", "justification": "record the run"}
			}
			if f.plain {
				delete(args, "sandbox_permissions")
				delete(args, "justification")
			}
			b, _ := json.Marshal(args)
			item = map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": name, "arguments": string(b), "status": "completed"}
		}
	}
	if item == nil {
		item = map[string]any{"type": "message", "id": "msg_" + callID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}}}
	}
	ev(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	ev(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "status": "completed",
		"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + out}}})
}

func (f *fakeResponses) tokens() (int, uint64, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.in, f.out
}

func (f *fakeResponses) log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.requests, "\n") + "\noutputs:\n" + strings.Join(f.outputs, "\n")
}

// codexRemote is the remote command line and environment for the real
// Codex through codex-acp, offline: an API key of no worth, and a Codex home
// of the test's own.
func codexRemote(t testing.TB, h *home) ([]string, []string) {
	bin := need(t, "testdata/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp", "@zed-industries/codex-acp")
	codexHome := filepath.Join(h.user, ".codex")
	os.MkdirAll(codexHome, 0o700)
	return []string{bin}, []string{"OPENAI_API_KEY=sk-test-dummy-key-0000000000", "CODEX_HOME=" + codexHome, "RUST_LOG=warn"}
}

// TestCodexACP: the real Codex, through codex-acp in its default mode, as
// joule acp's L4: its patch and its command, as the grant allows or denies
// them; the changes sealed as one op; its model calls metered by joule
// proxy into the session; nothing left running.
func TestCodexACP(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	remote, env := codexRemote(t, h)
	api := &fakeResponses{}
	proxyURL := h.proxy(t, "--openai", serve(t, api))
	defer func() { t.Logf("the endpoint saw:\n%s", api.log()) }()

	t.Run("allowed", func(t *testing.T) {
		h.run(t, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
		s := h.acp(t, remote, proxyURL, env...)
		stop, said := s.prompt(t, "WRITE AND RUN: make out.txt and record the run")
		t.Logf("the editor saw:\n%s", said)
		if stop != acp.StopReasonEndTurn {
			t.Fatalf("stop %s", stop)
		}
		if b, err := os.ReadFile(filepath.Join(h.ws, "out.txt")); err != nil || string(b) != "hello from codex\n" {
			t.Errorf("out.txt: %q %v", b, err)
		}
		if b, err := os.ReadFile(filepath.Join(h.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
			t.Errorf("ran.txt: %q %v", b, err)
		}
		if len(s.ed.asked) != 0 {
			t.Errorf("the editor was asked %v: the grant decides", s.ed.asked)
		}
		checkSealed(t, h, s, api, []string{"out.txt", "ran.txt"})
		h.noneLeft(t, "after the turn", s.cmd.Process.Pid)
		s.close(t)
		h.noneLeft(t, "after the session")
	})

	// In its default mode codex-acp asks before it applies a patch or runs
	// a command outside its sandbox; a rejection aborts its turn.
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
				t.Errorf("%s exists: the grant denies it", f)
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

// TestCodexACPFullAccess: the real Codex through codex-acp in its most
// permissive mode (full-access: danger-full-access, no approvals, set over
// ACP with joule acp --remote-mode), contained by joule-exec with the
// session's grant. It asks nothing: allowed, its patch and its command land
// and are one signed op; denied, both fail at the system call inside Codex's
// own tools, Codex's outputs to the model say so, and nothing is undone
// because nothing was written.
func TestCodexACPFullAccess(t *testing.T) {
	t.Parallel()
	for _, allowed := range []bool{true, false} {
		name := map[bool]string{true: "allowed", false: "denied"}[allowed]
		t.Run(name, func(t *testing.T) {
			h := newHome(t)
			remote, env := codexRemote(t, h)
			env = append(env, "JOULE_ACP_REMOTE_MODE=full-access")
			api := &fakeResponses{plain: true}
			proxyURL := h.proxy(t, "--openai", serve(t, api))
			defer func() { t.Logf("the endpoint saw:\n%s", api.log()) }()
			if allowed {
				h.run(t, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
			} else {
				h.run(t, "grant", "issue", "--allow", "Read", "--deny", "Write", "--deny", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
			}
			s := h.acp(t, remote, proxyURL, env...)
			stop, said := s.prompt(t, "WRITE AND RUN: make out.txt and record the run")
			t.Logf("the editor saw:\n%s", said)
			if stop != acp.StopReasonEndTurn {
				t.Fatalf("stop %s", stop)
			}
			if strings.Contains(said, "undid") {
				t.Errorf("joule undid a change: the kernel should have refused it: %s", said)
			}
			if len(s.ed.asked) != 0 {
				t.Errorf("the editor was asked %v: the grant decides", s.ed.asked)
			}
			if allowed {
				if b, err := os.ReadFile(filepath.Join(h.ws, "out.txt")); err != nil || string(b) != "hello from codex\n" {
					t.Errorf("out.txt: %q %v", b, err)
				}
				if b, err := os.ReadFile(filepath.Join(h.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
					t.Errorf("ran.txt: %q %v", b, err)
				}
				checkSealed(t, h, s, api, []string{"out.txt", "ran.txt"})
			} else {
				for _, f := range []string{"out.txt", "ran.txt"} {
					if _, err := os.Stat(filepath.Join(h.ws, f)); err == nil {
						t.Errorf("%s exists: the grant denies it", f)
					}
				}
				// Each request carries every output so far: the distinct ones.
				api.mu.Lock()
				var outputs []string
				for _, o := range api.outputs {
					if !slices.Contains(outputs, o) {
						outputs = append(outputs, o)
					}
				}
				api.mu.Unlock()
				if len(outputs) != 2 {
					t.Errorf("the model got %d tool outputs, want 2 (the patch's and the command's): %v", len(outputs), outputs)
				}
				for _, o := range outputs {
					if !strings.Contains(o, "Read-only file system") && !strings.Contains(o, "Failed to write") {
						t.Errorf("a tool output does not report the failure to the model: %s", o)
					}
				}
				checkMetered(t, h, s, api)
			}
			s.close(t)
			h.noneLeft(t, "after the session")
		})
	}
}
