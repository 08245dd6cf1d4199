package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// call is one tool call the fake model makes: a function call (name and
// JSON arguments) or, with custom set, a freeform custom tool call whose
// input is the raw text (Codex's apply_patch).
type call struct {
	Name   string
	Args   string
	Custom bool
	// Search makes the call Codex's client-side tool_search (Args is its
	// JSON arguments), which loads the deferred MCP tools it finds.
	Search bool
	// Namespace is set for a tool tool_search loaded (an MCP server's).
	Namespace string
}

// output is what the CLI sent back for one of the fake's calls.
type output struct {
	CallID string
	Text   string
}

// fakeResponses is an offline OpenAI Responses endpoint (POST
// /v1/responses, SSE) on 127.0.0.1. It plays a script: the request that
// carries the outputs of the first n scripted calls gets call n+1, and
// the one after the last output ends the turn with a message. Every
// request body and every tool output it received is kept.
type fakeResponses struct {
	t      *testing.T
	url    string
	mu     sync.Mutex
	script []call
	run    int
	bodies []string
	outs   []output
	tools  []string // tool names offered in the last request
}

func newFake(t *testing.T) *fakeResponses {
	f := &fakeResponses{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f.url = "http://" + ln.Addr().String() + "/v1"
	return f
}

// play starts a new run with its own call ids.
func (f *fakeResponses) play(calls ...call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.bodies, f.outs = calls, nil, nil
	f.run++
}

func (f *fakeResponses) outputs() []output {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]output(nil), f.outs...)
}

func (f *fakeResponses) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

func (f *fakeResponses) callID(i int) string { return fmt.Sprintf("call_joule_%d_%d", f.run, i) }

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input []json.RawMessage `json:"input"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	f.tools = f.tools[:0]
	for _, tl := range req.Tools {
		f.tools = append(f.tools, tl.Type+":"+tl.Name)
	}
	done := 0
	for _, raw := range req.Input {
		var it struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		json.Unmarshal(raw, &it)
		if !(strings.HasSuffix(it.Type, "_call_output") || it.Type == "tool_search_output") || !strings.HasPrefix(it.CallID, fmt.Sprintf("call_joule_%d_", f.run)) {
			continue
		}
		done++
		text := outputText(it.Output)
		seen := false
		for _, o := range f.outs {
			seen = seen || o.CallID == it.CallID
		}
		if !seen {
			f.outs = append(f.outs, output{it.CallID, text})
		}
	}
	var next *call
	id := f.callID(done)
	if done < len(f.script) {
		next = &f.script[done]
	}
	f.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
	}
	rid := "resp_" + id
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": rid}})
	var item map[string]any
	switch {
	case next != nil && next.Search:
		item = map[string]any{"type": "tool_search_call", "id": "tsc_" + id, "status": "completed", "call_id": id, "execution": "client", "arguments": json.RawMessage(next.Args)}
	case next != nil && next.Namespace != "":
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "status": "completed", "call_id": id, "namespace": next.Namespace, "name": next.Name, "arguments": next.Args}
	case next != nil && next.Custom:
		item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "status": "completed", "call_id": id, "name": next.Name, "input": next.Args}
	case next != nil:
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "status": "completed", "call_id": id, "name": next.Name, "arguments": next.Args}
	default:
		item = map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}}}
	}
	ev(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	ev(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": rid, "status": "completed",
		"usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 120}}})
}

// outputText reads a tool output, a string or a list of content parts.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	if b.Len() == 0 {
		return string(raw)
	}
	return b.String()
}
