// Package ui is joule's local web dashboard (`joule ui`): the sessions,
// their receipt chains with each receipt's verdict and Merkle inclusion
// proof, the joules by tier and provenance, the cascade's savings, and the
// grants, read from the same store as every other command and served on
// loopback only, behind a per-start token, read-only. The page (HTML, CSS,
// JavaScript, its SVG charts drawn from the data) is embedded in the
// binary: nothing is fetched at run time.
package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

//go:embed assets/index.html
var indexHTML string

//go:embed assets/app.css
var appCSS string

//go:embed assets/app.js
var appJS string

// Config is what the dashboard reads and how it is guarded.
type Config struct {
	Store *store.Store
	Keys  receipts.Keys // every trusted steward's receipt key
	Trust grant.Trust   // the trusted grant issuers
	// VerifierKey is the endpoint's signed-note verifier key, which signs
	// the log's checkpoints.
	VerifierKey string
	Steward     string
	// ActiveChain returns the ids of the session's active grant chain,
	// root first (the gate's ActiveChain); nil when there is none.
	ActiveChain func(ctx context.Context, session string) ([]string, error)
	// TrustState returns the grant trust state the signed trust chain
	// says (the gate's TrustState): which grant is active and which are
	// revoked. Nil: none is shown active.
	TrustState func(ctx context.Context) (*trust.Grants, error)
	// Token is the per-start secret every request must carry.
	Token string
	// Poll is how often live updates check the log size (default 500ms).
	Poll time.Duration
}

// Server is the dashboard's HTTP handler.
type Server struct {
	cfg  Config
	idx  *index
	page []byte
	mux  *http.ServeMux
}

// NewToken returns a fresh random token for one start of the server.
func NewToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// CheckAddr refuses a listen address that is not a loopback IP and port.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want 127.0.0.1:PORT or [::1]:PORT (%v)", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("--addr %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: joule ui listens on loopback only (127.0.0.1, ::1 or localhost), never on %q", addr, host)
	}
	return nil
}

// New returns the dashboard for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Token == "" {
		return nil, errors.New("ui: a store and a token are required")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	s := &Server{cfg: cfg, idx: newIndex(cfg.Store, cfg.Keys, 2*time.Second), mux: http.NewServeMux()}
	page := strings.Replace(indexHTML, "/*CSS*/", appCSS, 1)
	page = strings.Replace(page, "/*JS*/", appJS, 1)
	s.page = []byte(page)
	s.mux.HandleFunc("/", s.handleIndex)
	s.mux.HandleFunc("/api/overview", s.api(s.overview))
	s.mux.HandleFunc("/api/sessions", s.api(s.sessions))
	s.mux.HandleFunc("/api/session", s.api(s.session))
	s.mux.HandleFunc("/api/chain", s.api(s.chain))
	s.mux.HandleFunc("/api/receipt", s.api(s.receipt))
	s.mux.HandleFunc("/api/grants", s.api(s.grants))
	s.mux.HandleFunc("/api/events", s.events)
	return s, nil
}

// Warm indexes every session in the background, oldest first, so the
// sessions view has their figures at hand; it returns when ctx ends or
// every session is indexed.
func (s *Server) Warm(ctx context.Context) {
	list, err := s.cfg.Store.Sessions(ctx)
	if err != nil {
		return
	}
	for i := len(list) - 1; i >= 0 && ctx.Err() == nil; i-- {
		if sess, err := s.idx.get(ctx, list[i].ID); err == nil {
			sess.mu.Unlock()
		}
	}
}

// ServeHTTP checks the Host, the Origin, the method and the token before
// anything is served.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			// Never a stack trace: the page shows this message.
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", p))
		}
	}()
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	if !loopbackHost(r.Host) {
		writeError(w, http.StatusForbidden, "the Host header must name this loopback server (127.0.0.1, [::1] or localhost)")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		writeError(w, http.StatusForbidden, "cross-origin requests are refused")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "joule ui is read-only")
		return
	}
	tok := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		tok = strings.TrimPrefix(h, "Bearer ")
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="joule ui"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong token: open the URL joule ui printed")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		writeError(w, http.StatusNotFound, "no such page: "+r.URL.Path)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self' vscode-webview:")
	w.Write(s.page)
}

// httpError is an error with the status the API answers it with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func (s *Server) api(fn func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		v, err := fn(r.WithContext(ctx))
		if err != nil {
			code, msg := http.StatusInternalServerError, err.Error()
			var he *httpError
			switch {
			case errors.As(err, &he):
				code = he.code
			case errors.Is(err, errUnknownSession):
				code = http.StatusNotFound
			case errors.Is(err, store.ErrLocked), errors.Is(err, context.DeadlineExceeded):
				code, msg = http.StatusServiceUnavailable, "the store is busy or locked: "+msg
			case errors.Is(err, store.ErrCorrupt):
				msg = "the store is damaged (run joule store check): " + msg
			default:
				code, msg = http.StatusServiceUnavailable, "the store cannot be read: "+msg
			}
			writeError(w, code, msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// query parameters

func sessionParam(r *http.Request) (string, error) {
	id := r.URL.Query().Get("id")
	if id == "" {
		return "", badRequest("want a session id (?id=SESSION)")
	}
	if len(id) > 256 || strings.ContainsAny(id, "\x00\n\r") {
		return "", badRequest("the session id %.40q is not a session id", id)
	}
	return id, nil
}

func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s=%.40q: want a whole number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

// SessionSummary is one line of the sessions view.
type SessionSummary struct {
	ID       string `json:"id"`
	Receipts uint64 `json:"receipts"`
	First    int64  `json:"first_ms"`
	Last     int64  `json:"last_ms"`
	Stats    *Stats `json:"stats,omitempty"` // nil until the session is indexed
}

func (s *Server) overview(r *http.Request) (any, error) {
	size, err := s.cfg.Store.LogSize(r.Context())
	if err != nil {
		return nil, err
	}
	out := map[string]any{"log_size": size, "steward": s.cfg.Steward}
	if text, cp, err := s.latestCheckpoint(r.Context()); err == nil && text != nil {
		out["checkpoint_size"] = cp.Size
	}
	return out, nil
}

func (s *Server) sessions(r *http.Request) (any, error) {
	offset, err := intParam(r, "offset", 0, 0, 1<<40)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		return nil, err
	}
	list, err := s.cfg.Store.Sessions(r.Context())
	if err != nil {
		return nil, err
	}
	// Newest activity first.
	sort.SliceStable(list, func(i, j int) bool { return list[i].Last.After(list[j].Last) })
	out := []SessionSummary{}
	for i := int(offset); i < len(list) && i < int(offset+limit); i++ {
		si := list[i]
		sum := SessionSummary{ID: si.ID, Receipts: si.Count, First: si.First.UnixMilli(), Last: si.Last.UnixMilli()}
		if st, ok := s.idx.cached(si.ID); ok && uint64(st.Receipts) == si.Count {
			sum.Stats = &st
		}
		out = append(out, sum)
	}
	return map[string]any{"total": len(list), "offset": offset, "sessions": out}, nil
}

// GrantUse is one grant a session's receipts name, with what it has left.
type GrantUse struct {
	ID         string `json:"id"`
	BudgetUJ   uint64 `json:"budget_uj"`
	SpentUJ    uint64 `json:"spent_uj"`
	ReservedUJ uint64 `json:"reserved_uj"`
	LeftUJ     uint64 `json:"left_uj"`
	Revoked    bool   `json:"revoked"`
	Error      string `json:"error,omitempty"`
}

func (s *Server) session(r *http.Request) (any, error) {
	id, err := sessionParam(r)
	if err != nil {
		return nil, err
	}
	sess, err := s.idx.get(r.Context(), id)
	if err != nil {
		return nil, err
	}
	st := sess.stats.clone()
	casc := cascadeOf(sess.rows)
	chart := chartOf(sess.rows, 48)
	sess.mu.Unlock()
	ctx := r.Context()
	uses := []GrantUse{}
	for _, g := range st.Grants {
		rec, err := s.cfg.Store.Grant(ctx, g)
		if err != nil {
			uses = append(uses, GrantUse{ID: g, Error: err.Error()})
			continue
		}
		uses = append(uses, GrantUse{ID: g, BudgetUJ: rec.BudgetUJ, SpentUJ: rec.SpentUJ, ReservedUJ: rec.ReservedUJ, LeftUJ: rec.RemainingUJ(), Revoked: rec.Revoked})
	}
	out := map[string]any{"id": id, "stats": st, "grants": uses, "cascade": casc, "chart": chart, "status_line": statusLine(st)}
	// Budget left as `joule statusline` says it: the least any link of
	// the session's active chain has left.
	left := "no grant"
	if s.cfg.ActiveChain != nil {
		if chain, err := s.cfg.ActiveChain(ctx, id); err != nil {
			left = "no active grant"
		} else {
			var min uint64
			for i, g := range chain {
				rec, err := s.cfg.Store.Grant(ctx, g)
				if err != nil {
					left = "budget unknown"
					break
				}
				if rem := rec.RemainingUJ(); i == 0 || rem < min {
					min = rem
				}
				left = grant.FormatEnergy(min) + " left"
			}
			out["active_chain"] = chain
		}
	}
	out["budget_left"] = left
	return out, nil
}

// statusLine is the figures `joule statusline` prints for the session,
// formatted the same way, so a reader can compare them.
func statusLine(st Stats) map[string]string {
	energy := grant.FormatEnergy(st.Measured + st.Modelled + st.Estimated)
	var split []string
	for _, p := range []struct {
		uj   uint64
		name string
	}{{st.Measured, "measured"}, {st.Modelled, "modelled"}, {st.Estimated, "estimated"}} {
		if p.uj > 0 {
			split = append(split, grant.FormatEnergy(p.uj)+" "+p.name)
		}
	}
	if len(split) > 0 {
		energy += " (" + strings.Join(split, ", ") + ")"
	}
	dec := fmt.Sprintf("%d allowed · %d denied", st.Allowed, st.Denied)
	if st.Asked > 0 {
		dec += fmt.Sprintf(" · %d asked", st.Asked)
	}
	return map[string]string{"energy": energy, "decisions": dec, "observed": grant.FormatEnergy(st.Observed)}
}

// Chart is the session's joules over time, stacked by tier.
type Chart struct {
	StartMS  uint64              `json:"start_ms"`
	BucketMS uint64              `json:"bucket_ms"`
	Series   map[string][]uint64 `json:"series"` // category → µJ per bucket
}

func chartOf(rows []Row, buckets int) Chart {
	c := Chart{Series: map[string][]uint64{}}
	var lo, hi uint64
	for i := range rows {
		t := rows[i].TimeMS
		if !rows[i].signed {
			continue
		}
		if lo == 0 || t < lo {
			lo = t
		}
		if t > hi {
			hi = t
		}
	}
	if lo == 0 {
		return c
	}
	width := (hi-lo)/uint64(buckets) + 1
	c.StartMS, c.BucketMS = lo, width
	for i := range rows {
		r := &rows[i]
		if !r.signed || r.UJ == 0 {
			continue
		}
		ser := c.Series[r.Category]
		if ser == nil {
			ser = make([]uint64, buckets)
			c.Series[r.Category] = ser
		}
		ser[(r.TimeMS-lo)/width] += r.UJ
	}
	return c
}

func (s *Server) chain(r *http.Request) (any, error) {
	id, err := sessionParam(r)
	if err != nil {
		return nil, err
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<40)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		return nil, err
	}
	sess, err := s.idx.get(r.Context(), id)
	if err != nil {
		return nil, err
	}
	defer sess.mu.Unlock()
	total := len(sess.rows)
	end := min(int(offset+limit), total)
	rows := []Row{}
	if int(offset) < total {
		rows = append(rows, sess.rows[offset:end]...)
	}
	return map[string]any{"id": id, "total": total, "offset": offset, "rows": rows, "damaged": sess.stats.Damaged, "first_bad": sess.stats.FirstBad, "first_bad_verdict": sess.stats.FirstBadWhy}, nil
}
