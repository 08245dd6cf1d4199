package l3

import (
	"context"
	"testing"
)

// TestGreedyRequests: both clients ask for the model's most likely answer
// (temperature 0, which go-openai would leave out of the body, and the
// servers then read as 1.0), and the Ollama client asks the server neither
// to truncate the prompt nor to shift the context (a prompt that does not
// fit is an error, not an edit made without the request).
func TestGreedyRequests(t *testing.T) {
	for _, provider := range []string{"ollama", "openai"} {
		s := &script{replies: []string{"NO_EDIT"}, gone: make(chan struct{})}
		var m Model
		if provider == "ollama" {
			m, _ = NewOllama(fakeOllama(t, s).URL, "qwen2.5-coder:7b", nil)
		} else {
			m, _ = NewOpenAI(fakeOpenAI(t, s).URL+"/v1", "", "qwen2.5-coder:7b", nil)
		}
		if _, err := m.Chat(context.Background(), []Message{{Role: "user", Content: "hi"}}); err != nil {
			t.Fatalf("%s: %v", provider, err)
		}
		c := s.Calls()[0]
		if c.Temperature == nil || *c.Temperature != 0 {
			t.Errorf("%s: temperature %v, want 0", provider, c.Temperature)
		}
		if provider == "ollama" && (c.Truncate == nil || *c.Truncate || c.Shift == nil || *c.Shift) {
			t.Errorf("ollama: truncate %v, shift %v; want both false", c.Truncate, c.Shift)
		}
	}
}
