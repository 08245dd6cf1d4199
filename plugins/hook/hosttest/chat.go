// Package hosttest is what the host end-to-end tests (plugins/opencode/e2e,
// plugins/cline/e2e) share: an offline OpenAI Chat Completions endpoint on
// 127.0.0.1 that streams scripted tool calls as the real API's SSE chunks
// and records every request (so a test reads what the real CLI sent back to
// the model), the joule binary built as make builds it, and a loopback-only
// network namespace to run the CLIs in.
package hosttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Call is one scripted tool call: the tool's name as the CLI declares it
// and its arguments as a JSON object.
type Call struct {
	Name string
	Args any
}

// Turn is what the model answers to one request that offers tools: tool
// calls, or (when Calls is empty) Text and the end of the task.
type Turn struct {
	Calls []Call
	Text  string
}

// Message is one message of a request, with its content as text.
type Message struct {
	Role       string
	Content    string
	ToolCallID string
}

// Request is one request the CLI sent.
type Request struct {
	Path     string
	Stream   bool
	Tools    []string // the names of the tools offered
	Messages []Message
	Body     string
}

// Server is the fake Chat Completions endpoint. Its URL ends in /v1.
type Server struct {
	URL string

	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	turns    []Turn
	requests []Request
	n        int
}

// Start listens on 127.0.0.1 and serves until Close.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, URL: "http://" + ln.Addr().String() + "/v1"}
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Script replaces the turns still to come and forgets the requests seen.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns, s.requests = turns, nil
}

// Requests returns the requests seen since the last Script.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ToolResults returns the content of every tool message the CLI sent since
// the last Script, by tool call id (the last one seen for each id).
func (s *Server) ToolResults() map[string]string {
	out := map[string]string{}
	for _, r := range s.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				out[m.ToolCallID] = m.Content
			}
		}
	}
	return out
}

// AllText is every message of every request since the last Script, joined:
// what the model was shown.
func (s *Server) AllText() string {
	var b strings.Builder
	for _, r := range s.Requests() {
		for _, m := range r.Messages {
			b.WriteString(m.Role + ": " + m.Content + "\n")
		}
	}
	return b.String()
}

type wireRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
}

func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"test"}]}`)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := Request{Path: r.URL.Path, Stream: req.Stream, Body: string(body)}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	for _, m := range req.Messages {
		rec.Messages = append(rec.Messages, Message{Role: m.Role, Content: text(m.Content), ToolCallID: m.ToolCallID})
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	turn := Turn{Text: "done"}
	if len(rec.Tools) > 0 && len(s.turns) > 0 {
		turn, s.turns = s.turns[0], s.turns[1:]
	} else if len(rec.Tools) == 0 {
		turn = Turn{Text: "A title"}
	}
	s.n++
	n := s.n
	s.mu.Unlock()

	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var calls []tc
	for i, c := range turn.Calls {
		args, _ := json.Marshal(c.Args)
		calls = append(calls, tc{Index: i, ID: fmt.Sprintf("call_%d_%d", n, i), Type: "function", Function: fn{c.Name, string(args)}})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	id := fmt.Sprintf("chatcmpl-fake%d", n)
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": turn.Text}
		if len(calls) > 0 {
			msg["content"], msg["tool_calls"] = nil, calls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if len(calls) > 0 {
		chunk(map[string]any{"tool_calls": calls}, nil, nil)
	} else {
		chunk(map[string]any{"content": turn.Text}, nil, nil)
	}
	chunk(map[string]any{}, finish, usage)
	io.WriteString(w, "data: [DONE]\n\n")
}
