package l3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ollama/ollama/api"
	openai "github.com/sashabaranov/go-openai"

	"github.com/joulehook/joule/energy"
)

// Message is one turn of a chat.
type Message struct {
	Role    string // "system", "user" or "assistant"
	Content string
}

// Reply is a model's whole answer to one chat call.
type Reply struct {
	Text  string
	Model string // the model name the server reported
	Usage energy.Usage
	// Reported is false when the server sent no usage: the tokens are then
	// unknown, not zero.
	Reported bool
}

// Model is a chat model. The tier calls it once, and once more to repair;
// anything that answers chats can stand in (a scripted model in a
// benchmark, say).
type Model interface {
	Chat(ctx context.Context, msgs []Message) (*Reply, error)
	Name() string
}

// sessionKey carries the cascade session to the HTTP transport, which names
// it to joule proxy so the call's receipt lands in the session's chain.
type sessionKey struct{}

// WithSession returns ctx naming session for the model calls made under it.
func WithSession(ctx context.Context, session string) context.Context {
	return context.WithValue(ctx, sessionKey{}, session)
}

type sessionTransport struct{ base http.RoundTripper }

func (t sessionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s, _ := r.Context().Value(sessionKey{}).(string); s != "" {
		r = r.Clone(r.Context())
		r.Header.Set("X-Joule-Session", s)
	}
	return t.base.RoundTrip(r)
}

func withSession(hc *http.Client) *http.Client {
	if hc == nil {
		hc = &http.Client{}
	}
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = sessionTransport{base}
	return &c
}

func checkBase(baseURL string) (*url.URL, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("l3: base URL %q is not an http(s) URL", baseURL)
	}
	return u, nil
}

// Ollama is a model served by Ollama's /api/chat, streamed as NDJSON.
type Ollama struct {
	client    *api.Client
	base      string
	model     string
	Options   map[string]any // Ollama model options (temperature, num_ctx, …); nil uses temperature 0
	MaxOutput int            // num_predict: the most tokens a reply may have; 0 leaves the server's default
}

// NewOllama returns the Ollama model at baseURL (e.g. http://127.0.0.1:11434).
// hc nil uses a default client; timeouts come from the call's context.
func NewOllama(baseURL, model string, hc *http.Client) (*Ollama, error) {
	u, err := checkBase(baseURL)
	if err != nil {
		return nil, err
	}
	if model == "" {
		return nil, errors.New("l3: no Ollama model named")
	}
	return &Ollama{client: api.NewClient(u, withSession(hc)), base: u.String(), model: model}, nil
}

// Name implements Model.
func (o *Ollama) Name() string { return o.model }

// Chat implements Model.
func (o *Ollama) Chat(ctx context.Context, msgs []Message) (*Reply, error) {
	// A prompt longer than the model's context is refused, not cut: by
	// default Ollama drops its start (the instructions, the files) and
	// answers what is left, and a reply past the context is continued over
	// a shifted window that has lost the prompt. The tier wants an error
	// it can report instead of an edit made without the request.
	no := false
	req := &api.ChatRequest{Model: o.model, Options: o.Options, Truncate: &no, Shift: &no}
	if req.Options == nil {
		req.Options = map[string]any{"temperature": 0}
	}
	if o.MaxOutput > 0 {
		opts := map[string]any{"num_predict": o.MaxOutput}
		for k, v := range req.Options {
			opts[k] = v
		}
		req.Options = opts
	}
	for _, m := range msgs {
		req.Messages = append(req.Messages, api.Message{Role: m.Role, Content: m.Content})
	}
	var (
		sb   strings.Builder
		done bool
		r    = &Reply{Model: o.model}
	)
	err := o.client.Chat(ctx, req, func(c api.ChatResponse) error {
		sb.WriteString(c.Message.Content)
		if c.Model != "" {
			r.Model = c.Model
		}
		if c.Done {
			done = true
			if c.PromptEvalCount > 0 || c.EvalCount > 0 {
				r.Usage = energy.Usage{Input: uint64(c.PromptEvalCount), Output: uint64(c.EvalCount)}
				r.Reported = true
			}
		}
		return nil
	})
	if err != nil {
		if strings.Contains(err.Error(), "exceeds the context length") {
			return nil, fmt.Errorf("l3: Ollama at %s: the prompt does not fit the model's context (%v): raise the model's num_ctx, or lower tiers.l3.max_context", o.base, err)
		}
		return nil, callError(ctx, "Ollama", o.base, err)
	}
	if !done {
		return nil, fmt.Errorf("l3: Ollama at %s: the stream ended before its final object", o.base)
	}
	r.Text = sb.String()
	return r, nil
}

// OpenAI is a model served by an OpenAI-compatible chat completions API
// (vLLM, llama.cpp server, LM Studio), streamed as server-sent events.
type OpenAI struct {
	client    *openai.Client
	base      string
	model     string
	MaxOutput int // max_tokens: the most tokens a reply may have; 0 leaves the server's default
}

// NewOpenAI returns the model at baseURL, which includes the API prefix
// (e.g. http://127.0.0.1:8000/v1). key may be empty for a local server.
func NewOpenAI(baseURL, key, model string, hc *http.Client) (*OpenAI, error) {
	u, err := checkBase(baseURL)
	if err != nil {
		return nil, err
	}
	if model == "" {
		return nil, errors.New("l3: no OpenAI-compatible model named")
	}
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = strings.TrimSuffix(u.String(), "/")
	cfg.HTTPClient = withSession(hc)
	tr := cfg.HTTPClient.(*http.Client)
	tr.Transport = greedyTransport{tr.Transport}
	return &OpenAI{client: openai.NewClientWithConfig(cfg), base: cfg.BaseURL, model: model}, nil
}

// Name implements Model.
func (o *OpenAI) Name() string { return o.model }

// Chat implements Model.
func (o *OpenAI) Chat(ctx context.Context, msgs []Message) (*Reply, error) {
	req := openai.ChatCompletionRequest{Model: o.model, Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Temperature: 0, MaxTokens: o.MaxOutput}
	for _, m := range msgs {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	st, err := o.client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return nil, callError(ctx, "the OpenAI-compatible server", o.base, err)
	}
	defer st.Close()
	var (
		sb     strings.Builder
		r      = &Reply{Model: o.model}
		finish bool
	)
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, callError(ctx, "the OpenAI-compatible server", o.base, err)
		}
		if c.Model != "" {
			r.Model = c.Model
		}
		for _, ch := range c.Choices {
			sb.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = true
			}
		}
		if u := c.Usage; u != nil {
			cached := 0
			if u.PromptTokensDetails != nil {
				cached = min(u.PromptTokensDetails.CachedTokens, u.PromptTokens)
			}
			r.Usage = energy.Usage{Input: uint64(u.PromptTokens - cached), CachedInput: uint64(cached), Output: uint64(u.CompletionTokens)}
			r.Reported = true
		}
	}
	if !finish {
		return nil, fmt.Errorf("l3: the OpenAI-compatible server at %s: the stream ended without a finish reason", o.base)
	}
	r.Text = sb.String()
	return r, nil
}

// greedyTransport sends "temperature": 0 in a chat completions request
// that has no temperature. go-openai leaves a zero temperature out of the
// body (omitempty), and the servers L3 talks to then sample at their
// default of 1.0 (vLLM, and Ollama's /v1, which overrides the model's own
// setting with it): L3's edits would be drawn at random instead of the
// model's most likely answer. Found against a real Ollama.
type greedyTransport struct{ base http.RoundTripper }

func (t greedyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") || r.Body == nil {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) == nil {
		if _, set := probe["temperature"]; !set {
			member := `"temperature":0,`
			if len(probe) == 0 {
				member = `"temperature":0`
			}
			if i := bytes.IndexByte(body, '{'); i >= 0 {
				body = append(append(append([]byte(nil), body[:i+1]...), member...), body[i+1:]...)
			}
		}
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return t.base.RoundTrip(r)
}

// callError names the server and, when the call ran out of time, says so
// rather than whatever the transport reported.
func callError(ctx context.Context, who, base string, err error) error {
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("l3: %s at %s did not answer in time: %w", who, base, context.DeadlineExceeded)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("l3: %s at %s: %v", who, base, err)
}
