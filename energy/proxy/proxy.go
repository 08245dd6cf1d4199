// Package proxy is joule's enforcing meter: an HTTP base URL for the
// Anthropic, OpenAI and Ollama APIs that refuses a call its grant cannot pay
// for, streams the answer through as it arrives, and seals an efficiency/1
// receipt for every model call from the provider's own usage.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

// Defaults.
const (
	DefaultMaxBody       = 32 << 20
	DefaultHeaderTimeout = 10 * time.Minute
	DefaultSession       = "proxy"
	DefaultMaxUnsealed   = 1024
	DefaultAnthropicURL  = "https://api.anthropic.com"
	DefaultOpenAIURL     = "https://api.openai.com"
	DefaultOllamaURL     = "http://127.0.0.1:11434"
	DefaultGeminiURL     = "https://generativelanguage.googleapis.com"
	lockedRetryFor       = 2 * time.Minute
)

// SessionHeaders name the session of a call, first present wins.
var SessionHeaders = []string{"X-Claude-Code-Session-Id", "X-Joule-Session", "X-Session-Id"}

// Ledger is the budget side of the store the proxy needs: it reserves
// leases that calls draw from as their receipts are sealed.
type Ledger interface {
	Reserve(ctx context.Context, grants []string, amountUJ uint64) (int64, error)
	Release(ctx context.Context, id int64) error
}

// Config configures a Proxy.
type Config struct {
	Anthropic, OpenAI, Ollama, Gemini *url.URL // upstreams; nil takes the default

	Table    *energy.Table // must not change once the proxy is made
	Ledger   Ledger
	Recorder *energy.Recorder
	// Grants returns the ids of the grant chain that pays for session's
	// calls, root first, after checking it is valid now.
	Grants func(ctx context.Context, session string) ([]string, error)

	Session       string        // session for calls without a session header
	MaxBody       int64         // largest request body; 0 is DefaultMaxBody
	HeaderTimeout time.Duration // longest wait for the upstream's response headers
	// MaxUnsealed bounds the answered calls whose receipts are still being
	// sealed; past it, a call's handler waits for the store before it
	// returns. 0 is DefaultMaxUnsealed.
	MaxUnsealed int
	// Floor is the fewest output tokens a call is fitted to when its
	// grants cannot pay for its whole output cap; below it the call is
	// refused. 0 is DefaultFloor.
	Floor uint64
	// Journal is the directory of the proxy's journal (see journal.go),
	// which lets the next proxy seal what this one answered if it is
	// killed first; empty means none. Run Recover on it before New.
	Journal   string
	Transport http.RoundTripper
	// Logf, if set, gets one line per call: never headers, never bodies.
	Logf func(format string, args ...any)
	// Sealed, if set, is called with every receipt sealed, once for a
	// receipt that covers several calls.
	Sealed func(store.Entry, *receipts.Efficiency)
}

// Proxy is the metering proxy, an http.Handler.
type Proxy struct {
	cfg      Config
	up       [families]*url.URL
	reverse  *httputil.ReverseProxy
	inflight sync.WaitGroup
	leases   *leases
	unsealed chan struct{} // one token per answered call whose receipt is not yet sealed
	sq       sealQueue
	models   *models
	journal  *journal // nil without Config.Journal

	beforeSeal func() // a test's: runs before each batch is sealed
}

// New checks cfg and builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Ledger == nil || cfg.Recorder == nil || cfg.Grants == nil {
		return nil, errors.New("proxy: a ledger, a recorder and a grant source are required")
	}
	if cfg.Table == nil {
		cfg.Table = &energy.Table{}
	}
	if err := cfg.Table.Validate(); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if cfg.Session == "" {
		cfg.Session = DefaultSession
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.Floor == 0 {
		cfg.Floor = DefaultFloor
	}
	if cfg.MaxUnsealed <= 0 {
		cfg.MaxUnsealed = DefaultMaxUnsealed
	}
	p := &Proxy{cfg: cfg, unsealed: make(chan struct{}, cfg.MaxUnsealed), models: newModels(cfg.Table)}
	p.sq.full, p.sq.wakeAt = make(chan struct{}, 1), min(max(cfg.MaxUnsealed/2, 1), store.MaxSealBatch)
	p.leases = newLeases(cfg.Ledger, p.logf)
	if cfg.Journal != "" {
		j, err := openJournal(cfg.Journal)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			p.logf("no journal on this system: receipts of calls answered when the proxy is killed are lost")
		case err != nil:
			p.leases.close()
			return nil, fmt.Errorf("proxy: journal: %w", err)
		default:
			p.journal = j
		}
	}
	defaults := [families]string{DefaultAnthropicURL, DefaultOpenAIURL, DefaultOllamaURL, DefaultGeminiURL}
	for i, u := range []*url.URL{cfg.Anthropic, cfg.OpenAI, cfg.Ollama, cfg.Gemini} {
		if u == nil {
			u, _ = url.Parse(defaults[i])
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("proxy: %s upstream %q is not an http(s) URL", Family(i), u)
		}
		p.up[i] = u
	}
	tr := cfg.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: cfg.HeaderTimeout,
			ExpectContinueTimeout: time.Second,
		}
	}
	p.reverse = &httputil.ReverseProxy{
		Rewrite:   p.rewrite,
		Transport: tr,
		// Streams (text/event-stream, or a body of unknown length: NDJSON)
		// are flushed at every write: ReverseProxy does so for them
		// whatever this says. A body of known length is one document, sent
		// whole: flushing it would cost each call a timer and an extra
		// write of its headers alone.
		FlushInterval:  0,
		BufferPool:     bufferPool{},
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       log.New(logWriter{p}, "", 0),
	}
	return p, nil
}

// Wait blocks until every call in flight has sealed its receipt.
func (p *Proxy) Wait() { p.inflight.Wait() }

// Close waits for the calls in flight and gives back every lease, so the
// budget it held is free for others at once rather than when the leases
// would have been found stale.
func (p *Proxy) Close() {
	p.inflight.Wait()
	p.leases.close()
	if p.journal != nil {
		if n := p.journal.close(); n > 0 {
			p.logf("%d receipt(s) could not be sealed; the next joule proxy seals them from the journal", n)
		}
	}
}

// GiveBack waits for the calls in flight and releases every lease, leaving
// nothing reserved in the store; later calls reserve new ones.
func (p *Proxy) GiveBack() {
	p.inflight.Wait()
	p.leases.giveBack()
}

// logWriter sends the reverse proxy's own complaints to Logf.
type logWriter struct{ p *Proxy }

func (w logWriter) Write(b []byte) (int, error) {
	w.p.logf("%s", bytes.TrimSpace(b))
	return len(b), nil
}

type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *(buffers.Get().(*[]byte)) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }

type ctxKey struct{}

// call is one metered request in flight.
type call struct {
	route      route
	session    string
	model      string
	grants     []string
	reserved   uint64
	ticket     ticket
	inputEst   uint64 // input tokens estimated from the body
	rates      energy.Rates
	oc         *outputCap // nil for routes without an output cap
	want       uint64     // the output cap asked for, or the class default
	fitted     uint64     // the cap the call was fitted to; 0 when it was not
	thinking   uint64     // the thinking budget it was fitted to
	stream     bool
	start      time.Time
	status     int
	once       sync.Once
	injected   bool // the proxy asked for stream usage the client did not
	upstreamOK bool
	nonce      string // its receipt's, when journaled
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			writeError(w, familyOf(r.URL.Path), errInternal, fmt.Sprintf("joule proxy: internal error: %v", v))
		}
	}()
	var err error
	if sess, rest, ok := sessionPath(r.URL.EscapedPath()); ok {
		if sess == "" {
			writeError(w, familyOf(rest), errInvalid, "joule proxy: a /session/ID/ base URL needs a session id of 1 to 256 bytes")
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
		if r.URL.Path, err = url.PathUnescape(rest); err != nil {
			writeError(w, familyOf(rest), errInvalid, "joule proxy: a bad path: "+err.Error())
			return
		}
		r.URL.RawPath = ""
	}
	if r.URL.Path == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.Method == http.MethodGet {
			io.WriteString(w, "joule proxy\n")
		}
		return
	}
	rt, ok := lookupRoute(r.URL.Path)
	if !ok {
		writeError(w, familyOf(r.URL.Path), errNotFound, fmt.Sprintf("joule proxy: %s %s is not an API joule meters; it serves %s", r.Method, r.URL.Path, servedPaths))
		return
	}
	if !rt.metered {
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, &call{route: rt}))
		p.reverse.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, rt.family, errMethod, fmt.Sprintf("joule proxy: %s takes POST, not %s", r.URL.Path, r.Method))
		return
	}
	var body []byte
	body, err = readBody(http.MaxBytesReader(w, r.Body, p.cfg.MaxBody), r.ContentLength, p.cfg.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, rt.family, errTooLarge, fmt.Sprintf("joule proxy: request body is over the %d-byte limit", p.cfg.MaxBody))
			return
		}
		writeError(w, rt.family, errInvalid, "joule proxy: reading the request body: "+err.Error())
		return
	}
	c, obj, err := p.parse(rt, body)
	if err != nil {
		writeError(w, rt.family, errInvalid, "joule proxy: "+err.Error())
		return
	}
	c.session = p.session(r)
	ctx := r.Context()
	// A refusal is a decision: it is sealed, as a deny, before it is sent.
	refuse := func(code string, kind errKind, msg string) {
		if _, err := p.cfg.Recorder.SealRefusal(ctx, energy.Refusal{Session: c.session, Path: r.URL.Path, Model: c.model,
			Code: code, Reason: msg, Grants: c.grants, Body: body}); err != nil {
			p.logf("refused %s session=%s, and could not seal the refusal: %v", r.URL.Path, c.session, err)
		}
		writeError(w, rt.family, kind, msg)
	}
	if c.grants, err = p.cfg.Grants(ctx, c.session); err != nil {
		refuse(refusalCode(err), errNoGrant, fmt.Sprintf("joule proxy: no grant can pay for this call: %v (run 'joule init' or 'joule grant use ID')", err))
		p.logf("refused %s %s session=%s: %v", r.Method, r.URL.Path, c.session, err)
		return
	}
	if len(c.grants) == 0 {
		refuse("no-active-grant", errNoGrant, "joule proxy: no active grant: run 'joule init' or 'joule grant use ID'")
		return
	}
	if err = p.admitFit(ctx, c); err != nil {
		var fe *floorError
		if errors.As(err, &fe) {
			refuse("budget-exceeded", errBudget, fe.message(c))
			p.logf("refused %s session=%s model=%s: not even the floor fits the budget", r.URL.Path, c.session, c.model)
			return
		}
		if errors.Is(err, store.ErrRevoked) || errors.Is(err, store.ErrNotFound) {
			code := "grant-revoked"
			if errors.Is(err, store.ErrNotFound) {
				code = "grant-invalid"
			}
			refuse(code, errNoGrant, "joule proxy: "+err.Error())
			return
		}
		writeError(w, rt.family, errInternal, "joule proxy: the ledger is unavailable, so no call can be paid for: "+err.Error())
		return
	}
	var edits []edit
	if c.fitted != 0 {
		edits = c.oc.edits(rt, body, c.fitted, c.thinking)
	}
	if rt.family == OpenAI && rt.name == "chat" && c.stream {
		if e, ok := injectUsage(body, obj); ok {
			edits, c.injected = append(edits, e), true
		}
	}
	if len(edits) > 0 {
		body = applyEdits(body, edits)
	}
	p.inflight.Add(1)
	c.start = time.Now()
	p.journalStart(c)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Del("Content-Length")
	r = r.WithContext(context.WithValue(ctx, ctxKey{}, c))
	p.reverse.ServeHTTP(w, r)
}

// readBody reads a request body of the length the request declared (-1:
// unknown) into a buffer of that size, rather than one io.ReadAll grows
// and copies from 512 bytes.
func readBody(r io.Reader, length, limit int64) ([]byte, error) {
	if length <= 0 || length > limit {
		return io.ReadAll(r)
	}
	b := make([]byte, length+1) // one more, to see the end
	n, err := io.ReadFull(r, b)
	switch {
	case err == nil: // longer than declared: net/http does not let that happen
		rest, err := io.ReadAll(r)
		return append(b, rest...), err
	case errors.Is(err, io.ErrUnexpectedEOF) && n == int(length):
		return b[:n], nil
	}
	return b[:n], err
}

// parse reads what the ceiling needs from a request body: the model, the
// output cap, streaming, and an input-token estimate.
func (p *Proxy) parse(rt route, body []byte) (*call, object, error) {
	obj, err := parseObject(body)
	if err != nil {
		var dup *dupKeyError
		if errors.As(err, &dup) {
			return nil, object{}, err
		}
		return nil, object{}, fmt.Errorf("the request body is not a JSON object: %v", err)
	}
	c := &call{route: rt, model: rt.model}
	if raw, _, ok := obj.get("model"); ok && rt.model == "" {
		if c.model, ok = decodeString(raw, ""); !ok {
			return nil, object{}, errors.New(`"model" is not a string`)
		}
	}
	if c.model == "" && rt.name != "models" {
		return nil, object{}, errors.New(`the request names no "model"`)
	}
	c.stream = rt.streams(obj)
	// A token is about four bytes of text; counting the whole body (JSON
	// syntax included) errs high, as a ceiling should.
	c.inputEst = uint64(len(body)+3) / 4
	mi := p.models.get(c.model)
	c.rates = mi.rates
	if len(rt.maxOut) > 0 {
		if c.oc, err = readCap(rt, obj); err != nil {
			return nil, object{}, err
		}
		var named bool
		if c.want, named = c.oc.requested(); !named {
			c.want = mi.maxOut
		}
	}
	c.reserved = energy.Cap(c.rates.Of(energy.Usage{Input: c.inputEst, Output: c.want}))
	return c, obj, nil
}

// injectUsage asks a Chat Completions stream for its usage chunk when the
// client did not; the chunk is then kept from the client. It is an edit of
// the body, which otherwise stays byte for byte.
func injectUsage(body []byte, obj object) (edit, bool) {
	raw, m, ok := obj.get("stream_options")
	if !ok {
		at, sep := objectStart(body, 0)
		return edit{at, at, `"stream_options":{"include_usage":true}` + sep}, true
	}
	if bytes.Equal(raw, []byte("null")) {
		return edit{m.start, m.end, `{"include_usage":true}`}, true
	}
	opts, err := parseObject(raw)
	if err != nil {
		return edit{}, false
	}
	var on bool
	if json.Unmarshal(opts.value("include_usage"), &on) == nil && on {
		return edit{}, false
	}
	if _, im, ok := opts.get("include_usage"); ok {
		return edit{m.start + im.start, m.start + im.end, "true"}, true
	}
	at, sep := objectStart(raw, m.start)
	return edit{at, at, `"include_usage":true` + sep}, true
}

// SessionPrefix starts a per-session base URL, BASE/session/ID: every call
// made through it is sealed in session ID, whatever session header the
// client sends (joule acp points a remote agent at one per session).
const SessionPrefix = "/session/"

type sessionKey struct{}

// sessionPath splits /session/ID/REST into ID (unescaped; "" if invalid)
// and /REST.
func sessionPath(p string) (session, rest string, ok bool) {
	if !strings.HasPrefix(p, SessionPrefix) {
		return "", p, false
	}
	id, rest, _ := strings.Cut(p[len(SessionPrefix):], "/")
	rest = "/" + rest
	if s, err := url.PathUnescape(id); err == nil && s != "" && len(s) <= 256 && !strings.ContainsAny(s, "\x00\r\n") {
		return s, rest, true
	}
	return "", rest, true
}

func (p *Proxy) session(r *http.Request) string {
	if s, ok := r.Context().Value(sessionKey{}).(string); ok {
		return s
	}
	for _, h := range SessionHeaders {
		if v := strings.TrimSpace(r.Header.Get(h)); v != "" && len(v) <= 256 {
			return v
		}
	}
	return p.cfg.Session
}

func (p *Proxy) logf(format string, args ...any) {
	if p.cfg.Logf != nil {
		p.cfg.Logf(format, args...)
	}
}

// rewrite points the outgoing request at the route's upstream. Headers,
// credentials included, pass untouched, except that the response is asked
// for uncompressed so its usage can be read as it passes.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	c := pr.In.Context().Value(ctxKey{}).(*call)
	up := p.up[c.route.family]
	out := pr.Out
	out.URL.Scheme, out.URL.Host = up.Scheme, up.Host
	path := pr.In.URL.Path
	base := strings.TrimSuffix(up.Path, "/")
	switch {
	case strings.HasSuffix(base, "/v1") && strings.HasPrefix(path, "/v1/"):
		path = strings.TrimPrefix(path, "/v1")
	case c.route.family == OpenAI && !strings.HasSuffix(base, "/v1") && !strings.HasPrefix(path, "/v1/"):
		path = "/v1" + path // a client whose base URL left out /v1
	}
	out.URL.Path, out.URL.RawPath = base+path, ""
	out.URL.RawQuery = pr.In.URL.RawQuery
	if up.RawQuery != "" {
		out.URL.RawQuery = up.RawQuery + "&" + out.URL.RawQuery
	}
	out.Host = ""
	if c.route.metered {
		out.Header.Set("Accept-Encoding", "identity")
	}
}

func (p *Proxy) modifyResponse(resp *http.Response) error {
	c := resp.Request.Context().Value(ctxKey{}).(*call)
	if !c.route.metered {
		return nil
	}
	c.status = resp.StatusCode
	if c.fitted != 0 {
		resp.Header.Set(FittedHeader, c.fitHeader())
	}
	c.upstreamOK = resp.StatusCode >= 200 && resp.StatusCode < 300
	m := &meter{}
	t := &tap{body: resp.Body, onEnd: func(t *tap) { p.finish(c, m, t, nil) },
		onUpstreamEnd: func() { p.leases.ending(c.ticket) }}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "text/event-stream":
		t.framing = framingSSE
	case mt == "application/x-ndjson" || c.route.family == Ollama && c.stream && c.upstreamOK:
		t.framing = framingNDJSON
	default:
		t.framing = framingJSON
	}
	switch c.route.family {
	case Anthropic:
		t.onData = func(d []byte) bool { m.anthropicSSE(d); return false }
		t.onJSON = m.anthropicJSON
	case OpenAI:
		if c.route.name == "responses" {
			t.onData = func(d []byte) bool { m.responsesSSE(d); return false }
		} else {
			t.onData = m.openAIChatSSE
		}
		t.onJSON = m.openAIJSON
	case Ollama:
		t.onData = func(d []byte) bool { m.ollama(d); return false }
		t.onJSON = m.ollama
	case Gemini:
		t.onData = func(d []byte) bool { m.gemini(d); return false }
		t.onJSON = m.geminiJSON
	}
	if c.injected && t.framing == framingSSE {
		t.dropUsageOnly = true
		resp.Header.Del("Content-Length")
	}
	resp.Body = t
	return nil
}

// upstreamError answers a call the upstream never answered.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	c, _ := r.Context().Value(ctxKey{}).(*call)
	if c == nil {
		writeError(w, familyOf(r.URL.Path), errUpstream, "joule proxy: upstream failed: "+err.Error())
		return
	}
	kind, what := errUpstream, "the upstream could not be reached"
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled) || r.Context().Err() != nil:
		what = "the client went away before the upstream answered"
	case errors.As(err, &ne) && ne.Timeout():
		kind, what = errTimeout, "the upstream did not answer in time"
	}
	up := p.up[c.route.family]
	if c.route.metered {
		p.leases.ending(c.ticket)
	}
	writeError(w, c.route.family, kind, fmt.Sprintf("joule proxy: %s (%s %s): %v", what, c.route.family, up.Host, err))
	if c.route.metered {
		p.finish(c, &meter{}, nil, fmt.Errorf("%s: %v", what, err))
	}
}

// A finished call's receipt is sealed in the background, so that a call's
// latency never includes the store's fsyncs. One sealing loop at a time
// takes every finished call queued (up to store.MaxSealBatch), journals what
// their receipts will say in one write, and seals them in one transaction
// (store.SealBatch): a burst of calls costs one goroutine, one journal write
// and one fsync, not one of each per call.
//
// Nothing is lost by answering first. Until its receipt is sealed, the
// call's estimate stays held in its lease, a durable reservation in the
// store, so no other call, here or in another process, can spend it. Close
// (which joule proxy runs on SIGINT and SIGTERM) waits for every receipt.
// A proxy killed outright has journaled each receipt before sealing it
// (journal.go): the next proxy seals what it finds there, and gives the
// lease back. The answered calls awaiting a receipt are bounded by
// MaxUnsealed plus those whose handlers are waiting in enqueue, at most one
// per client connection, since a waiting handler's connection serves
// nothing more until a receipt is sealed.

// sealJob is a finished call waiting for its receipt.
type sealJob struct {
	c *call
	// rec is the receipt with its draw on the call's lease.
	rec energy.Record
	// failed is why charging the lease failed, if it did: the receipt is
	// then sealed without the draw, saying so.
	failed error
}

// alone is j's receipt without its draw, for when its lease is gone.
func (j *sealJob) alone() energy.Record {
	r := j.rec
	r.Draw = nil
	r.Note = strings.TrimSpace(r.Note + "; charging the call's lease failed: " + j.failed.Error())
	return r
}

// sealQueue holds the finished calls not yet taken by the sealing loop.
type sealQueue struct {
	mu      sync.Mutex
	jobs    []*sealJob
	running bool            // a sealing loop is running; it ends when it finds jobs empty
	full    chan struct{}   // wakes a lingering loop when wakeAt calls are queued
	wakeAt  int             // half of MaxUnsealed, so that no handler waits in enqueue for a lingering loop
	recs    []energy.Record // the running loop's buffer for a round's records
}

// sealLinger is how long the sealing loop lets a backlog build up between
// rounds while calls end faster than it seals them one round at a time: a
// receipt then covers the session's calls of the last tens of milliseconds
// (energy.Recorder.SealBatch), and the signature, the log entry and the
// transaction that each round costs are shared by that many calls. A call
// that ends alone is sealed at once. A call waiting meanwhile holds its
// estimate in its lease and is already journaled (journal.go), so nothing
// is at risk for the wait.
const sealLinger = 50 * time.Millisecond

// enqueue queues a finished call's receipt, waiting while MaxUnsealed are.
func (p *Proxy) enqueue(j *sealJob) {
	p.unsealed <- struct{}{}
	q := &p.sq
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	start := !q.running
	q.running = true
	if len(q.jobs) >= q.wakeAt {
		select {
		case q.full <- struct{}{}:
		default:
		}
	}
	q.mu.Unlock()
	if start {
		go p.sealLoop()
	}
}

// sealLoop seals queued receipts until none are left, lingering between
// rounds that found more than one.
func (p *Proxy) sealLoop() {
	q := &p.sq
	var linger *time.Timer
	for lingering := false; ; {
		if lingering {
			if linger == nil {
				linger = time.NewTimer(sealLinger)
			} else {
				linger.Reset(sealLinger)
			}
			select {
			case <-linger.C:
			case <-q.full:
				linger.Stop()
			}
		}
		q.mu.Lock()
		n := min(len(q.jobs), store.MaxSealBatch)
		if n == 0 {
			q.jobs, q.running = nil, false
			q.mu.Unlock()
			return
		}
		jobs := q.jobs[:n:n]
		q.jobs = q.jobs[n:]
		q.mu.Unlock()
		p.sealJobs(jobs)
		lingering = n > 1 && n < q.wakeAt
	}
}

// sealJobs charges and seals the receipts of finished calls, each in its
// session's chain.
func (p *Proxy) sealJobs(jobs []*sealJob) {
	defer func() {
		for range jobs {
			<-p.unsealed
			p.inflight.Done()
		}
	}()
	if p.beforeSeal != nil {
		p.beforeSeal()
	}
	// The clients may be gone; the ledger and the receipts must not be.
	ctx := context.Background()
	// recs is the sealing loop's own buffer: a round's records are tens of
	// kB, which a fresh slice per round would take from the collector.
	recs := p.sq.recs[:0]
	for _, j := range jobs {
		recs = append(recs, j.rec)
	}
	p.sq.recs = recs
	if p.journal != nil {
		// What the calls used replaces, in the journal, the worst cases
		// written when they were admitted.
		if err := p.journal.beginAll(journaled(recs)); err != nil {
			p.logf("journal: %v", err)
		}
	}
	// Charge and seal in one transaction; only if that fails for a reason
	// other than the lock (the lease is gone) is a receipt sealed alone,
	// saying so.
	entries, effs, errs := p.sealRecords(ctx, recs)
	var again []energy.Record
	var at []int
	for i, j := range jobs {
		if errs[i] != nil && !errors.Is(errs[i], store.ErrLocked) {
			p.logf("charge lease %d with its receipt: %v", j.c.ticket.l.id, errs[i])
			j.failed = errs[i]
			again, at = append(again, j.alone()), append(at, i)
		}
		p.leases.done(j.c.ticket, errs[i] == nil)
	}
	if len(again) > 0 {
		e2, eff2, err2 := p.sealRecords(ctx, again)
		for k, i := range at {
			entries[i], effs[i], errs[i] = e2[k], eff2[k], err2[k]
		}
	}
	var done []string
	for i, j := range jobs {
		if errs[i] == nil && j.rec.Nonce != "" {
			done = append(done, j.rec.Nonce)
		}
	}
	if p.journal != nil && len(done) > 0 {
		if err := p.journal.doneAll(done); err != nil {
			p.logf("journal: %v", err)
		}
	}
	told := map[*receipts.Efficiency]bool{}
	for i, j := range jobs {
		c, rec, e, eff := j.c, j.rec, entries[i], effs[i]
		if errs[i] != nil {
			p.logf("seal receipt for session %s: %v", c.session, errs[i])
			continue
		}
		first := !told[eff] // calls sealed together share one receipt
		told[eff] = true
		if p.cfg.Logf != nil {
			p.logf("sealed %s %s session=%s seq=%d model=%s in=%d cached=%d write=%d out=%d %s %s %s in %v",
				c.route.family, c.route.name, c.session, e.Seq, rec.Model, rec.Usage.Input, rec.Usage.CachedInput,
				rec.Usage.CacheWrite, rec.Usage.Output, grant.FormatEnergy(rec.Estimate.UJ), rec.Estimate.Provenance, eff.Status,
				rec.Time.Sub(c.start).Round(time.Millisecond))
		}
		if p.cfg.Sealed != nil && first {
			p.cfg.Sealed(e, eff)
		}
	}
}

// sealRecords seals recs, in order. A burst of calls queues on the store's
// write lock, so the receipts a lock timeout kept out are retried
// (retryLocked) rather than lost.
func (p *Proxy) sealRecords(ctx context.Context, recs []energy.Record) ([]store.Entry, []*receipts.Efficiency, []error) {
	var (
		entries []store.Entry
		effs    []*receipts.Efficiency
		errs    []error
		todo    = recs // what is still to seal
		at      []int  // at[k] is todo[k]'s index in recs; nil on the first try
	)
	retryLocked(func() error {
		e, eff, err := p.cfg.Recorder.SealBatch(ctx, todo)
		if at == nil { // the first try: its answers are the round's, but for those to retry
			entries, effs, errs = e, eff, err
		}
		var locked []energy.Record
		var lockedAt []int
		for k := range todo {
			i := k
			if at != nil {
				i = at[k]
				entries[i], effs[i], errs[i] = e[k], eff[k], err[k]
			}
			if errors.Is(err[k], store.ErrLocked) {
				locked, lockedAt = append(locked, todo[k]), append(lockedAt, i)
			}
		}
		if todo, at = locked, lockedAt; len(todo) > 0 {
			return errs[at[0]]
		}
		return nil
	})
	return entries, effs, errs
}

// journaled is recs but those without a nonce, which were not journaled
// when they were admitted: recs itself when all have one.
func journaled(recs []energy.Record) []energy.Record {
	for i := range recs {
		if recs[i].Nonce == "" {
			var out []energy.Record
			for _, r := range recs {
				if r.Nonce != "" {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return recs
}

// journalStart journals an admitted call before it is forwarded, as the
// receipt it gets if this process dies before the call ends: incomplete,
// charged its whole reserved estimate, since what it used is unknown. The
// client can have its last byte before the receipt of what the call did use
// is journaled; this line is why a kill in between loses nothing either.
func (p *Proxy) journalStart(c *call) {
	if p.journal == nil {
		return
	}
	nonce, err := core.NewNonce()
	if err != nil {
		p.logf("journal: %v", err)
		return
	}
	c.nonce = nonce
	rec := energy.Record{
		Session: c.session, Unit: "model-call", Model: c.model,
		Estimate: energy.Estimate{UJ: c.reserved, Provenance: core.Estimator}, Coverage: receipts.CoverageEnforced,
		Note:   "the proxy stopped before this call ended: its usage is unknown, and it is charged its reserved estimate",
		Grants: c.grants, Time: c.start, Draw: c.ticket.draw(c.reserved), Nonce: nonce,
	}
	if err := p.journal.begin(rec); err != nil {
		p.logf("journal: %v", err)
	}
}

// finish settles the call's reservation to what it used and seals its
// receipt, exactly once, whatever way the call ended: it queues the receipt
// for the sealing loop, which marks the call done once it is sealed.
func (p *Proxy) finish(c *call, m *meter, t *tap, failure error) {
	c.once.Do(func() {
		p.leases.ending(c.ticket)
		rec, settle := p.account(c, m, t, failure)
		j := &sealJob{c: c, rec: rec}
		j.rec.Draw = c.ticket.draw(settle)
		if p.journal != nil && c.nonce != "" {
			j.rec.Nonce = c.nonce
		}
		p.enqueue(j)
	})
}

// account turns what was seen into a receipt and the amount to settle.
// A call that was cut is never recorded as zero: what the provider reported
// stands, and what it did not is estimated (energy.md §4.7).
func (p *Proxy) account(c *call, m *meter, t *tap, failure error) (energy.Record, uint64) {
	model := c.model
	if m.model != "" {
		model = m.model
	}
	u := m.usage
	var notes []string
	if m.requestID != "" {
		notes = append(notes, "request "+m.requestID)
	}
	estimated := false
	// Complete means the call ran to its end; counts the provider left out
	// are estimated below and say so in the note.
	complete := failure == nil && c.upstreamOK && m.done && m.errMsg == "" && !m.truncated
	if t != nil && t.readErr == nil && !t.eof && !m.done {
		complete = false
	}
	sentToModel := failure == nil || !strings.HasPrefix(failure.Error(), "the upstream could not be reached")
	switch {
	case failure != nil:
		notes = append(notes, failure.Error())
	case !c.upstreamOK:
		msg := fmt.Sprintf("upstream answered HTTP %d", c.status)
		if m.errMsg != "" {
			msg += " " + m.errMsg
		}
		notes = append(notes, msg)
		sentToModel = false // the provider refused the call: nothing ran
	case m.errMsg != "":
		notes = append(notes, "upstream error: "+m.errMsg)
	case m.truncated:
		notes = append(notes, "the response ended incomplete")
	case t != nil && t.readErr != nil:
		notes = append(notes, fmt.Sprintf("the upstream stream broke after %d bytes: %v", t.bytes, t.readErr))
	case t != nil && !t.eof:
		notes = append(notes, fmt.Sprintf("the client went away after %d bytes", t.bytes))
	case !m.done:
		notes = append(notes, "the response ended without its final usage")
	}
	if sentToModel {
		if !m.haveInput {
			u.Input, estimated = c.inputEst, true
			notes = append(notes, "input estimated from the request size")
		}
		streamed := (m.textChars + 3) / 4
		switch {
		case !m.haveOutput && streamed > 0:
			u.Output, estimated = max(u.Output, streamed), true
			notes = append(notes, "output estimated from the streamed text")
		case m.haveOutput && u.Output == 0 && streamed > 0:
			u.Output, estimated = streamed, true
			notes = append(notes, fmt.Sprintf("upstream reported 0 output tokens for %d streamed characters; output estimated", m.textChars))
		case !complete && u.Output < streamed:
			u.Output, estimated = streamed, true
		}
	} else {
		u = energy.Usage{}
	}
	est := p.models.get(model).energy(u)
	if estimated && !u.Zero() {
		est.Provenance = core.Estimator
	}
	notes = append(notes, fmt.Sprintf("%s %s via joule proxy; %s", c.route.family, c.route.name, est.Basis))
	rec := energy.Record{
		Session: c.session, Unit: "model-call", Model: model, Usage: u, Estimate: est,
		Coverage: receipts.CoverageEnforced, Complete: complete, Note: strings.Join(notes, "; "),
		Grants: c.grants, Time: time.Now(),
	}
	if c.fitted != 0 {
		rec.MaxOutputRequested, rec.MaxOutputFitted = c.want, c.fitted
		rec.Note = c.fitHeader() + " to the budget; " + rec.Note
	}
	return rec, energy.Cap(est.UJ)
}

// SuggestedBudget is the budget a refusal suggests at least: a day of
// frontier-model work through the proxy (docs/meter.md).
const SuggestedBudget = grant.DayBudget

// suggestBudget is a budget that pays for a day of work and for many
// calls like this one, in whole MJ.
func suggestBudget(need uint64) string {
	uj := max(SuggestedBudget, energy.Cap(need)/1000*1000*100)
	return fmt.Sprintf("%dMJ", (uj+999_999_999_999)/1_000_000_000_000)
}

// retryLocked runs fn until it succeeds, fails other than by the store's
// lock timeout, or lockedRetryFor has passed.
func retryLocked(fn func() error) error {
	deadline := time.Now().Add(lockedRetryFor)
	for {
		err := fn()
		if err == nil || !errors.Is(err, store.ErrLocked) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refusalCode is the decision code of a call refused because no grant
// chain is in force for it.
func refusalCode(err error) string {
	switch {
	case errors.Is(err, grant.ErrExpired):
		return "grant-expired"
	case errors.Is(err, grant.ErrNotYet):
		return "grant-not-yet-valid"
	case errors.Is(err, grant.ErrWrongUser):
		return "grant-subject-mismatch"
	case errors.Is(err, store.ErrRevoked):
		return "grant-revoked"
	case errors.Is(err, store.ErrNotFound):
		return "no-active-grant"
	}
	return "grant-invalid"
}
