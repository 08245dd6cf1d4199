package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// call is one tool call the fake model makes.
type call struct {
	Name string
	Args map[string]any
}

// response is what the CLI sent back for a tool call.
type response struct {
	ID, Text string
}

// fakeOpenAI is an offline OpenAI-compatible chat completions API on
// 127.0.0.1, the kind Qwen Code talks to with --auth-type openai: it
// plays the script, one tool call per model turn, then "done"; every tool
// message the CLI sends back is recorded, with the names of the tools each
// request offered.
type fakeOpenAI struct {
	mu        sync.Mutex
	script    []call
	responses []response
	tools     [][]string
	requests  []string
	bodies    []string
}

func (f *fakeOpenAI) play(calls ...call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.responses, f.tools = calls, nil, nil
}

func (f *fakeOpenAI) got() []response {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]response(nil), f.responses...)
}

// mentioned says whether any request the CLI sent contains s.
func (f *fakeOpenAI) mentioned(s string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.bodies {
		if strings.Contains(b, s) {
			return true
		}
	}
	return false
}

func (f *fakeOpenAI) offered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []string
	for _, ts := range f.tools {
		all = append(all, ts...)
	}
	return all
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

type request struct {
	Stream   bool      `json:"stream"`
	Messages []message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// text is a message's content: a string, or the text of its parts.
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.bodies = append(f.bodies, string(body))
	f.mu.Unlock()
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-coder","object":"model"}]}`)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Function.Name)
	}
	f.tools = append(f.tools, names)
	// The turn is the number of tool calls the model made so far; the
	// tool messages answer them in order.
	turn := 0
	for _, m := range req.Messages {
		turn += len(m.ToolCalls)
		if m.Role == "tool" && len(f.responses) < turn {
			f.responses = append(f.responses, response{m.ToolCallID, m.text()})
		}
	}
	var next *call
	if turn < len(f.script) && len(names) > 0 {
		next = &f.script[turn]
	}
	f.mu.Unlock()

	msg := map[string]any{"role": "assistant", "content": "done"}
	finish := "stop"
	if next != nil {
		args, _ := json.Marshal(next.Args)
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_%d", turn), "type": "function",
			"function": map[string]any{"name": next.Name, "arguments": string(args)}}}}
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "fake-coder",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake-coder",
		"choices": []any{map[string]any{"index": 0, "delta": msg, "finish_reason": finish}}, "usage": usage})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk)
}
