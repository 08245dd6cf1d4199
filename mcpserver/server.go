// Package mcpserver is joule's MCP server: sealed receipts, sessions, grants
// and the signing key as joule:// resources, and workspace tools that put every
// call to the gate before they run.
package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// Config is what the server needs from an opened $JOULE_HOME.
type Config struct {
	Gate     *gate.Gate
	Verifier *core.Verifier
	// Keys, when set, verifies receipts sealed by any of its stewards (a
	// team's shared log, where other machines seal too); Verifier then
	// still serves this endpoint's own key to clients.
	Keys    receipts.Keys
	Steward string
	// VerifierKey is the signed-note verifier key ("<steward>+<hash>+<key>").
	VerifierKey string
	// PublicKey is the raw Ed25519 public key.
	PublicKey []byte
	// LogOrigin names the Merkle log in its checkpoints, and NoteSigner signs
	// a fresh checkpoint when the log has grown past the latest one.
	LogOrigin  string
	NoteSigner note.Signer
	// Workspace is the directory the tools work in and are confined to.
	Workspace string
	// Session is the gate session the tool calls are decided and chained in.
	Session string
	Version string
	// Poll is how often the store is polled for new receipts while there are
	// subscribers; 200 ms when zero.
	Poll time.Duration
	// Limits bound the tools; zero fields take DefaultLimits.
	Limits Limits
}

// Limits bound what one tool call may read, return or run.
type Limits struct {
	ReadBytes      int64         // largest file read_file returns whole, and its output cap
	EditBytes      int64         // largest file edit_file rewrites or write_file writes
	ListEntries    int           // entries list_directory returns
	SearchResults  int           // default matches search returns
	SearchFileSize int64         // larger files are skipped by search
	CommandOutput  int           // bytes of run_command output kept
	CommandTimeout time.Duration // default run_command time limit
	MaxTimeout     time.Duration // longest time limit a caller may ask for
}

// DefaultLimits are the tools' limits unless Config.Limits overrides them.
var DefaultLimits = Limits{
	ReadBytes:      1 << 20,
	EditBytes:      8 << 20,
	ListEntries:    1000,
	SearchResults:  100,
	SearchFileSize: 4 << 20,
	CommandOutput:  64 << 10,
	CommandTimeout: 30 * time.Second,
	MaxTimeout:     10 * time.Minute,
}

// PageSize is how many items one page of a joule:// list resource holds.
const PageSize = 100

const instructions = "The tools read_file, write_file, edit_file, list_directory, search and run_command work in the workspace %s, and every call is first decided by the joule gate against a signed grant and budget and sealed as a signed receipt; a denied call returns an error result with the reason, and every result names its receipt. The joule:// resources show the sessions, receipts, grants, signing key and log checkpoint, so anyone can verify what was allowed and what it cost."

// Server is a joule MCP server.
type Server struct {
	cfg      Config
	ws       workspace
	store    *store.Store
	mcp      *server.MCPServer
	subs     *subscriptions
	sums     *summaries
	verified *verified
}

// New builds the server: resources, tools and subscriptions.
func New(cfg Config) (*Server, error) {
	if cfg.Gate == nil || cfg.Gate.Store == nil || cfg.Verifier == nil {
		return nil, errors.New("mcpserver: a gate with a store and a verifier are required")
	}
	if cfg.Session == "" {
		return nil, errors.New("mcpserver: a session id is required")
	}
	ws, err := newWorkspace(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Poll <= 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, ws: ws, store: cfg.Gate.Store}
	s.sums = newSummaries(s)
	s.verified = newVerified(4096)
	hooks := &server.Hooks{}
	s.mcp = server.NewMCPServer("joule", cfg.Version,
		server.WithTitle("joule: gated workspace tools and verifiable receipts"),
		server.WithInstructions(fmt.Sprintf(instructions, ws.root)),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithHooks(hooks),
		server.WithPaginationLimit(PageSize),
	)
	s.subs = newSubscriptions(s, hooks)
	s.addResources()
	s.addTools()
	return s, nil
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.ReadBytes > 0 {
		d.ReadBytes = l.ReadBytes
	}
	if l.EditBytes > 0 {
		d.EditBytes = l.EditBytes
	}
	if l.ListEntries > 0 {
		d.ListEntries = l.ListEntries
	}
	if l.SearchResults > 0 {
		d.SearchResults = l.SearchResults
	}
	if l.SearchFileSize > 0 {
		d.SearchFileSize = l.SearchFileSize
	}
	if l.CommandOutput > 0 {
		d.CommandOutput = l.CommandOutput
	}
	if l.CommandTimeout > 0 {
		d.CommandTimeout = l.CommandTimeout
	}
	if l.MaxTimeout > 0 {
		d.MaxTimeout = l.MaxTimeout
	}
	return d
}

// MCP returns the underlying mcp-go server (for in-process clients).
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Close stops the subscription poller.
func (s *Server) Close() {
	if s.subs != nil {
		s.subs.close()
	}
}

// ServeStdio serves MCP as newline-delimited JSON-RPC on r and w until ctx
// ends or r is closed. Diagnostics go to errLog.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer, errLog io.Writer) error {
	std := server.NewStdioServer(s.mcp)
	std.SetErrorLogger(log.New(errLog, "joule mcp: ", 0))
	// A slow run_command must not hold up other calls.
	server.WithWorkerPoolSize(16)(std)
	server.WithQueueSize(256)(std)
	err := std.Listen(ctx, r, w)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// HTTPPath is where the streamable HTTP transport is served.
const HTTPPath = "/mcp"

// HTTPHandler serves MCP over streamable HTTP at HTTPPath. Every request
// must carry "Authorization: Bearer token", and a request with an Origin
// header must come from a loopback origin (DNS-rebinding protection).
func (s *Server) HTTPHandler(token string) (http.Handler, error) {
	if len(token) < 16 {
		return nil, errors.New("mcpserver: the HTTP bearer token must be at least 16 characters")
	}
	h := server.NewStreamableHTTPServer(s.mcp,
		// The editors' SDKs speak the legacy era, where resources/subscribe exists.
		server.WithStreamableHTTPProtocolVersions(mcp.LegacyProtocolVersions()...),
	)
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			http.Error(w, "forbidden origin: only loopback origins may call this server", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="joule mcp"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}), nil
}

// loopbackOrigin reports whether an Origin header names a loopback host.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackHost(u.Hostname())
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// LoopbackAddr reports whether a listen address binds only loopback.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

// sessionURI is the resource URI of a session's summary. Every byte of the
// id but RFC 3986's unreserved characters is percent-encoded, so any id
// matches the URI template's {session}.
func sessionURI(session string) string { return "joule://sessions/" + escape(session) }

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// receiptURI is the resource URI of one receipt.
func receiptURI(session string, seq uint64) string {
	return fmt.Sprintf("%s/receipts/%d", sessionURI(session), seq)
}

// openReceipt verifies and decodes one envelope with the server's keys.
func (s *Server) openReceipt(envelope []byte) (*receipts.Any, error) {
	if s.cfg.Keys != nil {
		return s.cfg.Keys.Open(envelope)
	}
	return receipts.Open(s.cfg.Verifier, s.cfg.Steward, envelope)
}
