package l2

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/joulehook/joule/tiers/ollamatest"
)

// BenchmarkRealOllamaIndexBuild builds the index of testdata/corpus with a
// real Ollama's /api/embed, and sends the same chunk texts, in the same
// batches, straight to the server with ollama's api.Client, in one run. It
// reports index/raw, the index build's embedding throughput (chunks per
// second, scanning, chunking and writing included) over the raw calls'.
func BenchmarkRealOllamaIndexBuild(b *testing.B) {
	s := ollamatest.Start(b, ollamatest.Options{})
	ctx := context.Background()
	const model = "tiny-embed"
	if err := s.Create(ctx, model, ollamatest.Spec{Seed: 6, Embedding: true}); err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse(s.URL)
	raw := api.NewClient(u, http.DefaultClient)
	// The chunk texts, as the index embeds them.
	ix, err := Open(filepath.Join(b.TempDir(), "texts.db"), corpus)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ix.Update(ctx, nil); err != nil {
		b.Fatal(err)
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT f.path, c.symbol, c.text FROM chunks c JOIN files f ON f.id=c.file_id ORDER BY c.id`)
	if err != nil {
		b.Fatal(err)
	}
	var texts []string
	for rows.Next() {
		var p, sym, text string
		if err := rows.Scan(&p, &sym, &text); err != nil {
			b.Fatal(err)
		}
		texts = append(texts, embedText(p, sym, text))
	}
	rows.Close()
	ix.Close()
	truncate := true
	rawBuild := func() {
		for start := 0; start < len(texts); start += DefaultBatch {
			if _, err := raw.Embed(ctx, &api.EmbedRequest{Model: model, Input: texts[start:min(start+DefaultBatch, len(texts))], Truncate: &truncate}); err != nil {
				b.Fatal(err)
			}
		}
	}
	indexBuild := func(i int) {
		ix, err := Open(filepath.Join(b.TempDir(), "ix.db"), corpus, WithEmbedder(NewOllamaEmbedder(s.URL, model, nil)))
		if err != nil {
			b.Fatal(err)
		}
		defer ix.Close()
		st, err := ix.Update(ctx, nil)
		if err != nil || st.EmbedErr != nil || st.Embedded != len(texts) {
			b.Fatalf("build %d: %+v, %v; want %d embedded", i, st, err, len(texts))
		}
	}
	rawBuild() // loads the model
	var tRaw, tIndex time.Duration
	b.ResetTimer()
	timed := func(f func()) time.Duration { t0 := time.Now(); f(); return time.Since(t0) }
	for i := range b.N {
		// Alternate which goes first, so neither pays for following the other.
		if i%2 == 0 {
			tRaw += timed(rawBuild)
			tIndex += timed(func() { indexBuild(i) })
		} else {
			tIndex += timed(func() { indexBuild(i) })
			tRaw += timed(rawBuild)
		}
	}
	b.ReportMetric(float64(tRaw)/float64(tIndex), "index/raw")
	n := float64(len(texts) * b.N)
	b.ReportMetric(n/tRaw.Seconds(), "raw-chunks/s")
	b.ReportMetric(n/tIndex.Seconds(), "index-chunks/s")
}
