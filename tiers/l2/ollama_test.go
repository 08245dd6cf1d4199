package l2_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l2"
	"github.com/joulehook/joule/tiers/ollamatest"
	"github.com/joulehook/joule/tiers/tierconfig"
)

// The end-to-end tests of this file index a workspace with a real Ollama
// server's /api/embed (tiers/ollamatest, built from source by make deps),
// the embedder built from the tiers config as joule acp builds it. The
// tiny embedding model's vectors are 64-dimensional noise: these tests
// check the plumbing and the fallbacks, not the ranking.

const (
	embedModel = "tiny-embed"
	chatModel  = "tinyllama-joule"
)

func realOllama(t *testing.T) (*ollamatest.Server, *ollamatest.Tap) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real Ollama server")
	}
	s := ollamatest.Start(t, ollamatest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Create(ctx, embedModel, ollamatest.Spec{Seed: 6, Embedding: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, chatModel, ollamatest.Spec{Seed: 1, Words: 8}); err != nil {
		t.Fatal(err)
	}
	return s, ollamatest.NewTap(t, s.URL)
}

// embedder is L2's embedder as the tiers config builds it.
func embedder(t *testing.T, base, model, timeout string) l2.Embedder {
	t.Helper()
	raw := fmt.Sprintf(`{"l2": {"embedder": {"provider": "ollama", "base_url": %q, "model": %q, "timeout": %q}}}`, base, model, timeout)
	tc, err := tierconfig.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := tc.Embedder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func write(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func workspace(t *testing.T) string {
	root := t.TempDir()
	write(t, root, "go.mod", "module example.com/ws\n\ngo 1.21\n")
	write(t, root, "calc/calc.go", "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n// Mul returns the product of a and b.\nfunc Mul(a, b int) int {\n\treturn a * b\n}\n")
	write(t, root, "stock/reserve.go", "package stock\n\n// Reserve holds n items of sku for an order.\nfunc Reserve(sku string, n int) error {\n\treturn nil\n}\n")
	write(t, root, "README.md", "# ws\n\nA calculator and a stock keeper.\n")
	return root
}

// TestRealOllamaIndex builds the index with the server's vectors, updates
// it incrementally (only the changed file's chunks are embedded again),
// and queries it: the query is embedded too, so the search is hybrid.
func TestRealOllamaIndex(t *testing.T) {
	_, tap := realOllama(t)
	root := workspace(t)
	ix, err := l2.Open(filepath.Join(t.TempDir(), "ix.db"), root, l2.WithEmbedder(embedder(t, tap.URL, embedModel, "30s")), l2.WithBatch(3))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	st, err := ix.Update(ctx, nil)
	if err != nil || st.EmbedErr != nil {
		t.Fatalf("update: %+v, %v", st, err)
	}
	status, err := ix.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	embeds := tap.Calls("/api/embed")
	t.Logf("build: %d files, %d chunks, %d embedded in %d requests, %s", st.Files, st.Chunks, st.Embedded, len(embeds), st.Elapsed)
	if st.Embedded != st.Chunks || status.Vectors != st.Chunks || status.Model != "ollama:"+embedModel {
		t.Fatalf("%d of %d chunks embedded (status %+v)", st.Embedded, st.Chunks, status)
	}
	if want := (st.Chunks + 2) / 3; len(embeds) != want {
		t.Errorf("%d embed requests for %d chunks in batches of 3, want %d", len(embeds), st.Chunks, want)
	}
	for i, c := range embeds {
		if u := c.Usage(); c.Status != 200 || !u.Done || u.Input == 0 {
			t.Errorf("embed request %d: HTTP %d, %+v", i, c.Status, u)
		}
	}
	// One file changes: only its chunks are embedded again.
	write(t, root, "stock/reserve.go", "package stock\n\n// Reserve holds n items of sku for an order, or fails.\nfunc Reserve(sku string, n int) error {\n\tif n < 0 {\n\t\treturn nil\n\t}\n\treturn nil\n}\n")
	before := len(tap.Calls("/api/embed"))
	st2, err := ix.Update(ctx, nil)
	if err != nil || st2.EmbedErr != nil {
		t.Fatalf("update: %+v, %v", st2, err)
	}
	if st2.Changed != 1 || st2.Unchanged != st.Files-1 || st2.Embedded == 0 || st2.Embedded >= st.Chunks {
		t.Errorf("incremental update: %+v", st2)
	}
	if n := len(tap.Calls("/api/embed")) - before; n != (st2.Embedded+2)/3 {
		t.Errorf("%d embed requests for %d changed chunks", n, st2.Embedded)
	}
	// Nothing changes: nothing is embedded.
	before = len(tap.Calls("/api/embed"))
	if st3, err := ix.Update(ctx, nil); err != nil || st3.Embedded != 0 || len(tap.Calls("/api/embed")) != before {
		t.Errorf("a no-change update embedded %d chunks: %v", st3.Embedded, err)
	}
	hits, err := ix.Search(ctx, "reserve items for an order", 5)
	if err != nil || len(hits) == 0 {
		t.Fatalf("search: %v, %d hits", err, len(hits))
	}
	vector := false
	for _, h := range hits {
		if strings.Contains(h.Why, "lexical only") {
			t.Errorf("hit %s: %s, with the model up", h.Path, h.Why)
		}
		vector = vector || h.Vector > 0
	}
	if !vector {
		t.Errorf("no hit has a vector rank: %+v", hits)
	}
	// The tier itself: a lookup it is sure of closes; the rest is handed on.
	res, err := (&l2.Stage{Index: ix}).TryResolve(ctx, &tiers.Request{Session: "s", Prompt: "where is Reserve defined", Root: root})
	if err != nil || res == nil || !strings.Contains(res.Answer, "stock/reserve.go") {
		t.Errorf("the lookup: %+v, %v", res, err)
	}
}

// TestRealOllamaIndexFailures: whatever the embedding server does wrong,
// the index stays usable lexically and says why, an update leaves the
// unembedded chunks for the next one, and nothing waits past the
// configured timeout.
func TestRealOllamaIndexFailures(t *testing.T) {
	s, tap := realOllama(t)
	silent := ollamatest.Silent(t)
	down := ollamatest.Down(t)
	for _, tc := range []struct {
		name, base, model string
		kill              bool
		want              string
	}{
		{name: "server down", base: down, model: embedModel, want: "connection refused"},
		{name: "model missing", model: "no-such-embedder", want: "not found"},
		{name: "model without embeddings", model: chatModel, want: "not an embedding model (its capabilities: completion)"},
		{name: "accepts and never answers", base: silent, model: embedModel, want: "Timeout exceeded"},
		// Last: it kills the server once the index is built. (Straight to
		// the server: the tap would answer 502 for it.)
		{name: "server killed after the build", base: s.URL, model: embedModel, kill: true, want: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "" {
				base = tap.URL
			}
			const timeout = 3 * time.Second
			root := workspace(t)
			emb := embedder(t, base, tc.model, timeout.String())
			ix, err := l2.Open(filepath.Join(t.TempDir(), "ix.db"), root, l2.WithEmbedder(emb), l2.WithQueryTimeout(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			ctx := context.Background()
			start := time.Now()
			st, err := ix.Update(ctx, nil)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("the update failed instead of going on lexically: %v", err)
			}
			if tc.kill {
				if st.EmbedErr != nil || st.Embedded != st.Chunks {
					t.Fatalf("the build: %+v", st)
				}
				s.Kill()
			} else {
				t.Logf("update: %v after %s", st.EmbedErr, took.Round(time.Millisecond))
				if st.EmbedErr == nil || !strings.Contains(st.EmbedErr.Error(), tc.want) || st.Embedded != 0 || st.Chunks == 0 {
					t.Fatalf("update: %+v; want the chunks indexed, none embedded, and an error containing %q", st, tc.want)
				}
				if took > timeout+3*time.Second {
					t.Errorf("the update took %s, past the %s timeout", took, timeout)
				}
			}
			start = time.Now()
			hits, err := ix.Search(ctx, "reserve items for an order", 5)
			took = time.Since(start)
			if err != nil || len(hits) == 0 {
				t.Fatalf("the search failed instead of falling back: %v, %d hits", err, len(hits))
			}
			t.Logf("search: %s after %s", hits[0].Why, took.Round(time.Millisecond))
			for _, h := range hits {
				if !strings.Contains(h.Why, "lexical only: embedding failed") || !strings.Contains(h.Why, tc.want) || h.Vector != 0 {
					t.Errorf("hit %s: %q, vector rank %d; want a lexical fallback that names %q", h.Path, h.Why, h.Vector, tc.want)
				}
			}
			if took > timeout+3*time.Second {
				t.Errorf("the search took %s, past the %s timeout", took, timeout)
			}
			res, err := (&l2.Stage{Index: ix}).TryResolve(ctx, &tiers.Request{Session: "s", Prompt: "find the code that reserves items for an order", Root: root})
			if err != nil || res != nil {
				t.Errorf("a free-text search closed without the model: %+v, %v", res, err)
			}
		})
	}
}
