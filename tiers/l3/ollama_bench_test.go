package l3

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers/ollamatest"
)

// BenchmarkRealOllamaStage times the tier's whole attempt (snapshot,
// prompt, the model call through L3's client, parsing the reply) against
// the same chat made directly with ollama's api.Client, to the same real
// server, interleaved in one run. The model answers NO_EDIT, so no
// toolchain runs: what is left over the direct call is the tier's own cost.
// It reports stage/direct, the ratio of the two mean times.
func BenchmarkRealOllamaStage(b *testing.B) {
	s := ollamatest.Start(b, ollamatest.Options{})
	ctx := context.Background()
	const name = "tinyllama-joule-noedit"
	if err := s.Create(ctx, name, ollamatest.Spec{Seed: 7, Reply: []string{NoEdit}}); err != nil {
		b.Fatal(err)
	}
	root := workspace(b)
	m, err := NewOllama(s.URL, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	m.MaxOutput = 64
	st := &Stage{Model: m, Key: newKeyTB(b), Energy: &energy.Table{}, MaxOutput: 64}
	req := editRequest(root)
	files, err := core.ReadDir(root)
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse(s.URL)
	direct := api.NewClient(u, http.DefaultClient)
	no := false
	chat := &api.ChatRequest{Model: name, Truncate: &no, Shift: &no, Options: map[string]any{"temperature": 0, "num_predict": 64},
		Messages: []api.Message{{Role: "system", Content: systemPrompt}, {Role: "user", Content: userPrompt(req, files, st.maxContext())}}}
	directCall := func() {
		if err := direct.Chat(ctx, chat, func(api.ChatResponse) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	stageCall := func() {
		if res, err := st.TryResolve(ctx, req); res != nil || err != nil {
			b.Fatalf("want NO_EDIT: %+v, %v", res, err)
		}
	}
	directCall() // loads the model
	stageCall()
	var tDirect, tStage time.Duration
	b.ResetTimer()
	timed := func(f func()) time.Duration { t0 := time.Now(); f(); return time.Since(t0) }
	for i := range b.N {
		// Alternate which goes first, so neither pays for following the
		// other (the server's KV cache, the collector).
		if i%2 == 0 {
			tDirect += timed(directCall)
			tStage += timed(stageCall)
		} else {
			tStage += timed(stageCall)
			tDirect += timed(directCall)
		}
	}
	b.ReportMetric(float64(tStage)/float64(tDirect), "stage/direct")
	b.ReportMetric(float64(tDirect.Microseconds())/float64(b.N), "direct-µs/call")
	b.ReportMetric(float64(tStage.Microseconds())/float64(b.N), "stage-µs/call")
}
