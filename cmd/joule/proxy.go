package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/energy/otlp"
	"github.com/joulehook/joule/energy/proxy"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/tiers/config"
)

func init() {
	register(&command{name: "proxy", summary: "meter model calls at a base URL: fit each call to the budget, seal an efficiency receipt per call", run: runProxy})
	register(&command{name: "otel", summary: "receive OTLP/HTTP telemetry and seal observed (not enforced) efficiency receipts", run: runOtel})
}

func parseUpstream(name, flagValue, fileValue, def string) (*url.URL, error) {
	s := def
	switch {
	case flagValue != "":
		s = flagValue
	case fileValue != "":
		s = fileValue
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("proxy: --%s %q is not an http(s) URL", name, s)
	}
	return u, nil
}

// grantSource returns the ids of the grant chain paying for a session:
// the session's active grant, else the global one, verified and in force.
func (ep *endpoint) grantSource() (func(ctx context.Context, session string) ([]string, error), error) {
	g, err := ep.gate()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, session string) ([]string, error) {
		chain, err := g.ActiveChain(ctx, session)
		if err != nil {
			return nil, err
		}
		if err := chain.Check(session, time.Now()); err != nil {
			return nil, err
		}
		return chain.IDs(), nil
	}, nil
}

func runProxy(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "proxy", `proxy [--listen `+proxy.DefaultListen+`] [--anthropic URL] [--openai URL] [--ollama URL] [--gemini URL] [--otlp [--otlp-token-file F]] [--session S]

A base URL for hosts (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL,
an Ollama host): it forwards the Anthropic Messages, OpenAI Chat Completions,
Responses, Embeddings and Models APIs, Ollama's /api/chat, /api/generate and
/api/embed, and the Gemini API's generateContent and streamGenerateContent,
streaming as the upstream sends. Before forwarding a model call
it reserves the call's largest cost against the active grant; when the grant
cannot pay for the whole output cap (max_tokens, maxOutputTokens, ...) it lowers the cap to
what the budget pays (X-Joule-Fitted says so), and refuses, in the
provider's own error shape, only a call not even 1,024 output tokens fit.
After, it settles to the real usage and seals an efficiency/1 receipt in
the session's chain (session from x-claude-code-session-id, else --session). Credentials
pass through untouched and are never logged or stored. With --otlp the same
listener also receives OTLP/HTTP telemetry (/v1/metrics, /v1/logs,
/v1/traces). Configuration: $JOULE_HOME/meter.json (docs/meter.md).`)
	listen := fs.String("listen", proxy.DefaultListen, "address to listen on (joule serve's resident gate is on "+config.DefaultServeAddr+")")
	anthropic := fs.String("anthropic", "", "Anthropic upstream (default "+proxy.DefaultAnthropicURL+")")
	openai := fs.String("openai", "", "OpenAI-compatible upstream, e.g. a vLLM server (default "+proxy.DefaultOpenAIURL+")")
	ollama := fs.String("ollama", "", "Ollama upstream (default "+proxy.DefaultOllamaURL+")")
	gemini := fs.String("gemini", "", "Gemini API upstream (default "+proxy.DefaultGeminiURL+")")
	withOTLP := fs.Bool("otlp", false, "also receive OTLP/HTTP metrics, logs and traces on the same listener")
	tokenFile := fs.String("otlp-token-file", "", "with --otlp, refuse exports without the bearer token in this file (default: $"+otlpTokenEnv+" if set)")
	session := fs.String("session", proxy.DefaultSession, "session for calls that name none in their headers")
	maxBody := fs.Int64("max-body", proxy.DefaultMaxBody, "largest request body in bytes")
	headerTimeout := fs.Duration("header-timeout", proxy.DefaultHeaderTimeout, "longest wait for an upstream's response headers")
	quiet := fs.Bool("quiet", false, "do not log one line per call to stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	m, err := openMetering()
	if err != nil {
		return err
	}
	defer m.ep.Close()
	mf, table, recorder, grants := m.meter, m.meter.Table, m.recorder, m.grants
	var ups [4]*url.URL
	for i, u := range []struct{ name, flag, file, def string }{
		{"anthropic", *anthropic, mf.Upstreams.Anthropic, proxy.DefaultAnthropicURL},
		{"openai", *openai, mf.Upstreams.OpenAI, proxy.DefaultOpenAIURL},
		{"ollama", *ollama, mf.Upstreams.Ollama, proxy.DefaultOllamaURL},
		{"gemini", *gemini, mf.Upstreams.Gemini, proxy.DefaultGeminiURL},
	} {
		if ups[i], err = parseUpstream(u.name, u.flag, u.file, u.def); err != nil {
			return err
		}
	}
	logf := newLogf(e, *quiet)
	// A proxy that was killed journaled the receipts it had answered but
	// not sealed: seal them now, and give back its leases.
	journal := filepath.Join(m.ep.home, proxy.JournalDir)
	if r, err := proxy.Recover(ctx, journal, recorder, m.ep.store); err != nil {
		return fmt.Errorf("proxy: recovering the journal of a proxy that did not shut down: %w", err)
	} else if r.Journals > 0 {
		fmt.Fprintf(e.stderr, "joule proxy: %d proxy(ies) did not shut down: sealed %d receipt(s) they had answered (%d were already sealed) and gave back %d lease(s)\n",
			r.Journals, r.Sealed, r.Already, r.Leases)
	}
	// A proxy killed without a journal left its leases reserved; no live
	// lease is this old (proxy.LeaseMaxAge), so they can only be such
	// leftovers.
	if n, err := m.ep.store.ReleaseBefore(ctx, time.Now().Add(-proxy.StaleLease)); err != nil {
		return fmt.Errorf("proxy: releasing stale leases: %w", err)
	} else if n > 0 {
		fmt.Fprintf(e.stderr, "joule proxy: released %d stale reservation(s) left by a proxy that did not shut down\n", n)
	}
	p, err := proxy.New(proxy.Config{
		Anthropic: ups[0], OpenAI: ups[1], Ollama: ups[2], Gemini: ups[3],
		Table: table, Ledger: m.ep.store, Recorder: recorder, Grants: grants,
		Session: *session, MaxBody: *maxBody, HeaderTimeout: *headerTimeout, Logf: logf,
		Journal: journal,
	})
	if err != nil {
		return err
	}
	var h http.Handler = p
	hello := proxyExports
	if *withOTLP {
		token, err := otlpToken(*tokenFile)
		if err != nil {
			return err
		}
		hello = func(addr net.Addr) string {
			return proxyExports(addr) + telemetryExports(addr, tokenRef(*tokenFile, token))
		}
		h = withTelemetry(p, &otlp.Receiver{Table: table, Recorder: recorder, Ledger: m.ep.store, Grants: grants, Session: *session, Logf: logf, Token: token, State: m.ep.store})
	} else if *tokenFile != "" {
		return usagef("proxy: --otlp-token-file needs --otlp")
	}
	// Announce the address so local tiers (L2, L3) route through the proxy.
	announce := func(addr net.Addr) func() {
		remove, err := proxy.Announce(m.ep.home, proxy.Announcement{Addr: addr.String(), PID: os.Getpid(),
			Upstreams: map[string]string{"anthropic": ups[0].String(), "openai": ups[1].String(), "ollama": ups[2].String(), "gemini": ups[3].String()}})
		if err != nil {
			fmt.Fprintf(e.stderr, "joule: proxy: cannot announce the address in %s: %v\n", m.ep.home, err)
			return func() {}
		}
		return remove
	}
	return serve(ctx, e, "proxy", *listen, h, p.Close, hello, announce)
}

func runOtel(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "otel", `otel [--listen 127.0.0.1:4318] [--session S] [--token-file FILE]

Receives OTLP/HTTP (protobuf or JSON, gzip or not) on /v1/metrics, /v1/logs
and /v1/traces, and seals each host's reported token usage
(claude_code.api_request, claude_code.token.usage, gen_ai.client.token.usage,
gen_ai.usage.* spans, Gemini CLI and Codex events) as efficiency/1 receipts
with coverage "observed": observed, not enforced. Each figure is charged to
the session's grant after the fact. Point OTEL_EXPORTER_OTLP_ENDPOINT at
http://LISTEN. With a token (--token-file, or $JOULE_OTLP_TOKEN) exports
without "Authorization: Bearer TOKEN" are refused; exporters send it with
OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer TOKEN". It prints the
variables that turn Claude Code's telemetry on and point it here
(CLAUDE_CODE_ENABLE_TELEMETRY=1, OTEL_METRICS_EXPORTER=otlp,
OTEL_LOGS_EXPORTER=otlp and the endpoint), the token as a $(cat FILE).`)
	listen := fs.String("listen", "127.0.0.1:4318", "address to listen on")
	session := fs.String("session", otlp.DefaultSession, "session for telemetry that names none")
	quiet := fs.Bool("quiet", false, "do not log one line per receipt to stderr")
	tokenFile := fs.String("token-file", "", "refuse exports without the bearer token in this file (default: $"+otlpTokenEnv+" if set)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	token, err := otlpToken(*tokenFile)
	if err != nil {
		return err
	}
	m, err := openMetering()
	if err != nil {
		return err
	}
	defer m.ep.Close()
	r := &otlp.Receiver{Table: m.meter.Table, Recorder: m.recorder, Ledger: m.ep.store, Grants: m.grants, State: m.ep.store,
		Session: *session, Logf: newLogf(e, *quiet), Token: token}
	return serve(ctx, e, "otel", *listen, r, func() {}, func(addr net.Addr) string {
		return telemetryExports(addr, tokenRef(*tokenFile, token))
	})
}

// telemetryExports are the lines that turn Claude Code's OpenTelemetry
// on and point it (or any OTLP/HTTP exporter) at addr: Claude Code sends
// nothing unless CLAUDE_CODE_ENABLE_TELEMETRY=1 and an exporter per
// signal is named. token is how the shell gets the bearer token (never
// the token itself), "" when exports need none.
func telemetryExports(addr net.Addr, token string) string {
	out := "# turn on Claude Code's telemetry and send it here (docs/meter.md); other OTLP/HTTP exporters need only the OTEL_EXPORTER_OTLP_ ones:\n" +
		"export CLAUDE_CODE_ENABLE_TELEMETRY=1 OTEL_METRICS_EXPORTER=otlp OTEL_LOGS_EXPORTER=otlp\n" +
		"export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf OTEL_EXPORTER_OTLP_ENDPOINT=" + clientURL(addr) + "\n"
	if token != "" {
		out += "export OTEL_EXPORTER_OTLP_HEADERS=\"Authorization=Bearer " + token + "\"\n"
	}
	return out
}

// tokenRef is how a shell reads the OTLP bearer token: from the token
// file, or from $JOULE_OTLP_TOKEN; "" when there is none.
func tokenRef(file, token string) string {
	switch {
	case token == "":
		return ""
	case file != "":
		abs, err := filepath.Abs(file)
		if err != nil {
			abs = file
		}
		return "$(cat " + hook.ShellQuote(abs) + ")"
	}
	return "$" + otlpTokenEnv
}

// otlpTokenEnv names the variable holding the OTLP receiver's bearer
// token when no token file is given.
const otlpTokenEnv = "JOULE_OTLP_TOKEN"

// otlpToken is the bearer token OTLP exports must carry: the token file's
// one line, else $JOULE_OTLP_TOKEN; "" when neither is set.
func otlpToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(otlpTokenEnv)), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("OTLP token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("OTLP token file %s must hold one token on one line", file)
	}
	return tok, nil
}

// metering is what both meters (the proxy and OTLP ingest) work from.
type metering struct {
	ep       *endpoint
	meter    *config.Meter
	recorder *energy.Recorder
	grants   func(ctx context.Context, session string) ([]string, error)
}

// openMetering opens $JOULE_HOME and its meter configuration; the caller
// closes m.ep.
func openMetering() (*metering, error) {
	ep, err := openEndpoint()
	if err != nil {
		return nil, err
	}
	m := &metering{ep: ep}
	if m.meter, err = config.LoadMeter(ep.home); err == nil {
		var sealer *core.Sealer
		if sealer, err = ep.id.Sealer(); err == nil {
			m.recorder = &energy.Recorder{Store: ep.store, Sealer: sealer}
			m.grants, err = ep.grantSource()
		}
	}
	if err != nil {
		ep.Close()
		return nil, err
	}
	return m, nil
}

// withTelemetry serves OTLP's paths from r and everything else from p.
func withTelemetry(p, r http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/metrics", r)
	mux.Handle("/v1/logs", r)
	mux.Handle("/v1/traces", r)
	mux.Handle("/", p)
	return mux
}

func newLogf(e *env, quiet bool) func(string, ...any) {
	if quiet {
		return nil
	}
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(e.stderr, "joule: "+format+"\n", args...)
	}
}

// serve listens, prints the address (so a script can use port 0), and
// shuts down on SIGINT or SIGTERM after calls in flight are sealed.
//
// After the "listening on" line it prints what hello returns for the
// address: the environment a client sets to use the server.
func serve(ctx context.Context, e *env, name, listen string, h http.Handler, wait func(), hello func(net.Addr) string, onListen ...func(net.Addr) (cleanup func())) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := listenOn(listen, "give joule "+name+" --listen 127.0.0.1:PORT")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 5 * time.Minute, ErrorLog: nil}
	// Announced before the address is printed: whoever reads the line can
	// rely on the announcement.
	for _, f := range onListen {
		defer f(ln.Addr())()
	}
	fmt.Fprintf(e.stdout, "joule %s listening on http://%s\n", name, ln.Addr())
	fmt.Fprint(e.stdout, hello(ln.Addr()))
	if f, ok := e.stdout.(interface{ Sync() error }); ok {
		f.Sync()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s: %w", name, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	wait()
	fmt.Fprintf(e.stderr, "joule: %s stopped\n", name)
	return nil
}

// proxyExports are the lines that point hosts at a proxy on addr. Ollama
// gets no export: OLLAMA_HOST is also the address 'ollama serve' listens
// on, so exported it would start the server on the proxy's port (address
// in use) in that shell; it is set for each client command instead.
func proxyExports(addr net.Addr) string {
	u := clientURL(addr)
	return "# point your agent at it (docs/meter.md):\n" +
		"export ANTHROPIC_BASE_URL=" + u + "\n" +
		"export OPENAI_BASE_URL=" + u + "/v1\n" +
		"# Ollama clients: per command, not exported ('ollama serve' listens on OLLAMA_HOST):\n" +
		"#   OLLAMA_HOST=" + u + " ollama run MODEL\n" +
		"export GOOGLE_GEMINI_BASE_URL=" + u + "\n"
}

// clientURL is the URL a client on this machine uses for a listener on
// addr: a wildcard address (0.0.0.0, ::) is reached on loopback.
func clientURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
