package l2

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestEmbeddersSpeakTheRealAPIs(t *testing.T) {
	srv := newFakeEmbedServer(t)
	srv.auth = "sk-test"
	texts := []string{"reserve stock", "compute the invoice total", "check bearer token"}
	for _, tt := range []struct {
		name  string
		e     Embedder
		model string
	}{
		{"ollama", NewOllamaEmbedder(srv.URL, "nomic-embed-text", nil), "ollama:nomic-embed-text"},
		{"openai", NewOpenAIEmbedder(srv.URL+"/v1", "sk-test", "nomic-embed-text", srv.Client()), "openai:nomic-embed-text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.e.Model() != tt.model {
				t.Errorf("Model() = %q, want %q", tt.e.Model(), tt.model)
			}
			vs, err := tt.e.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range texts {
				if !reflect.DeepEqual(vs[i], bowVector(s)) {
					t.Errorf("vector %d is not the server's vector for %q (order lost?)", i, s)
				}
			}
		})
	}
}

func TestEmbedderErrors(t *testing.T) {
	srv := newFakeEmbedServer(t)
	srv.auth = "sk-right"
	short := &http.Client{Timeout: 200 * time.Millisecond}
	for _, tt := range []struct {
		name  string
		setup func()
		e     Embedder
		want  string
	}{
		{"ollama unknown model", nil, NewOllamaEmbedder(srv.URL, "no-such-model", nil), "no-such-model"},
		{"ollama chat model", nil, NewOllamaEmbedder(srv.URL, "qwen2.5-coder:7b", nil), "not an embedding model (its capabilities: completion, tools, insert)"},
		{"ollama bad URL", nil, NewOllamaEmbedder("not a url", "m", nil), "not an absolute URL"},
		{"ollama server error", func() { srv.set(true, 0) }, NewOllamaEmbedder(srv.URL, "nomic-embed-text", nil), "crashed"},
		{"ollama timeout", func() { srv.set(false, 2*time.Second) }, NewOllamaEmbedder(srv.URL, "nomic-embed-text", short), "ollama embed"},
		{"openai wrong key", nil, NewOpenAIEmbedder(srv.URL+"/v1", "sk-wrong", "nomic-embed-text", nil), "invalid api key"},
		{"openai timeout", func() { srv.set(false, 2*time.Second) }, NewOpenAIEmbedder(srv.URL+"/v1", "sk-right", "nomic-embed-text", short), "openai embeddings"},
		{"openai refused", nil, NewOpenAIEmbedder("http://127.0.0.1:1/v1", "sk-right", "m", short), "openai embeddings"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv.set(false, 0)
			if tt.setup != nil {
				tt.setup()
			}
			_, err := tt.e.Embed(context.Background(), []string{"x"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sk-wrong") || strings.Contains(err.Error(), "sk-right") {
				t.Fatalf("the API key leaked into the error: %v", err)
			}
		})
	}
	srv.set(false, 0)
}

func TestCheckVectors(t *testing.T) {
	nan := float32(0)
	nan = nan / nan
	for _, tt := range []struct {
		name string
		vs   [][]float32
	}{
		{"too few", [][]float32{{1}}},
		{"empty vector", [][]float32{{1}, {}}},
		{"mixed dimensions", [][]float32{{1, 2}, {1}}},
		{"not finite", [][]float32{{1}, {nan}}},
	} {
		if _, err := checkVectors([]string{"a", "b"}, tt.vs); !errors.Is(err, errBadVectors) {
			t.Errorf("%s: err = %v, want errBadVectors", tt.name, err)
		}
	}
}

// TestSearchFallsBackWhenTheModelFails: a model that goes away leaves
// search lexical, and every hit says so.
func TestSearchFallsBackWhenTheModelFails(t *testing.T) {
	srv := newFakeEmbedServer(t)
	ix := openTest(t, corpus, WithEmbedder(NewOllamaEmbedder(srv.URL, "nomic-embed-text", nil)), WithQueryTimeout(300*time.Millisecond))
	st, err := ix.Update(context.Background(), nil)
	if err != nil || st.EmbedErr != nil || st.Embedded != st.Chunks {
		t.Fatalf("update: %+v, %v", st, err)
	}
	hits, err := ix.Search(context.Background(), "reserve stock for an order", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || !strings.Contains(hits[0].Why, "vector") || strings.Contains(hits[0].Why, "lexical only") {
		t.Fatalf("with the model up, hits should be hybrid: %+v", hits)
	}
	for _, mode := range []struct {
		name        string
		fail        bool
		delay       time.Duration
		wantInNotes string
	}{
		{"error", true, 0, "lexical only: embedding failed"},
		{"timeout", false, 2 * time.Second, "lexical only: embedding failed"},
	} {
		srv.set(mode.fail, mode.delay)
		hits, err := ix.Search(context.Background(), "reserve stock for an order", 5)
		if err != nil {
			t.Fatalf("%s: search failed instead of falling back: %v", mode.name, err)
		}
		if len(hits) == 0 {
			t.Fatalf("%s: no hits", mode.name)
		}
		for _, h := range hits {
			if !strings.Contains(h.Why, mode.wantInNotes) || h.Vector != 0 {
				t.Errorf("%s: hit %s: Why %q, vector rank %d", mode.name, h.Path, h.Why, h.Vector)
			}
		}
	}
	srv.set(false, 0)
}

func TestUpdateKeepsGoingWhenTheModelFails(t *testing.T) {
	srv := newFakeEmbedServer(t)
	srv.set(true, 0)
	ix := openTest(t, corpus, WithEmbedder(NewOllamaEmbedder(srv.URL, "nomic-embed-text", nil)))
	st, err := ix.Update(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.EmbedErr == nil || st.Embedded != 0 || st.Chunks == 0 {
		t.Fatalf("stats %+v: want chunks indexed, none embedded, the error reported", st)
	}
	// The model comes back: the next update embeds what was left.
	srv.set(false, 0)
	st, err = ix.Update(context.Background(), nil)
	if err != nil || st.EmbedErr != nil {
		t.Fatal(err, st.EmbedErr)
	}
	if st.Embedded != st.Chunks || st.Unchanged != st.Files {
		t.Fatalf("stats %+v: want every chunk embedded now, no file re-read", st)
	}
}

// TestNearestMatchesASort checks the heap-and-stripes scan against a full
// sort of every score.
func TestNearestMatchesASort(t *testing.T) {
	const n, dim = 9000, 16
	vc := &vectorCache{dim: dim, ids: make([]int64, n), mat: make([]float32, n*dim)}
	seed := uint32(7)
	for i := range vc.ids {
		vc.ids[i] = int64(1000 + i)
		v := make([]float32, dim)
		for j := range v {
			seed = seed*1664525 + 1013904223
			v[j] = float32(seed>>8)/float32(1<<24) - 0.5
		}
		copy(vc.mat[i*dim:], normalize(v))
	}
	q := normalize(vc.mat[5*dim : 6*dim])
	type pair struct {
		id int64
		s  float32
	}
	var all []pair
	for i := range vc.ids {
		all = append(all, pair{vc.ids[i], dot(vc.mat[i*dim:(i+1)*dim], q)})
	}
	sort.Slice(all, func(a, b int) bool { return all[a].s > all[b].s })
	ids, sims := vc.nearest(q, 50)
	if len(ids) != 50 || ids[0] != 1005 {
		t.Fatalf("got %d results, first %v", len(ids), ids[:1])
	}
	for i := range ids {
		if sims[i] != all[i].s {
			t.Fatalf("rank %d: score %v, want %v", i, sims[i], all[i].s)
		}
	}
	if ids, _ := vc.nearest(q[:3], 5); ids != nil {
		t.Fatal("a query of the wrong dimension was ranked")
	}
}
