package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hosts"
	"github.com/joulehook/joule/tiers/config"
)

func init() {
	register(&command{name: "serve", summary: "answer Claude Code's http hooks on loopback (resident mode: no process per decision)", run: runServe})
}

// serveHeaderTimeout bounds how long joule serve waits for a request's
// header once its first byte arrived.
const serveHeaderTimeout = time.Minute

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "serve", `serve [--addr 127.0.0.1:PORT]

Answers Claude Code's http hooks at POST /hooks/claude-code/contain on a
loopback address, so a decision costs no process start: as 'joule hook
claude-code --contain' does, the Bash commands it allows come back
rewritten to run under joule exec. /hooks/claude-code/no-contain answers
as --no-contain does, /hooks/claude-code as joule hook does without
either. Every request must carry the
bearer token that 'joule install claude-code --resident' wrote to
$JOULE_HOME/`+config.ServeFile+`. GET /healthz answers 200. Decisions are the same
as joule hook's, sealed the same way.`)
	addr := fs.String("addr", "", "loopback address to listen on (default: the one in "+config.ServeFile+", else "+config.DefaultServeAddr+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	home, err := identity.Home()
	if err != nil {
		return err
	}
	cfg, err := config.LoadServe(home)
	if errors.Is(err, os.ErrNotExist) {
		return withHint(fmt.Errorf("no %s in %s: no bearer token yet", config.ServeFile, home), "run 'joule install claude-code --resident --project' (or --user) first")
	}
	if err != nil {
		return err
	}
	if *addr != "" {
		cfg.Addr = *addr
	}
	if cfg.Addr == "" {
		cfg.Addr = config.DefaultServeAddr
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return err
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	g, err := ep.gate()
	if err != nil {
		return err
	}
	ln, err := listenOn(cfg.Addr, serveMoveHint(home))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// A header timeout closes the connection without an answer, which
	// Claude Code reads as a failed hook, not a deny. It runs from the
	// request's first byte, but a goroutine that reads it late on a loaded
	// machine (hundreds of hooks at once) still times out: it is generous,
	// a bound on a client that never finishes its header, not a deadline.
	srv := &http.Server{Handler: hookHandler(g, gateContainment(ep.home), cfg.Token), ReadHeaderTimeout: serveHeaderTimeout}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	for _, h := range hosts.Names(isResident) {
		fmt.Fprintf(e.stderr, "joule: serving http://%s%s\n", ln.Addr(), hook.ResidentPath(h, hook.Contained))
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveMoveHint says how to move joule serve to another port: the hooks
// name its address, so each resident install is run again with --addr.
func serveMoveHint(home string) string {
	var again []string
	recs, _ := hook.LoadRecords(home)
	for _, r := range recs {
		if residentRecord(r) {
			again = append(again, installAgain(r)+" --addr 127.0.0.1:PORT")
		}
	}
	if len(again) == 0 {
		again = []string{"joule install claude-code --project --resident --addr 127.0.0.1:PORT"}
	}
	return "move the resident gate: its hooks name the port, so run " + strings.Join(again, "; ") + "; then joule serve"
}

// checkLoopback refuses any address a non-local peer could reach.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("address %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return usagef("address %q is not a loopback address: joule serve listens on 127.0.0.1 or ::1 only", addr)
	}
	return nil
}

// isResident reports a host whose http hooks joule serve answers.
func isResident(h hook.Host) bool { return h.Resident && h.Adapter != nil }

// hookHandler answers /hooks/HOST for each resident host (Claude Code),
// and /hooks/HOST/contain and /hooks/HOST/no-contain in those modes, with
// contain's containment (as joule hook --contain, --no-contain). A
// request without the token is 401 (Claude Code counts that as a failed
// hook, which onFailure: block turns into a block); every request with it
// gets the host's decision.
func hookHandler(g *gate.Gate, contain func(host, mode string) (*gate.Containment, error), token string) http.Handler {
	mux := http.NewServeMux()
	want := []byte("Bearer " + token)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	for _, h := range hosts.All() {
		if !isResident(h) {
			continue
		}
		for _, mode := range []hook.ContainMode{"", hook.Contained, hook.NoContain} {
			mux.HandleFunc("POST "+hook.ResidentPath(h.Name, mode), func(w http.ResponseWriter, r *http.Request) {
				if token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
					http.Error(w, "joule: missing or wrong bearer token", http.StatusUnauthorized)
					return
				}
				out := answerHTTP(r, h, g, contain, string(mode))
				w.Header().Set("Content-Type", "application/json")
				body := out.Stdout
				if len(strings.TrimSpace(string(body))) == 0 {
					body = []byte("{}\n")
				}
				w.Write(body)
			})
		}
	}
	return mux
}

// answerHTTP decides one http hook request for h in mode, failing closed.
func answerHTTP(r *http.Request, h hook.Host, g *gate.Gate, contain func(host, mode string) (*gate.Containment, error), mode string) hook.Output {
	a := h.Adapter("")
	var d hook.Decider = g
	if mode != "" {
		c, err := contain(h.Name, mode)
		if err != nil {
			return hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, err.Error()))
		}
		d = gate.Contained{Gate: g, C: c}
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, hook.MaxPayload+1))
	if err != nil {
		return hook.Fallback(a, nil, hook.Deny(gate.CodeMalformed, "joule cannot read this "+h.Name+" hook request: "+err.Error()))
	}
	return hook.Run(r.Context(), a, d, b)
}
