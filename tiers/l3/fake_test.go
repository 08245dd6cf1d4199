package l3

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// script is what a fake model server answers, call by call; a reply of
// hang blocks until the client goes away.
type script struct {
	mu      sync.Mutex
	replies []string
	calls   []fakeCall
	gone    chan struct{} // closed when a hung call's client disconnected
	once    sync.Once
}

type fakeCall struct {
	Model     string
	Messages  []Message
	Session   string
	MaxOutput int // num_predict or max_tokens as the request set it
	// Temperature as the request set it; nil when it named none.
	Temperature *float64
	// Truncate and Shift as an Ollama request set them; nil when absent.
	Truncate, Shift *bool
}

const hang = "\x00hang"

func (s *script) next(c fakeCall) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	if len(s.replies) == 0 {
		return "NO_EDIT: the script is exhausted"
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r
}

func (s *script) Calls() []fakeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fakeCall(nil), s.calls...)
}

func (s *script) wait(r *http.Request) {
	<-r.Context().Done()
	s.once.Do(func() { close(s.gone) })
}

// chunks splits a reply the way a model streams it: a few bytes at a time,
// across line boundaries.
func chunks(s string) []string {
	var out []string
	for len(s) > 7 {
		out = append(out, s[:7])
		s = s[7:]
	}
	return append(out, s)
}

// fakeOllama speaks Ollama's /api/chat (NDJSON stream, final object with
// prompt_eval_count and eval_count) and /api/tags.
func fakeOllama(t *testing.T, s *script) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
			Options  struct {
				NumPredict  int      `json:"num_predict"`
				Temperature *float64 `json:"temperature"`
			} `json:"options"`
			Truncate, Shift *bool
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad request"}`, 400)
			return
		}
		c := fakeCall{Model: req.Model, Session: r.Header.Get("X-Joule-Session"), MaxOutput: req.Options.NumPredict,
			Temperature: req.Options.Temperature, Truncate: req.Truncate, Shift: req.Shift}
		in := 0
		for _, m := range req.Messages {
			c.Messages = append(c.Messages, Message{m.Role, m.Content})
			in += len(m.Content) / 4
		}
		reply := s.next(c)
		if req.Model == "missing" {
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":"model %q not found, try pulling it first"}`, req.Model)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		if reply == hang {
			w.(http.Flusher).Flush()
			s.wait(r)
			return
		}
		enc := json.NewEncoder(w)
		for _, p := range chunks(reply) {
			enc.Encode(map[string]any{"model": req.Model, "created_at": "2026-11-30T09:00:00Z", "message": map[string]string{"role": "assistant", "content": p}, "done": false})
			w.(http.Flusher).Flush()
		}
		enc.Encode(map[string]any{"model": req.Model, "created_at": "2026-11-30T09:00:01Z", "message": map[string]string{"role": "assistant", "content": ""},
			"done": true, "done_reason": "stop", "total_duration": 1000000, "prompt_eval_count": in, "eval_count": len(reply) / 4})
	})
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"models":[{"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b","size":1},{"name":"nomic-embed-text:latest","model":"nomic-embed-text:latest","size":1}]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// fakeOpenAI speaks the OpenAI chat completions API as vLLM does: an SSE
// stream of chunks, then (stream_options.include_usage) a usage chunk with
// no choices, then [DONE].
func fakeOpenAI(t *testing.T, s *script) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model         string `json:"model"`
			Stream        bool   `json:"stream"`
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
			Messages    []struct{ Role, Content string }
			MaxTokens   int      `json:"max_tokens"`
			Temperature *float64 `json:"temperature"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
			http.Error(w, `{"error":{"message":"want a streaming request","type":"invalid_request_error"}}`, 400)
			return
		}
		c := fakeCall{Model: req.Model, Session: r.Header.Get("X-Joule-Session"), MaxOutput: req.MaxTokens, Temperature: req.Temperature}
		in := 0
		for _, m := range req.Messages {
			c.Messages = append(c.Messages, Message{m.Role, m.Content})
			in += len(m.Content) / 4
		}
		reply := s.next(c)
		w.Header().Set("Content-Type", "text/event-stream")
		if reply == hang {
			w.(http.Flusher).Flush()
			s.wait(r)
			return
		}
		send := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		for _, p := range chunks(reply) {
			send(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": p}, "finish_reason": nil}}, "usage": nil})
		}
		send(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{map[string]any{"index": 0, "delta": map[string]string{}, "finish_reason": "stop"}}, "usage": nil})
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			send(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{},
				"usage": map[string]any{"prompt_tokens": in, "completion_tokens": len(reply) / 4, "total_tokens": in + len(reply)/4, "prompt_tokens_details": map[string]int{"cached_tokens": 16}}})
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// downURL is an address on 127.0.0.1 where nothing listens.
func downURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func lastUser(c fakeCall) string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == "user" {
			return c.Messages[i].Content
		}
	}
	return ""
}

var _ = strings.Contains
