package ollamatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Tap is a recording reverse proxy in front of a server: a test points
// joule at Tap.URL and reads, from what the server itself sent, the token
// counts it reported.
type Tap struct {
	URL string

	mu    sync.Mutex
	calls []*Call
}

// Call is one request the tap forwarded and the response it relayed.
type Call struct {
	Method, Path string
	Status       int
	Body         []byte // the response body as the server sent it
	mu           sync.Mutex
	done         bool
}

// NewTap starts a tap in front of upstream until the test ends.
func NewTap(t testing.TB, upstream string) *Tap {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	tap := &Tap{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = u.Host },
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			c := &Call{Method: resp.Request.Method, Path: resp.Request.URL.Path, Status: resp.StatusCode}
			tap.mu.Lock()
			tap.calls = append(tap.calls, c)
			tap.mu.Unlock()
			resp.Body = &teeBody{r: resp.Body, c: c}
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	tap.URL = srv.URL
	return tap
}

type teeBody struct {
	r io.ReadCloser
	c *Call
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.c.mu.Lock()
	b.c.Body = append(b.c.Body, p[:n]...)
	if err == io.EOF {
		b.c.done = true
	}
	b.c.mu.Unlock()
	return n, err
}

func (b *teeBody) Close() error { return b.r.Close() }

// Calls are the calls forwarded so far to paths starting with prefix.
func (t *Tap) Calls(prefix string) []*Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Call
	for _, c := range t.calls {
		if strings.HasPrefix(c.Path, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Reported is the usage a server reported in a response: Ollama's
// prompt_eval_count and eval_count (final object of a stream, or the one
// object), or the OpenAI-compatible usage (the usage chunk of a stream, or
// the body's).
type Reported struct {
	Input, Output uint64
	OK            bool // the response carried usage
	Done          bool // an Ollama stream's final object, or an OpenAI finish reason, arrived
	Text          string
	Model         string
	Error         string
}

// Usage reads what the call's response reported.
func (c *Call) Usage() Reported {
	c.mu.Lock()
	body := append([]byte(nil), c.Body...)
	c.mu.Unlock()
	return ParseUsage(body)
}

// ParseUsage reads usage from an Ollama (NDJSON or JSON) or OpenAI (SSE or
// JSON) response body.
func ParseUsage(body []byte) Reported {
	var r Reported
	var sb strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			line = bytes.TrimSpace(d)
		}
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var o struct {
			Model           string  `json:"model"`
			Done            bool    `json:"done"`
			PromptEvalCount *uint64 `json:"prompt_eval_count"`
			EvalCount       *uint64 `json:"eval_count"`
			Response        string  `json:"response"`
			Message         *struct {
				Content string `json:"content"`
			} `json:"message"`
			Error   any `json:"error"`
			Choices []struct {
				Delta *struct {
					Content string `json:"content"`
				} `json:"delta"`
				Message *struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     uint64 `json:"prompt_tokens"`
				CompletionTokens uint64 `json:"completion_tokens"`
			} `json:"usage"`
			Embeddings json.RawMessage `json:"embeddings"`
			Data       json.RawMessage `json:"data"` // an OpenAI embeddings answer
		}
		if json.Unmarshal(line, &o) != nil {
			continue
		}
		if o.Model != "" {
			r.Model = o.Model
		}
		switch e := o.Error.(type) {
		case string:
			r.Error = e
		case map[string]any:
			r.Error, _ = e["message"].(string)
		}
		sb.WriteString(o.Response)
		if o.Message != nil {
			sb.WriteString(o.Message.Content)
		}
		for _, ch := range o.Choices {
			if ch.Delta != nil {
				sb.WriteString(ch.Delta.Content)
			}
			if ch.Message != nil {
				sb.WriteString(ch.Message.Content)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				r.Done = true
			}
		}
		if o.Done || o.Embeddings != nil {
			r.Done = true
			if o.PromptEvalCount != nil {
				r.Input, r.OK = *o.PromptEvalCount, true
			}
			if o.EvalCount != nil {
				r.Output, r.OK = *o.EvalCount, true
			}
		}
		if o.Usage != nil {
			r.Input, r.Output, r.OK = o.Usage.PromptTokens, o.Usage.CompletionTokens, true
			r.Done = r.Done || o.Data != nil
		}
	}
	r.Text = sb.String()
	return r
}

// Silent starts a TCP server on 127.0.0.1 that accepts every connection
// and never answers (nor closes it), until the test ends: a model server
// that hangs. It returns its http:// URL.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c) // read the request, answer nothing
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String()
}

// Down is an http:// URL on 127.0.0.1 where nothing listens.
func Down(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
