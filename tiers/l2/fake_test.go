package l2

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testDim is the dimension of the fake servers' vectors.
const testDim = 256

// bowVector is the fake servers' deterministic embedding: feature-hashed
// term counts (stopwords out). It is a crude but real similarity, so that
// hybrid retrieval can be tested end to end without a model.
func bowVector(text string) []float32 {
	v := make([]float32, testDim)
	for _, t := range queryTerms(text) {
		h := fnv.New32a()
		h.Write([]byte(t))
		s := h.Sum32()
		sign := float32(1)
		if s&(1<<31) != 0 {
			sign = -1
		}
		v[s%testDim] += sign
	}
	v[0] += 0.01 // never the zero vector
	return v
}

// fakeEmbedServer speaks Ollama's /api/embed and OpenAI's /v1/embeddings
// on 127.0.0.1, counting the texts it embeds; fail makes it answer 500,
// delay makes it slow.
type fakeEmbedServer struct {
	*httptest.Server
	texts atomic.Int64
	calls atomic.Int64
	mu    sync.Mutex
	fail  bool
	delay time.Duration
	model string // the model it serves; others get 404
	auth  string // the bearer token the OpenAI endpoint wants, if any
}

func newFakeEmbedServer(t *testing.T) *fakeEmbedServer {
	t.Helper()
	f := &fakeEmbedServer{model: "nomic-embed-text"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/embed", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
			Input any    `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
			return
		}
		texts, ok := inputs(req.Input)
		if !f.gate(w, r, req.Model, ok, `{"error":"model %q not found, try pulling it first"}`) {
			return
		}
		f.texts.Add(int64(len(texts)))
		vs := make([][]float32, len(texts))
		for i, s := range texts {
			vs[i] = bowVector(s)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vs, "prompt_eval_count": len(texts)})
	})
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch req.Model {
		case f.model:
			w.Write([]byte(`{"capabilities":["embedding"]}`))
		case "qwen2.5-coder:7b":
			w.Write([]byte(`{"capabilities":["completion","tools","insert"]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(sprintf(`{"error":"model '%s' not found"}`, req.Model)))
		}
	})
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		if f.auth != "" && r.Header.Get("Authorization") != "Bearer "+f.auth {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"invalid api key","type":"invalid_request_error"}}`))
			return
		}
		var req struct {
			Model string `json:"model"`
			Input any    `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		texts, ok := inputs(req.Input)
		if !f.gate(w, r, req.Model, ok, `{"error":{"message":"model %q does not exist","type":"invalid_request_error"}}`) {
			return
		}
		f.texts.Add(int64(len(texts)))
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]datum, len(texts))
		for i, s := range texts {
			// Reversed on purpose: clients must order by index.
			j := len(texts) - 1 - i
			data[j] = datum{Object: "embedding", Index: i, Embedding: bowVector(s)}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model, "usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeEmbedServer) gate(w http.ResponseWriter, r *http.Request, model string, ok bool, notFound string) bool {
	f.mu.Lock()
	fail, delay := f.fail, f.delay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return false
		}
	}
	if fail {
		http.Error(w, `{"error":"model runner crashed"}`, http.StatusInternalServerError)
		return false
	}
	if !ok {
		http.Error(w, `{"error":"input must be a string or a list of strings"}`, http.StatusBadRequest)
		return false
	}
	if model != f.model {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(sprintf(notFound, model)))
		return false
	}
	f.calls.Add(1)
	return true
}

func (f *fakeEmbedServer) set(fail bool, delay time.Duration) {
	f.mu.Lock()
	f.fail, f.delay = fail, delay
	f.mu.Unlock()
}

func inputs(in any) ([]string, bool) {
	switch v := in.(type) {
	case string:
		return []string{v}, true
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
