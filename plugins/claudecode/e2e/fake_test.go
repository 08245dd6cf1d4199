package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// fakeAnthropic is an offline Anthropic Messages endpoint on 127.0.0.1
// that scripts the model: the first turn that offers tools calls Bash with
// command, the turn after a tool result ends the conversation. It records
// the tool results the CLI sends back.
type fakeAnthropic struct {
	mu      sync.Mutex
	command string
	turns   int
	results []toolResult
}

type toolResult struct {
	IsError bool
	Content string
}

func (f *fakeAnthropic) script(command string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.command, f.turns, f.results = command, 0, nil
}

func (f *fakeAnthropic) got() []toolResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolResult(nil), f.results...)
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		return
	}
	if strings.Contains(r.URL.Path, "count_tokens") {
		io.WriteString(w, `{"input_tokens":10}`)
		return
	}
	var req struct {
		Stream   bool              `json:"stream"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	f.mu.Lock()
	sawResult := false
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			IsError bool            `json:"is_error"`
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "tool_result" {
				sawResult = true
				if len(f.results) == 0 {
					f.results = append(f.results, toolResult{b.IsError, contentText(b.Content)})
				}
			}
		}
	}
	if len(req.Tools) > 0 {
		f.turns++
	}
	useTool := len(req.Tools) > 0 && !sawResult && f.command != "" && f.turns == 1
	command := f.command
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
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_fake", "type": "message", "role": "assistant",
		"model": "claude-fake", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	stop := "end_turn"
	if useTool {
		input, _ := json.Marshal(map[string]string{"command": command, "description": "scripted by the test"})
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_fake1", "name": "Bash", "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		stop = "tool_use"
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
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
