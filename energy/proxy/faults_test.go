package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulehook/joule/core/receipts"
)

// TestBadRequests: bad input is refused in the provider's own error shape,
// before anything reaches the upstream or the ledger.
func TestBadRequests(t *testing.T) {
	r := newRig(t, big, func(c *Config) { c.MaxBody = 1 << 10 })
	tests := []struct {
		name, method, path, body string
		status                   int
		shape                    string
	}{
		{"malformed anthropic", "POST", "/v1/messages", `{"model":`, 400, `"invalid_request_error"`},
		{"malformed openai", "POST", "/v1/chat/completions", `[1,2]`, 400, `"invalid_request_error"`},
		{"malformed ollama", "POST", "/api/chat", `not json`, 400, `{"error":"joule proxy: the request body is not a JSON object`},
		{"no model", "POST", "/v1/messages", `{"max_tokens":10}`, 400, `names no \"model\"`},
		{"model not a string", "POST", "/v1/responses", `{"model":7}`, 400, `\"model\" is not a string`},
		{"model an object", "POST", "/v1/messages", `{"model":{"name":"m"},"max_tokens":10}`, 400, `\"model\" is not a string`},
		{"model null", "POST", "/v1/messages", `{"model":null,"max_tokens":10}`, 400, `names no \"model\"`},
		{"model empty", "POST", "/v1/messages", `{"model":"","max_tokens":10}`, 400, `names no \"model\"`},
		{"unknown path", "POST", "/v2/whatever", `{}`, 404, `is not an API joule meters`},
		{"unknown ollama path", "POST", "/api/pull", `{}`, 404, `{"error":"joule proxy: POST /api/pull is not an API joule meters`},
		{"wrong method", "GET", "/v1/messages", ``, 405, `takes POST`},
		{"oversized", "POST", "/v1/messages", `{"model":"claude-sonnet-4-5","pad":"` + strings.Repeat("x", 2<<10) + `"}`, 413, `"request_too_large"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := r.do(tt.method, tt.path, tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(string(got), tt.shape) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("got %d %s, want %d with %s", resp.StatusCode, got, tt.status, tt.shape)
			}
		})
	}
	if n := r.up.calls.Load(); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	if g := r.grant(); g.SpentUJ != 0 || g.ReservedUJ != 0 {
		t.Errorf("grant %+v", g)
	}
}

// TestReadBody: a body is read whole whatever length it declared, and one
// shorter than declared is an error, not a shorter body.
func TestReadBody(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		declared int64
		want     string
		err      bool
	}{
		{"as declared", `{"a":1}`, 7, `{"a":1}`, false},
		{"unknown length", `{"a":1}`, -1, `{"a":1}`, false},
		{"empty", ``, 0, ``, false},
		{"shorter than declared", `{"a"`, 7, ``, true},
		{"longer than declared", `{"a":1}  `, 7, `{"a":1}  `, false},
		{"declared over the limit", `{"a":1}`, 1 << 20, `{"a":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readBody(&splitReader{b: []byte(tt.body), at: 3}, tt.declared, 1<<10)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want one: %v", err, tt.err)
			}
			if !tt.err && string(got) != tt.want {
				t.Errorf("read %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNoGrant(t *testing.T) {
	r := newRig(t, big, func(c *Config) {
		c.Grants = func(context.Context, string) ([]string, error) {
			return nil, fmt.Errorf("no active grant")
		}
	})
	resp, got := r.do("POST", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10}`)
	if resp.StatusCode != 403 || !strings.Contains(string(got), "permission_error") || !strings.Contains(string(got), "joule init") {
		t.Errorf("got %d %s", resp.StatusCode, got)
	}
}

// TestUpstreamFaults: whatever the upstream does, the client gets an answer
// in its provider's shape, a receipt is sealed flagged incomplete, and the
// reservation is settled.
func TestUpstreamFaults(t *testing.T) {
	const msgStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_cut\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1200,\"cache_read_input_tokens\":5000,\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"0123456789abcdef0123456789abcdef\"}}\n\n"
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		status   int
		shape    string
		note     string
		input    uint64
		minOut   uint64
		spentPos bool
	}{
		{name: "5xx passes through", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		}, status: 529, shape: `overloaded_error`, note: "upstream answered HTTP 529 overloaded_error: Overloaded"},
		{name: "timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, status: 504, shape: `"api_error"`, note: "the upstream did not answer in time", input: 15, spentPos: true},
		{name: "reset mid-stream", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			io.WriteString(w, msgStart)
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close() // RST
			}
		}, status: 200, note: "the upstream stream broke", input: 1200, minOut: 8, spentPos: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, big, func(c *Config) { c.HeaderTimeout = 300 * time.Millisecond })
			r.up.handler = tt.handler
			req, _ := http.NewRequest("POST", r.srv.URL+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true}`))
			req.Header.Set("X-Joule-Session", "fault")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body) // a cut stream may end in an error
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(got), tt.shape) {
				t.Errorf("got %d %s", resp.StatusCode, got)
			}
			recs := r.receipts("fault")
			if len(recs) != 1 {
				t.Fatalf("%d receipts", len(recs))
			}
			e := recs[0]
			if e.Status != receipts.StatusIncomplete || !strings.Contains(e.Note, tt.note) || e.InputTokens != tt.input || e.OutputTokens < tt.minOut {
				t.Errorf("receipt %s in=%d out=%d note %q", e.Status, e.InputTokens, e.OutputTokens, e.Note)
			}
			g := r.grant()
			if g.ReservedUJ != 0 || g.SpentUJ != e.EstimatedUJ || (g.SpentUJ > 0) != tt.spentPos {
				t.Errorf("grant spent %d reserved %d; receipt %d µJ", g.SpentUJ, g.ReservedUJ, e.EstimatedUJ)
			}
		})
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	r := newRig(t, big)
	u := *r.proxy.up[OpenAI]
	u.Host = addr
	r.proxy.up[OpenAI] = &u
	resp, got := r.do("POST", "/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`, "X-Joule-Session", "down")
	if resp.StatusCode != 502 || !strings.Contains(string(got), "could not be reached") || !strings.Contains(string(got), `"server_error"`) {
		t.Errorf("got %d %s", resp.StatusCode, got)
	}
	recs := r.receipts("down")
	if len(recs) != 1 || recs[0].Status != receipts.StatusIncomplete || recs[0].EstimatedUJ != 0 {
		t.Errorf("receipts %+v", recs)
	}
}

// TestClientGone: a client that hangs up mid-stream still leaves a receipt
// with what the upstream had reported.
func TestClientGone(t *testing.T) {
	r := newRig(t, big)
	hold := make(chan struct{})
	r.up.handler = func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_gone\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":77,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		for i := 0; ; i++ {
			select {
			case <-req.Context().Done():
				close(hold)
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"abcd\"}}\n\n"); err != nil {
				close(hold)
				return
			}
			w.(http.Flusher).Flush()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", r.srv.URL+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true}`))
	req.Header.Set("X-Joule-Session", "gone")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for n := 0; n < 6; n++ { // read a few events, then hang up
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case <-hold:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call was not cancelled when the client went away")
	}
	recs := r.receipts("gone")
	if len(recs) != 1 {
		t.Fatalf("%d receipts", len(recs))
	}
	e := recs[0]
	if e.Status != receipts.StatusIncomplete || e.InputTokens != 77 || e.OutputTokens == 0 || !strings.Contains(e.Note, "msg_gone") {
		t.Errorf("receipt %s in=%d out=%d note %q", e.Status, e.InputTokens, e.OutputTokens, e.Note)
	}
	if g := r.grant(); g.ReservedUJ != 0 || g.SpentUJ != e.EstimatedUJ {
		t.Errorf("grant %+v", g)
	}
}

// TestStreamingNotBuffered: each event reaches the client while the
// upstream is still holding the next one back, and a slow client slows the
// stream without breaking it.
func TestStreamingNotBuffered(t *testing.T) {
	r := newRig(t, big)
	next := make(chan struct{})
	events := strings.SplitAfter(string(fixture("anthropic_stream.sse")), "\n\n")
	events = events[:len(events)-1]
	r.up.handler = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
			<-next
		}
	}
	resp, err := http.Post(r.srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var got strings.Builder
	for i := range events {
		for !strings.HasSuffix(got.String(), "\n\n") || strings.Count(got.String(), "\n\n") <= i {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			got.WriteString(line)
		}
		time.Sleep(2 * time.Millisecond) // a slow client
		next <- struct{}{}
	}
	if got.String() != strings.Join(events, "") {
		t.Errorf("got %q", got.String())
	}
}

// TestThousandStreams holds 1,000 streams open through the proxy at once,
// then lets them finish: every client gets its whole stream, every call a
// receipt, and the ledger balances.
func TestThousandStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const n = 1000
	r := newRig(t, big)
	var open atomic.Int64
	release := make(chan struct{})
	stream := fixture("ollama_chat_stream.ndjson")
	first, rest, _ := strings.Cut(string(stream), "\n")
	r.up.handler = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, first+"\n")
		w.(http.Flusher).Flush()
		open.Add(1)
		<-release
		io.WriteString(w, rest)
	}
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest("POST", r.srv.URL+"/api/chat", strings.NewReader(`{"model":"llama3.2","messages":[{"role":"user","content":"why is the sky blue?"}]}`))
			req.Header.Set("X-Joule-Session", fmt.Sprintf("s%d", i%10))
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || string(b) != string(stream) {
				errs <- fmt.Errorf("status %d, %d bytes, err %v", resp.StatusCode, len(b), err)
			}
		}(i)
	}
	deadline := time.Now().Add(60 * time.Second)
	for open.Load() < n {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("only %d of %d streams open", open.Load(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d streams open: %d goroutines, heap in use %.1f MB (proxy, upstream and clients in one process)", n, runtime.NumGoroutine(), float64(ms.HeapInuse)/(1<<20))
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for i := 0; i < 10; i++ {
		total += len(r.receipts(fmt.Sprintf("s%d", i)))
	}
	if total != n {
		t.Errorf("%d receipts, want %d", total, n)
	}
	if g := r.grant(); g.ReservedUJ != 0 {
		t.Errorf("reserved %d after all calls", g.ReservedUJ)
	}
	if err := r.st.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}
