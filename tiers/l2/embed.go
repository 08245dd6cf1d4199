package l2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/ollama/ollama/api"
	openai "github.com/sashabaranov/go-openai"
)

// Embedder turns texts into vectors with one model. Embed returns one
// vector per text, in order, all of one dimension.
type Embedder interface {
	Model() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// NewOllamaEmbedder embeds through Ollama's /api/embed at baseURL (e.g.
// http://127.0.0.1:11434) with model (e.g. "nomic-embed-text"). A nil hc
// uses http.DefaultClient.
func NewOllamaEmbedder(baseURL, model string, hc *http.Client) Embedder {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &ollamaEmbedder{base: baseURL, model: model, hc: hc}
}

type ollamaEmbedder struct {
	base, model string
	hc          *http.Client
	embeds      atomic.Bool // the server said the model is an embedding model
}

func (o *ollamaEmbedder) Model() string { return "ollama:" + o.model }

func (o *ollamaEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	u, err := url.Parse(o.base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("l2: ollama base URL %q is not an absolute URL", o.base)
	}
	c := api.NewClient(u, o.hc)
	if !o.embeds.Load() {
		if err := o.checkModel(ctx, c); err != nil {
			return nil, err
		}
	}
	truncate := true
	resp, err := c.Embed(ctx, &api.EmbedRequest{Model: o.model, Input: texts, Truncate: &truncate})
	if err != nil {
		return nil, fmt.Errorf("l2: ollama embed (%s): %w", o.model, err)
	}
	return checkVectors(texts, resp.Embeddings)
}

// checkModel asks the server, once, whether the model is an embedding
// model. Ollama embeds with a chat model too, without complaint: the
// vectors are then its last hidden state, not an embedding, and an index
// built on them ranks by noise (found against a real Ollama). A server too
// old to list capabilities is taken at its word.
func (o *ollamaEmbedder) checkModel(ctx context.Context, c *api.Client) error {
	show, err := c.Show(ctx, &api.ShowRequest{Model: o.model})
	if err != nil {
		return fmt.Errorf("l2: ollama embed (%s): %w", o.model, err)
	}
	var caps []string
	for _, c := range show.Capabilities {
		caps = append(caps, string(c))
	}
	if len(caps) > 0 && !slices.Contains(caps, "embedding") {
		return fmt.Errorf("l2: ollama embed (%s): not an embedding model (its capabilities: %s); name one such as nomic-embed-text", o.model, strings.Join(caps, ", "))
	}
	o.embeds.Store(true)
	return nil
}

// NewOpenAIEmbedder embeds through an OpenAI-compatible /v1/embeddings
// endpoint; baseURL includes the /v1 (e.g. http://127.0.0.1:8000/v1). The
// API key is sent as a bearer token and never logged. A nil hc uses
// http.DefaultClient.
func NewOpenAIEmbedder(baseURL, apiKey, model string, hc *http.Client) Embedder {
	cfg := openai.DefaultConfig(apiKey)
	cfg.BaseURL = strings.TrimRight(baseURL, "/")
	if hc != nil {
		cfg.HTTPClient = hc
	}
	return &openaiEmbedder{c: openai.NewClientWithConfig(cfg), model: model}
}

type openaiEmbedder struct {
	c     *openai.Client
	model string
}

func (o *openaiEmbedder) Model() string { return "openai:" + o.model }

func (o *openaiEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := o.c.CreateEmbeddings(ctx, openai.EmbeddingRequest{Input: texts, Model: openai.EmbeddingModel(o.model)})
	if err != nil {
		return nil, fmt.Errorf("l2: openai embeddings (%s): %w", o.model, err)
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("l2: openai embeddings (%s): bad or repeated index %d", o.model, d.Index)
		}
		out[d.Index] = d.Embedding
	}
	return checkVectors(texts, out)
}

var errBadVectors = errors.New("l2: embedding model returned unusable vectors")

// checkVectors fails closed on an answer that does not fit the question:
// a missing vector, mixed dimensions, or non-finite values.
func checkVectors(texts []string, vs [][]float32) ([][]float32, error) {
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", errBadVectors, len(vs), len(texts))
	}
	for i, v := range vs {
		if len(v) == 0 || len(v) != len(vs[0]) {
			return nil, fmt.Errorf("%w: vector %d has dimension %d, want %d", errBadVectors, i, len(v), len(vs[0]))
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: vector %d is not finite", errBadVectors, i)
			}
		}
	}
	return vs, nil
}
