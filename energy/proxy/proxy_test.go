package proxy

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

// rig is a proxy in front of fake upstreams on loopback, with a real store,
// a real signed grant and a real sealer.
type rig struct {
	t        testing.TB
	st       *store.Store
	proxy    *Proxy
	srv      *httptest.Server
	grantID  string
	verifier *core.Verifier
	steward  string
	up       *fakeUpstream
}

// fakeUpstream speaks each API from the fixtures in testdata, one event per
// write and flush, and records what it was asked.
type fakeUpstream struct {
	mu      sync.Mutex
	reqs    []recorded
	handler http.HandlerFunc // overrides the default behaviour when set
	calls   atomic.Int64
	forget  bool          // keep no record of requests (benchmarks: no heap growing with the run)
	delay   time.Duration // how long each answer takes, as a model's would
}

type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	if !f.forget {
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
	}
	h := f.handler
	f.mu.Unlock()
	if h != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
		return
	}
	var req struct {
		Stream *bool `json:"stream"`
	}
	json.Unmarshal(body, &req)
	streaming := req.Stream != nil && *req.Stream
	switch r.URL.Path {
	case "/v1/messages":
		if streaming {
			writeEvents(w, "text/event-stream", fixture("anthropic_stream.sse"), "\n\n")
			return
		}
		writeJSON(w, `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":503}}`)
	case "/v1/messages/count_tokens":
		writeJSON(w, `{"input_tokens":2095}`)
	case "/v1/chat/completions":
		if streaming {
			writeEvents(w, "text/event-stream", fixture("openai_chat_stream.sse"), "\n\n")
			return
		}
		writeJSON(w, `{"id":"chatcmpl-123","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0}}}`)
	case "/v1/responses":
		writeEvents(w, "text/event-stream", fixture("openai_responses_stream.sse"), "\n\n")
	case "/v1/embeddings":
		writeJSON(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.0023,-0.0093]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`)
	case "/v1/models":
		writeJSON(w, `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":1686935002,"owned_by":"openai"}]}`)
	case "/api/chat":
		if req.Stream == nil || *req.Stream {
			writeEvents(w, "application/x-ndjson", fixture("ollama_chat_stream.ndjson"), "\n")
			return
		}
		writeJSON(w, `{"model":"llama3.2","message":{"role":"assistant","content":"Hi"},"done":true,"prompt_eval_count":26,"eval_count":3}`)
	case "/api/generate": // a prompt served from Ollama's KV cache: no prompt_eval_count
		writeJSON(w, `{"model":"llama3.2","response":"The sky is blue because of Rayleigh scattering.","done":true,"done_reason":"stop","eval_count":12,"eval_duration":100000}`)
	case "/api/embed":
		writeJSON(w, `{"model":"all-minilm","embeddings":[[0.010071029,-0.0017594862]],"total_duration":14143917,"load_duration":1019500,"prompt_eval_count":8}`)
	case "/api/tags":
		writeJSON(w, `{"models":[{"name":"llama3.2:latest"}]}`)
	case "/v1beta/models/gemini-2.5-flash:streamGenerateContent":
		if r.URL.Query().Get("alt") == "sse" {
			writeEvents(w, "text/event-stream", fixture("gemini_stream.sse"), "\r\n\r\n")
			return
		}
		// Without alt=sse: the chunks as one JSON array.
		var chunks []string
		for _, ev := range strings.Split(strings.TrimSpace(string(fixture("gemini_stream.sse"))), "\r\n\r\n") {
			chunks = append(chunks, strings.TrimPrefix(ev, "data: "))
		}
		writeJSON(w, "["+strings.Join(chunks, ",\n")+"]")
	case "/v1beta/models/gemini-2.5-pro:generateContent":
		writeJSON(w, `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":3,"totalTokenCount":12,"toolUsePromptTokenCount":4},"modelVersion":"gemini-2.5-pro","responseId":"abc"}`)
	case "/v1beta/models/gemini-2.5-pro:countTokens":
		writeJSON(w, `{"totalTokens":9}`)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeUpstream) last() recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		return recorded{}
	}
	return f.reqs[len(f.reqs)-1]
}

func fixture(name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return b
}

func writeJSON(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, s)
}

// writeEvents writes body one event (up to and including sep) at a time,
// flushing each, as a streaming provider does.
func writeEvents(w http.ResponseWriter, contentType string, body []byte, sep string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	for len(body) > 0 {
		i := bytes.Index(body, []byte(sep))
		n := len(body)
		if i >= 0 {
			n = i + len(sep)
		}
		w.Write(body[:n])
		f.Flush()
		body = body[n:]
	}
}

func newRig(t testing.TB, budget uint64, mod ...func(*Config)) *rig {
	t.Helper()
	return newRigIn(t, t.TempDir(), budget, mod...)
}

// newRigIn keeps the store in dir.
func newRigIn(t testing.TB, dir string, budget uint64, mod ...func(*Config)) *rig {
	t.Helper()
	// Bursts of hundreds of calls queue on the store's write lock.
	st, err := store.Open(filepath.Join(dir, "joule.db"), store.WithLockTimeout(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	steward := "test.example"
	sealer, err := core.NewSealer(steward, key)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := core.NewVerifier(steward, pub)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := grant.NewIssuer(steward, key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s, err := issuer.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{"/"}, Tiers: []string{"l4"},
		BudgetUJ: budget, NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutGrant(context.Background(), store.GrantRecord{ID: s.ID.String(), Signed: s.Envelope, BudgetUJ: budget}); err != nil {
		t.Fatal(err)
	}
	up := &fakeUpstream{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	u, _ := url.Parse(upSrv.URL)
	cfg := Config{
		Anthropic: u, OpenAI: u, Ollama: u, Gemini: u,
		Ledger:   st,
		Recorder: &energy.Recorder{Store: st, Sealer: sealer},
		Grants:   func(context.Context, string) ([]string, error) { return []string{s.ID.String()}, nil },
		Journal:  filepath.Join(dir, JournalDir), // as joule proxy runs
	}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return &rig{t: t, st: st, proxy: p, srv: srv, grantID: s.ID.String(), verifier: verifier, steward: steward, up: up}
}

func (r *rig) do(method, path, body string, header ...string) (*http.Response, []byte) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.srv.URL+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("reading the response: %v", err)
	}
	return resp, b
}

// receipts waits for in-flight calls and returns session's verified chain.
func (r *rig) receipts(session string) []*receipts.Efficiency {
	r.t.Helper()
	r.proxy.Wait()
	entries, err := r.st.Session(context.Background(), session)
	if err != nil {
		return nil
	}
	envs := make([][]byte, len(entries))
	for i, e := range entries {
		envs[i] = e.Envelope
	}
	all, err := receipts.VerifyChain(r.verifier, r.steward, envs)
	if err != nil {
		r.t.Fatalf("session %s does not verify: %v", session, err)
	}
	// The efficiency receipts of forwarded calls, one per call (calls
	// sealed together share a receipt); a refused call's receipt is a
	// decision (refusals).
	var out []*receipts.Efficiency
	for _, a := range all {
		if a.Efficiency != nil {
			out = append(out, a.Efficiency.Split()...)
		}
	}
	return out
}

// refusals returns the decision receipts the proxy sealed for refused calls.
func (r *rig) refusals(session string) []*receipts.Decision {
	r.t.Helper()
	r.proxy.Wait()
	entries, err := r.st.Session(context.Background(), session)
	if err != nil {
		return nil
	}
	envs := make([][]byte, len(entries))
	for i, e := range entries {
		envs[i] = e.Envelope
	}
	all, err := receipts.VerifyChain(r.verifier, r.steward, envs)
	if err != nil {
		r.t.Fatalf("session %s does not verify: %v", session, err)
	}
	var out []*receipts.Decision
	for _, a := range all {
		if a.Decision != nil {
			out = append(out, a.Decision)
		}
	}
	return out
}

// grant is the rig's grant once every call is sealed and the proxy has
// given its leases back: anything still reserved then is a leak.
func (r *rig) grant() store.GrantRecord {
	r.t.Helper()
	r.proxy.GiveBack()
	g, err := r.st.Grant(context.Background(), r.grantID)
	if err != nil {
		r.t.Fatal(err)
	}
	return g
}

const big = 1 << 50 // a budget no test call reaches

func TestAPIs(t *testing.T) {
	tests := []struct {
		name, path, body string
		want             string // fixture the client must receive byte for byte ("" skips)
		usage            energy.Usage
		model            string
		complete         bool
		note             string
	}{
		{name: "anthropic stream", path: "/v1/messages?beta=true", body: `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			want: "anthropic_stream.sse", usage: energy.Usage{Input: 10, CacheWrite: 2000, CachedInput: 80000, Output: 300}, model: "claude-sonnet-4-5-20250929", complete: true, note: "request msg_01XFDUDYJgAACzvnptvVoYEL"},
		{name: "anthropic json", path: "/v1/messages", body: `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Hello"}]}`,
			usage: energy.Usage{Input: 2095, Output: 503}, model: "claude-sonnet-4-5-20250929", complete: true},
		{name: "openai chat stream, usage asked by client", path: "/v1/chat/completions", body: `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`,
			want: "openai_chat_stream.sse", usage: energy.Usage{Input: 60, CachedInput: 40, Output: 20}, model: "gpt-4o-2024-08-06", complete: true},
		{name: "openai chat json", path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}]}`,
			usage: energy.Usage{Input: 9, Output: 12}, model: "gpt-4o-mini", complete: true},
		{name: "openai responses stream", path: "/v1/responses", body: `{"model":"gpt-5","stream":true,"input":"Hello","max_output_tokens":500}`,
			want: "openai_responses_stream.sse", usage: energy.Usage{Input: 30, CachedInput: 6, Output: 87}, model: "gpt-5-2025-08-07", complete: true},
		{name: "openai embeddings", path: "/v1/embeddings", body: `{"model":"text-embedding-3-small","input":"The food was delicious"}`,
			usage: energy.Usage{Input: 8}, model: "text-embedding-3-small", complete: true},
		{name: "ollama chat stream", path: "/api/chat", body: `{"model":"llama3.2","messages":[{"role":"user","content":"why is the sky blue?"}]}`,
			want: "ollama_chat_stream.ndjson", usage: energy.Usage{Input: 26, Output: 282}, model: "llama3.2", complete: true},
		{name: "ollama chat json", path: "/api/chat", body: `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"hi"}]}`,
			usage: energy.Usage{Input: 26, Output: 3}, model: "llama3.2", complete: true},
		{name: "ollama generate, prompt from cache", path: "/api/generate", body: `{"model":"llama3.2","prompt":"Why is the sky blue?","stream":false}`,
			usage: energy.Usage{Input: 17, Output: 12}, model: "llama3.2", complete: true, note: "input estimated from the request size"},
		{name: "ollama embed", path: "/api/embed", body: `{"model":"all-minilm","input":"Why is the sky blue?"}`,
			usage: energy.Usage{Input: 8}, model: "all-minilm", complete: true},
		// Gemini: the model is in the path; thoughts are output; cached
		// content is part of the prompt count.
		{name: "gemini stream sse", path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body: `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"generationConfig":{"temperature":0}}`,
			want: "gemini_stream.sse", usage: energy.Usage{Input: 200, CachedInput: 1000, Output: 65}, model: "gemini-2.5-flash", complete: true, note: "request Yz1aaa-bcdEFgh"},
		{name: "gemini stream array", path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent", body: `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}]}`,
			usage: energy.Usage{Input: 200, CachedInput: 1000, Output: 65}, model: "gemini-2.5-flash", complete: true},
		{name: "gemini json", path: "/v1beta/models/gemini-2.5-pro:generateContent", body: `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"generationConfig":{"maxOutputTokens":1000}}`,
			usage: energy.Usage{Input: 13, Output: 3}, model: "gemini-2.5-pro", complete: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, big)
			session := "s-" + strings.ReplaceAll(tt.name, " ", "-")
			resp, got := r.do("POST", tt.path, tt.body, "x-api-key", "sk-ant-secret", "Authorization", "Bearer sk-secret",
				"x-claude-code-session-id", session, "Accept-Encoding", "gzip")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			if tt.want != "" && !bytes.Equal(got, fixture(tt.want)) {
				t.Errorf("client got\n%s\nwant byte for byte\n%s", got, fixture(tt.want))
			}
			up := r.up.last()
			if up.Header.Get("X-Api-Key") != "sk-ant-secret" || up.Header.Get("Authorization") != "Bearer sk-secret" {
				t.Errorf("credentials not passed untouched: %v", up.Header)
			}
			wantPath, wantQuery, _ := strings.Cut(tt.path, "?")
			if up.Path != wantPath || up.Query != wantQuery {
				t.Errorf("upstream got %s?%s, want %s", up.Path, up.Query, tt.path)
			}
			if !json.Valid(up.Body) {
				t.Errorf("upstream body is not JSON: %s", up.Body)
			}
			recs := r.receipts(session)
			if len(recs) != 1 {
				t.Fatalf("%d receipts, want 1", len(recs))
			}
			e := recs[0]
			gotUsage := energy.Usage{Input: e.InputTokens, CachedInput: e.CachedInputTokens, CacheWrite: e.CacheWriteTokens, Output: e.OutputTokens}
			if gotUsage != tt.usage {
				t.Errorf("usage %+v, want %+v", gotUsage, tt.usage)
			}
			if e.Model != tt.model || e.Coverage != receipts.CoverageEnforced || e.Unit != "model-call" {
				t.Errorf("receipt %+v", e)
			}
			if want := (&energy.Table{}).Energy(tt.model, tt.usage).UJ; e.EstimatedUJ != want {
				t.Errorf("estimated %d µJ, want %d", e.EstimatedUJ, want)
			}
			if (e.Status == receipts.StatusComplete) != tt.complete {
				t.Errorf("status %s (note %q), want complete=%v", e.Status, e.Note, tt.complete)
			}
			if !strings.Contains(e.Note, tt.note) {
				t.Errorf("note %q lacks %q", e.Note, tt.note)
			}
			for _, secret := range []string{"sk-ant-secret", "sk-secret"} {
				if strings.Contains(e.Note, secret) {
					t.Errorf("a credential reached the receipt: %q", e.Note)
				}
			}
			g := r.grant()
			if g.SpentUJ != e.EstimatedUJ || g.ReservedUJ != 0 {
				t.Errorf("grant spent %d reserved %d, want spent %d reserved 0", g.SpentUJ, g.ReservedUJ, e.EstimatedUJ)
			}
		})
	}
}

// TestChatUsageInjected: a client that did not ask for stream usage gets
// exactly the stream it would have got, while the proxy reads the usage.
func TestChatUsageInjected(t *testing.T) {
	r := newRig(t, big)
	resp, got := r.do("POST", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Hello"}]}`, "X-Joule-Session", "inj")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	var sent struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(r.up.last().Body, &sent); err != nil || !sent.StreamOptions.IncludeUsage || len(sent.Messages) != 1 {
		t.Errorf("upstream body %s: want include_usage injected, the rest kept", r.up.last().Body)
	}
	events := strings.SplitAfter(string(fixture("openai_chat_stream.sse")), "\n\n")
	want := strings.ReplaceAll(strings.Join(append(events[:3:3], events[4:]...), ""), `,"usage":null`, "")
	if string(got) != want {
		t.Errorf("client got\n%s\nwant (no usage chunk)\n%s", got, want)
	}
	recs := r.receipts("inj")
	if len(recs) != 1 || recs[0].InputTokens != 60 || recs[0].CachedInputTokens != 40 || recs[0].OutputTokens != 20 || recs[0].Status != receipts.StatusComplete {
		t.Fatalf("receipts %+v", recs)
	}
}

// TestUpstreamPaths: an upstream given with /v1, and a client base URL
// without it, still reach the API's path.
func TestUpstreamPaths(t *testing.T) {
	r := newRig(t, big)
	u := *r.proxy.up[OpenAI]
	u.Path = "/v1"
	r.proxy.up[OpenAI] = &u
	for _, path := range []string{"/v1/chat/completions", "/chat/completions"} {
		resp, got := r.do("POST", path, `{"model":"gpt-4o-mini","messages":[]}`)
		if resp.StatusCode != 200 || r.up.last().Path != "/v1/chat/completions" {
			t.Errorf("%s reached %s: %d %s", path, r.up.last().Path, resp.StatusCode, got)
		}
	}
	r.proxy.up[OpenAI].Path = ""
	if resp, _ := r.do("GET", "/models", ""); resp.StatusCode != 200 || r.up.last().Path != "/v1/models" {
		t.Errorf("/models reached %s", r.up.last().Path)
	}
}

func TestUnmeteredPassThrough(t *testing.T) {
	r := newRig(t, big)
	for _, tt := range []struct{ method, path, want string }{
		{"GET", "/v1/models", `"gpt-4o"`},
		{"POST", "/v1/messages/count_tokens", `{"input_tokens":2095}`},
		{"GET", "/api/tags", `llama3.2:latest`},
	} {
		resp, got := r.do(tt.method, tt.path, `{"model":"claude-sonnet-4-5","messages":[]}`, "X-Joule-Session", "unmetered")
		if resp.StatusCode != 200 || !strings.Contains(string(got), tt.want) {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, resp.StatusCode, got)
		}
	}
	if recs := r.receipts("unmetered"); len(recs) != 0 {
		t.Errorf("unmetered calls sealed %d receipts", len(recs))
	}
	resp, _ := r.do("HEAD", "/", "")
	if resp.StatusCode != 200 {
		t.Errorf("HEAD / answered %d", resp.StatusCode)
	}
}

func TestBudgetRefusal(t *testing.T) {
	tests := []struct {
		path, body string
		status     int
		shape      string
	}{
		{"/v1/messages", `{"model":"claude-opus-4-1","max_tokens":32000,"messages":[{"role":"user","content":"hi"}]}`, 402, `"type":"billing_error"`},
		{"/v1/chat/completions", `{"model":"gpt-5","max_completion_tokens":100000,"messages":[{"role":"user","content":"hi"}]}`, 429, `"type":"insufficient_quota"`},
		{"/v1/responses", `{"model":"gpt-5","input":"hi"}`, 429, `"code":"insufficient_quota"`},
		{"/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`, 402, `{"error":"joule: the budget cannot pay for this call`},
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":65536}}`, 429, `"status":"RESOURCE_EXHAUSTED"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := newRig(t, 1_000_000) // 1 J
			resp, got := r.do("POST", tt.path, tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(string(got), tt.shape) || !strings.Contains(string(got), "joule grant issue --template dev --budget 30MJ --use") {
				t.Errorf("got %d %s, want %d with %s", resp.StatusCode, got, tt.status, tt.shape)
			}
			if n := r.up.calls.Load(); n != 0 {
				t.Errorf("the upstream was called %d times", n)
			}
			if g := r.grant(); g.SpentUJ != 0 || g.ReservedUJ != 0 {
				t.Errorf("grant %+v after a refusal", g)
			}
		})
	}
}

// TestConcurrentBudget: many calls race for one budget; the reservations
// admit only what the budget can pay, and nothing is overspent.
func TestConcurrentBudget(t *testing.T) {
	// Each call reserves its estimate: ~30 input tokens and 100 output
	// tokens of llama3.2 (small): about 52 J. The budget admits 5.
	body := `{"model":"llama3.2","stream":false,"options":{"num_predict":100},"messages":[{"role":"user","content":"hi"}]}`
	rates := energy.DefaultRates[energy.Small]
	per := rates.Of(energy.Usage{Input: uint64(len(body)+3) / 4, Output: 100})
	budget := per*5 + per/2
	r := newRig(t, budget)
	release := make(chan struct{})
	var arrived atomic.Int64
	r.up.handler = func(w http.ResponseWriter, _ *http.Request) {
		arrived.Add(1)
		<-release
		writeJSON(w, `{"model":"llama3.2","message":{"role":"assistant","content":"Hi"},"done":true,"prompt_eval_count":26,"eval_count":3}`)
	}
	const n = 20
	var refused atomic.Int64
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(r.srv.URL+"/api/chat", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusPaymentRequired {
				refused.Add(1)
			}
			codes <- resp.StatusCode
		}()
	}
	// Wait until every call was either refused or is held at the upstream.
	deadline := time.Now().Add(20 * time.Second)
	for {
		g, _ := r.st.Grant(context.Background(), r.grantID)
		if arrived.Load() == 5 && refused.Load() == n-5 && g.ReservedUJ == 5*per {
			break
		}
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("arrived %d, refused %d, reserved %d", arrived.Load(), refused.Load(), g.ReservedUJ)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[200] != 5 || count[402] != n-5 {
		t.Errorf("status counts %v, want 5×200 and %d×402", count, n-5)
	}
	g := r.grant()
	actual := rates.Of(energy.Usage{Input: 26, Output: 3})
	if g.SpentUJ != 5*actual || g.ReservedUJ != 0 || g.SpentUJ > g.BudgetUJ {
		t.Errorf("grant spent %d reserved %d of %d; want spent %d", g.SpentUJ, g.ReservedUJ, g.BudgetUJ, 5*actual)
	}
	if err := r.st.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestUsageEdgeCases are energy.md §4's traps, one fixture each.
func TestUsageEdgeCases(t *testing.T) {
	sse := func(events ...string) string {
		var b strings.Builder
		for _, e := range events {
			fmt.Fprintf(&b, "data: %s\n\n", e)
		}
		return b.String()
	}
	tests := []struct {
		name, path, body, stream string
		usage                    energy.Usage
		complete                 bool
		note                     string
	}{
		{"cumulative message_delta is kept, not summed", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true}`,
			sse(`{"type":"message_start","message":{"id":"m1","model":"claude-sonnet-4-5","usage":{"input_tokens":5,"output_tokens":1}}}`,
				`{"type":"message_delta","usage":{"output_tokens":10}}`, `{"type":"message_delta","usage":{"output_tokens":25}}`, `{"type":"message_stop"}`),
			energy.Usage{Input: 5, Output: 25}, true, ""},
		{"server tools: the final message_delta's input totals win", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true}`,
			sse(`{"type":"message_start","message":{"id":"m2","model":"claude-sonnet-4-5","usage":{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":1}}}`,
				`{"type":"message_delta","usage":{"input_tokens":50,"cache_read_input_tokens":300,"cache_creation_input_tokens":70,"output_tokens":40}}`, `{"type":"message_stop"}`),
			energy.Usage{Input: 50, CachedInput: 300, CacheWrite: 70, Output: 40}, true, ""},
		{"zero reported output with text streamed is estimated", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`,
			sse(`{"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"0123456789abcdef"}}]}`,
				`{"id":"c1","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":0}}`, `[DONE]`),
			energy.Usage{Input: 7, Output: 4}, true, "upstream reported 0 output tokens"},
		{"vLLM usage chunk with choices null", "/v1/chat/completions", `{"model":"qwen2.5-coder:7b","stream":true,"stream_options":{"include_usage":true}}`,
			sse(`{"id":"c2","model":"qwen2.5-coder:7b","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
				`{"id":"c2","model":"qwen2.5-coder:7b","choices":null,"usage":{"prompt_tokens":12,"completion_tokens":2}}`, `[DONE]`),
			energy.Usage{Input: 12, Output: 2}, true, ""},
		{"usage on a chunk that still has choices", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`,
			sse(`{"id":"c3","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}}`, `[DONE]`),
			energy.Usage{Input: 5, CachedInput: 4, Output: 1}, true, ""},
		{"responses incomplete still counts", "/v1/responses", `{"model":"gpt-5","stream":true,"max_output_tokens":16}`,
			sse(`{"type":"response.incomplete","response":{"id":"r1","model":"gpt-5","status":"incomplete","usage":{"input_tokens":20,"output_tokens":16}}}`),
			energy.Usage{Input: 20, Output: 16}, false, "ended incomplete"},
		{"all-zero usage is recorded as reported", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true}`,
			sse(`{"type":"message_start","message":{"id":"m3","model":"claude-sonnet-4-5","usage":{"input_tokens":0,"output_tokens":0}}}`,
				`{"type":"message_delta","usage":{"output_tokens":0}}`, `{"type":"message_stop"}`),
			energy.Usage{}, true, ""},
		{"mid-stream error event", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true}`,
			sse(`{"type":"message_start","message":{"id":"m4","model":"claude-sonnet-4-5","usage":{"input_tokens":9,"output_tokens":1}}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"abcdefgh"}}`,
				`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			energy.Usage{Input: 9, Output: 2}, false, "overloaded_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, big)
			r.up.handler = func(w http.ResponseWriter, _ *http.Request) {
				writeEvents(w, "text/event-stream", []byte(tt.stream), "\n\n")
			}
			resp, got := r.do("POST", tt.path, tt.body, "X-Joule-Session", "edge")
			if resp.StatusCode != 200 || string(got) != tt.stream {
				t.Errorf("status %d, body %q", resp.StatusCode, got)
			}
			recs := r.receipts("edge")
			if len(recs) != 1 {
				t.Fatalf("%d receipts", len(recs))
			}
			e := recs[0]
			u := energy.Usage{Input: e.InputTokens, CachedInput: e.CachedInputTokens, CacheWrite: e.CacheWriteTokens, Output: e.OutputTokens}
			if u != tt.usage || (e.Status == receipts.StatusComplete) != tt.complete || !strings.Contains(e.Note, tt.note) {
				t.Errorf("usage %+v status %s note %q; want %+v complete=%v note ~%q", u, e.Status, e.Note, tt.usage, tt.complete, tt.note)
			}
		})
	}
}

// TestSessionPath: a call through BASE/session/ID/ is sealed in session ID
// (escaped ids included), even when the client names another session in a
// header, and reaches the upstream without the prefix.
func TestSessionPath(t *testing.T) {
	r := newRig(t, big)
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Hello"}]}`
	resp, got := r.do("POST", "/session/acp-1%2Fx/v1/messages", body, "X-Claude-Code-Session-Id", "other")
	if resp.StatusCode != 200 || r.up.last().Path != "/v1/messages" {
		t.Fatalf("%d %s, upstream path %s", resp.StatusCode, got, r.up.last().Path)
	}
	r.proxy.Wait()
	if recs := r.receipts("acp-1/x"); len(recs) != 1 {
		t.Errorf("session acp-1/x has %d receipts", len(recs))
	}
	if recs := r.receipts("other"); len(recs) != 0 {
		t.Errorf("the header's session got %d receipts", len(recs))
	}
	for _, bad := range []string{"/session//v1/messages", "/session/" + strings.Repeat("x", 257) + "/v1/messages"} {
		if resp, got := r.do("POST", bad, body); resp.StatusCode != 400 {
			t.Errorf("%s: %d %s", bad, resp.StatusCode, got)
		}
	}
}

// TestGeminiRoutes: the Gemini API's paths name their model; only
// generateContent and streamGenerateContent are metered (the second always
// streamed); anything else under models/ is refused, not guessed.
func TestGeminiRoutes(t *testing.T) {
	for _, tt := range []struct {
		path          string
		ok, metered   bool
		model, name   string
		streamsAlways bool
	}{
		{"/v1beta/models/gemini-2.5-pro:generateContent", true, true, "gemini-2.5-pro", "generateContent", false},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", true, true, "gemini-2.5-flash", "streamGenerateContent", true},
		{"/v1/models/gemini-2.5-flash:streamGenerateContent", true, true, "gemini-2.5-flash", "streamGenerateContent", true},
		{"/v1beta/models/gemini-2.5-pro:countTokens", true, false, "", "countTokens", false},
		{"/v1beta/models", true, false, "", "models", false},
		{"/v1beta/models/gemini-2.5-pro", true, false, "", "models", false},
		{"/v1beta/models/:generateContent", false, false, "", "", false},
		{"/v1beta/models/gemini-2.5-pro:embedContent", false, false, "", "", false},
		{"/v1beta/models/a/b:generateContent", false, false, "", "", false},
		{"/v1beta/tunedModels/x:generateContent", false, false, "", "", false},
	} {
		rt, ok := lookupRoute(tt.path)
		if ok != tt.ok || ok && (rt.family != Gemini || rt.metered != tt.metered || rt.model != tt.model || rt.name != tt.name || rt.streamsAlways != tt.streamsAlways) {
			t.Errorf("%s: %+v %v", tt.path, rt, ok)
		}
	}
	// A refused Gemini path answers in Gemini's error shape.
	r := newRig(t, big)
	resp, got := r.do("POST", "/v1beta/models/gemini-2.5-pro:embedContent", `{}`)
	if resp.StatusCode != 404 || !strings.Contains(string(got), `"status":"NOT_FOUND"`) {
		t.Errorf("got %d %s", resp.StatusCode, got)
	}
}
