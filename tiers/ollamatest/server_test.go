package ollamatest

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// TestServer pins what the real server does with the models WriteModel
// writes: chat and generate answer the reply chain, at temperature 0 the
// same text every time, with real token counts; an embedding model
// answers vectors of dimension Embed, and refuses a chat.
func TestServer(t *testing.T) {
	began := time.Now()
	s := Start(t, Options{})
	t.Logf("ollama serve listening in %s", time.Since(began))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chat := Spec{Seed: 1, Words: 12}
	for name, spec := range map[string]Spec{"tinyllama-joule": chat, "tiny-embed": {Seed: 2, Embedding: true}} {
		start := time.Now()
		if err := s.Create(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
		t.Logf("ollama create %s: %s", name, time.Since(start))
	}
	if err := s.Create(ctx, "tinyllama-joule-ctx256", chat, "num_ctx 256"); err != nil {
		t.Fatal(err)
	}
	want, err := ReplyText(chat)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.URL)
	c := api.NewClient(u, http.DefaultClient)
	f := false
	var texts []string
	var prompt int
	for i, stream := range []*bool{nil, &f, nil} {
		var sb strings.Builder
		var final api.ChatResponse
		start := time.Now()
		err := c.Chat(ctx, &api.ChatRequest{Model: "tinyllama-joule", Stream: stream,
			Messages: []api.Message{{Role: "user", Content: "make Add return the sum of a and b"}}},
			func(r api.ChatResponse) error {
				sb.WriteString(r.Message.Content)
				if r.Done {
					final = r
				}
				return nil
			})
		if err != nil {
			t.Fatalf("chat %d: %v\n%s", i, err, s.Log())
		}
		t.Logf("chat %d (stream %v): %q, %d in, %d out, %s, done %q", i, stream == nil, sb.String(), final.PromptEvalCount, final.EvalCount, time.Since(start), final.DoneReason)
		// Ollama counts the end-of-sequence token it sampled.
		if final.EvalCount != 13 || final.DoneReason != "stop" {
			t.Errorf("chat %d: eval_count %d (done %q), want the chain's 12 words, its end, and a stop", i, final.EvalCount, final.DoneReason)
		}
		// Ollama 0.17 counts the whole prompt, the part its KV cache held
		// from the call before included: the same prompt, the same count.
		if final.PromptEvalCount == 0 || i > 0 && final.PromptEvalCount != prompt {
			t.Errorf("chat %d: prompt_eval_count %d, want %d every time", i, final.PromptEvalCount, prompt)
		}
		prompt = final.PromptEvalCount
		texts = append(texts, sb.String())
	}
	if strings.TrimSpace(texts[0]) != strings.TrimSpace(want) {
		t.Errorf("the reply is %q, want the chain %q", texts[0], want)
	}
	if texts[1] != texts[0] || texts[2] != texts[0] {
		t.Errorf("not deterministic: %q", texts)
	}
	var gen api.GenerateResponse
	err = c.Generate(ctx, &api.GenerateRequest{Model: "tinyllama-joule", Prompt: "hello", Stream: &f, Options: map[string]any{"num_predict": 5}},
		func(r api.GenerateResponse) error { gen = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if gen.EvalCount != 5 || gen.DoneReason != "length" || gen.PromptEvalCount == 0 {
		t.Errorf("generate with num_predict 5: %d in, %d out, done %q; want 5 out, length", gen.PromptEvalCount, gen.EvalCount, gen.DoneReason)
	}
	// A prompt longer than the context: by default Ollama cuts it and
	// answers; asked not to, it refuses.
	long := []api.Message{{Role: "user", Content: strings.Repeat("the quick brown fox ", 100)}}
	var cut api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: "tinyllama-joule-ctx256", Messages: long, Stream: &f}, func(r api.ChatResponse) error { cut = r; return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("a 2000-byte prompt to a 256-token context: answered, %d prompt tokens", cut.PromptEvalCount)
	if cut.PromptEvalCount > 256 {
		t.Errorf("the cut prompt has %d tokens", cut.PromptEvalCount)
	}
	err = c.Chat(ctx, &api.ChatRequest{Model: "tinyllama-joule-ctx256", Messages: long, Stream: &f, Truncate: &f}, func(api.ChatResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "exceeds the context length") {
		t.Errorf("with truncate false: %v, want a refusal", err)
	}
	emb, err := c.Embed(ctx, &api.EmbedRequest{Model: "tiny-embed", Input: []string{"func Add(a, b int) int", "the quick brown fox"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) != Embed || emb.PromptEvalCount == 0 {
		t.Fatalf("embed: %d vectors of %d, %d tokens; want 2 of %d", len(emb.Embeddings), len(emb.Embeddings[0]), emb.PromptEvalCount, Embed)
	}
	err = c.Chat(ctx, &api.ChatRequest{Model: "tiny-embed", Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
	t.Logf("a chat with the embedding model: %v", err)
	t.Logf("resident memory: %s", rss(s))
	if err == nil || !strings.Contains(err.Error(), "does not support") {
		t.Errorf("a chat with the embedding model: %v, want a refusal", err)
	}
}

// rss is the resident memory of the server's processes (serve and its
// runners), from /proc.
func rss(s *Server) string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(s.cmd.Process.Pid) && e.Name() != strconv.Itoa(s.cmd.Process.Pid) {
			continue
		}
		status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				out = append(out, strings.Fields(strings.ReplaceAll(string(cmd), "\x00", " "))[1]+" "+strings.TrimSpace(v))
			}
		}
	}
	return strings.Join(out, ", ")
}
