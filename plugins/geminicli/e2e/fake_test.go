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
	Name     string
	Response json.RawMessage
}

// fakeGemini is an offline Gemini API (generativelanguage v1beta) on
// 127.0.0.1: streamGenerateContent answers with Server-Sent Events and
// plays the script, one tool call per model turn, then "done"; every
// functionResponse the CLI sends back is recorded, with the names of the
// tools each request offered.
type fakeGemini struct {
	mu        sync.Mutex
	script    []call
	responses []response
	tools     [][]string
	requests  int
	paths     []string
}

func (f *fakeGemini) play(calls ...call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.responses, f.tools = calls, nil, nil
}

func (f *fakeGemini) got() []response {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]response(nil), f.responses...)
}

func (f *fakeGemini) offered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []string
	for _, ts := range f.tools {
		all = append(all, ts...)
	}
	return all
}

type part struct {
	Text         string `json:"text,omitempty"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type request struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests++
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		io.WriteString(w, `{"totalTokens":10}`)
		return
	case strings.HasSuffix(r.URL.Path, ":generateContent"):
		// Side requests (next-speaker checks, summaries): the user speaks.
		w.Header().Set("Content-Type", "application/json")
		text, _ := json.Marshal(`{"reasoning":"done","next_speaker":"user"}`)
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15}}`, text)
		return
	case !strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		http.NotFound(w, r)
		return
	}
	var req request
	json.Unmarshal(body, &req)
	f.mu.Lock()
	var names []string
	for _, t := range req.Tools {
		for _, d := range t.FunctionDeclarations {
			names = append(names, d.Name)
		}
	}
	f.tools = append(f.tools, names)
	// The turn is the number of tool calls the model made so far.
	turn := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				turn++
			}
			if p.FunctionResponse != nil && len(f.responses) < turn {
				f.responses = append(f.responses, response{p.FunctionResponse.Name, p.FunctionResponse.Response})
			}
		}
	}
	var next *call
	if turn < len(f.script) && len(names) > 0 {
		next = &f.script[turn]
	}
	f.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	var parts []map[string]any
	if next != nil {
		parts = []map[string]any{{"functionCall": map[string]any{"name": next.Name, "args": next.Args}}}
	} else {
		parts = []map[string]any{{"text": "done"}}
	}
	chunk, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
		"modelVersion":  "gemini-2.5-flash",
	})
	fmt.Fprintf(w, "data: %s\n\n", chunk)
}

// text is a tool response's text for the model: Gemini wraps a tool's
// result as {"output": …} and an error as {"error": …}.
func (r response) text() string {
	var m map[string]any
	json.Unmarshal(r.Response, &m)
	var parts []string
	for _, k := range []string{"output", "error"} {
		if s, ok := m[k].(string); ok {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return string(r.Response)
	}
	return strings.Join(parts, "\n")
}
