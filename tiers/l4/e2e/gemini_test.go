package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/internal/testdeps"
)

// fakeGeminiAPI is the Gemini API (v1beta) as Gemini CLI uses it:
// streamGenerateContent as SSE (?alt=sse) plays the script its first user
// message names, one function call per answer, each after the previous
// one's functionResponse, then "done"; generateContent (the CLI's side
// questions) answers that the user speaks next. Every answer reports
// usageMetadata, with thoughts, as the real API does; every functionResponse
// is recorded.
type fakeGeminiAPI struct {
	ws string

	mu       sync.Mutex
	calls    int
	in, out  uint64
	results  []string
	requests []string
}

func (f *fakeGeminiAPI) script(prompt string) []map[string]any {
	write := map[string]any{"name": "write_file", "args": map[string]any{"file_path": filepath.Join(f.ws, "out.txt"), "content": "hello from gemini\n"}}
	run := map[string]any{"name": "run_shell_command", "args": map[string]any{"command": "echo ran > ran.txt", "description": "record the run"}}
	switch {
	case strings.Contains(prompt, "OUTSIDE"):
		return []map[string]any{{"name": "write_file", "args": map[string]any{"file_path": filepath.Join(filepath.Dir(f.ws), "outside.txt"), "content": "escaped\n"}}}
	case strings.Contains(prompt, "WRITE AND RUN"):
		return []map[string]any{write, run}
	case strings.Contains(prompt, "RUN ONLY"):
		return []map[string]any{run}
	}
	return nil
}

func (f *fakeGeminiAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	f.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, ":countTokens") {
		io.WriteString(w, `{"totalTokens":10}`)
		return
	}
	stream := strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
	if !stream && !strings.HasSuffix(r.URL.Path, ":generateContent") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string `json:"text"`
				FunctionResponse *struct {
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []json.RawMessage `json:"tools"`
	}
	json.Unmarshal(body, &req)
	prompt, results := "", 0
	for i, c := range req.Contents {
		for _, p := range c.Parts {
			if c.Role == "user" && p.FunctionResponse == nil {
				prompt += p.Text
			}
			if p.FunctionResponse != nil {
				results++
				if i == len(req.Contents)-1 {
					f.mu.Lock()
					f.results = append(f.results, p.FunctionResponse.Name+" "+string(p.FunctionResponse.Response))
					f.mu.Unlock()
				}
			}
		}
	}
	f.mu.Lock()
	f.calls++
	n := f.calls
	in, thoughts, cand := uint64(300+n), uint64(7), uint64(20+n)
	f.in, f.out = f.in+in, f.out+thoughts+cand
	f.mu.Unlock()
	usage := map[string]any{"promptTokenCount": in, "candidatesTokenCount": cand, "thoughtsTokenCount": thoughts, "totalTokenCount": in + cand + thoughts}
	if !stream {
		text, _ := json.Marshal(`{"reasoning":"done","next_speaker":"user"}`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"thoughtsTokenCount":%d},"modelVersion":"gemini-2.5-flash"}`, text, in, cand, thoughts)
		return
	}
	parts := []map[string]any{{"text": "done"}}
	if s := f.script(prompt); len(req.Tools) > 0 && results < len(s) {
		parts = []map[string]any{{"functionCall": s[results]}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	// Two chunks, as the API streams: the first with the counts so far.
	first, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": ""}}}, "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": in, "candidatesTokenCount": 1, "totalTokenCount": in + 1}, "modelVersion": "gemini-2.5-flash"})
	last, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": usage, "modelVersion": "gemini-2.5-flash", "responseId": fmt.Sprintf("fake%d", n)})
	fmt.Fprintf(w, "data: %s\r\n\r\ndata: %s\r\n\r\n", first, last)
}

func (f *fakeGeminiAPI) tokens() (int, uint64, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.in, f.out
}

// geminiRemote is the remote command line and environment for the real
// Gemini CLI in its ACP mode (`gemini --experimental-acp`, the CLI pinned
// for plugins/geminicli/e2e), offline: an API key of no worth. joule acp
// points it at joule proxy (GOOGLE_GEMINI_BASE_URL, l4.ProxyEnv).
func geminiRemote(t testing.TB) ([]string, []string) {
	t.Helper()
	js := filepath.Join(testdeps.NodeModules("../../../plugins/geminicli/e2e"), "@google/gemini-cli/bundle/gemini.js")
	if _, err := os.Stat(js); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the pinned Gemini CLI is not installed (%v): run .ci/setup.d/10-hosts.sh", err)
		}
		t.Skip("the pinned Gemini CLI is not installed")
	}
	node, err := lookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	return []string{node, js, "--experimental-acp", "--model", "gemini-2.5-flash"},
		[]string{"GEMINI_API_KEY=test-dummy-key", "GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1"}
}

// TestGeminiACP: the real Gemini CLI through its ACP mode as joule acp's
// L4, its whole process tree contained by joule-exec with the session's
// grant, in its default approval mode and in yolo (set over ACP with joule
// acp --remote-mode; Gemini CLI allows it only in a trusted workspace,
// GEMINI_CLI_TRUST_WORKSPACE). Its model calls go through joule proxy's
// Gemini API route and are metered into the session; allowed, its own
// write_file and run_shell_command land and are one signed op (in its
// default mode the command's permission request names no command, so
// joule asks the editor); denied, nothing touches the disk and its tool
// reports the failure to the model.
func TestGeminiACP(t *testing.T) {
	for _, mode := range []string{"default", "yolo"} {
		t.Run(mode, func(t *testing.T) {
			t.Run("allowed", func(t *testing.T) {
				h, remote, env, api, proxyURL := geminiHome(t, mode)
				h.run(t, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
				s := h.acp(t, remote, proxyURL, env...)
				stop, said := s.prompt(t, "WRITE AND RUN: make out.txt and record the run")
				t.Logf("the editor saw:\n%s\ntool results: %v\nrequests: %v", said, api.results, api.requests)
				if stop != acp.StopReasonEndTurn {
					t.Fatalf("stop %s", stop)
				}
				if b, err := os.ReadFile(filepath.Join(h.ws, "out.txt")); err != nil || string(b) != "hello from gemini\n" {
					t.Errorf("out.txt: %q %v; tool results %v", b, err, api.results)
				}
				files := []string{"out.txt", "ran.txt"}
				if mode == "default" {
					// In its default mode Gemini CLI asks before a shell
					// command, and its request names the command in a title
					// only (no rawInput): joule cannot decide it and asks
					// the editor, which (here) refuses.
					files = files[:1]
					if _, err := os.Stat(filepath.Join(h.ws, "ran.txt")); err == nil || len(s.ed.asked) != 1 || !strings.Contains(said, "without a command in its rawInput; asking you") {
						t.Errorf("the shell command was not put to the editor (asked %v): %s", s.ed.asked, said)
					}
				} else if b, err := os.ReadFile(filepath.Join(h.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
					t.Errorf("ran.txt: %q %v; tool results %v", b, err, api.results)
				}
				if strings.Contains(said, "undid") {
					t.Errorf("joule undid something of an allowed turn: %s", said)
				}
				checkSealed(t, h, s, api, files)
				s.close(t)
				h.noneLeft(t, "after the session")
			})
			t.Run("denied", func(t *testing.T) {
				h, remote, env, api, proxyURL := geminiHome(t, mode)
				h.run(t, "grant", "issue", "--allow", "Read", "--deny", "Write", "--deny", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
				s := h.acp(t, remote, proxyURL, env...)
				for _, p := range []string{"WRITE AND RUN: make out.txt", "RUN ONLY: record the run", "OUTSIDE: write next to the workspace"} {
					checkDeniedTurn(t, s, api, p, false, func(r string) bool { return failed(r) || strings.Contains(r, `"error"`) })
				}
				checkNothingWritten(t, h)
				checkMetered(t, h, s, api)
				s.close(t)
				h.noneLeft(t, "after the session")
			})
		})
	}
}

// geminiHome is a fresh home, workspace, fake Gemini API and joule proxy in
// front of it for one Gemini CLI session in mode.
func geminiHome(t *testing.T, mode string) (*home, []string, []string, *fakeGeminiAPI, string) {
	h := newHome(t)
	remote, env := geminiRemote(t)
	if mode != "default" {
		// Gemini CLI refuses yolo in a folder it does not trust: the
		// person trusts the workspace for the agent.
		env = append(env, "JOULE_ACP_REMOTE_MODE="+mode, "GEMINI_CLI_TRUST_WORKSPACE=true")
	}
	api := &fakeGeminiAPI{ws: h.ws}
	return h, remote, env, api, h.proxy(t, "--gemini", serve(t, api))
}
