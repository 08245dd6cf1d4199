// Package acpagent is joule's Agent Client Protocol agent: it serves an
// editor (Zed, JetBrains, Neovim) over stdio and closes each prompt with the
// gated, energy-tiered cascade, sealing every change as a signed coding op.
package acpagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l0"
	"github.com/joulehook/joule/tiers/l1"
	"github.com/joulehook/joule/tiers/l3"
	"github.com/joulehook/joule/tiers/l4"
)

// Options configure an Agent.
type Options struct {
	Gate    *gate.Gate         // decides writes and tier consultations, seals every receipt
	Key     ed25519.PrivateKey // the endpoint key: author of every op
	Cache   *l0.Cache          // nil: no L0
	NoL1    bool               // L1 is turned off in the tiers config
	Remote  RemoteStage        // nil: no L4
	Index   *Indexes           // nil: no L2
	Local   *l3.Stage          // nil: no L3; each turn runs a copy reading the turn's tree
	OpsDir  string             // where JCR-1 receipts of applied ops are kept; "" keeps none
	Metered bool               // the remote agent's model calls go through joule proxy
	Version string
	Log     *slog.Logger

	// SessionsDir keeps a mark for each session id this endpoint issued, so
	// that session/load finds a session with nothing sealed yet (an editor
	// that restarts the agent between session/new and the first prompt, as
	// acpx's session owner does); "" keeps none.
	SessionsDir string
}

// RemoteStage is the L4 tier as the agent uses it: a stage bound to the
// prompt turn, through which it relays updates and asks for permission.
// *l4.Remote implements it.
type RemoteStage interface {
	Stage(editor l4.Editor) tiers.Stage
}

// Agent is the ACP agent.
type Agent struct {
	opt   Options
	conn  *acp.AgentSideConnection // set once by Serve, then ready is closed
	ready chan struct{}

	// prompts are the turns running; Serve waits for them when the editor
	// goes away, so a remote agent's process group is ended (not orphaned).
	prompts sync.WaitGroup

	mu       sync.Mutex
	caps     acp.ClientCapabilities
	sessions map[acp.SessionId]*session
}

type session struct {
	id  acp.SessionId
	cwd string
	// disk reads the workspace for each turn, reading and hashing again
	// only the files that changed since the last.
	disk *core.DirCache

	mu      sync.Mutex
	running bool
}

var (
	_ acp.Agent       = (*Agent)(nil)
	_ acp.AgentLoader = (*Agent)(nil)
)

// New returns an agent; Serve connects it.
func New(opt Options) *Agent {
	if opt.Log == nil {
		opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Agent{opt: opt, sessions: map[acp.SessionId]*session{}, ready: make(chan struct{})}
}

// Serve runs the agent on one connection (r from the editor, w to it) until
// the editor disconnects or ctx ends.
func (a *Agent) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	// The SDK reads (and may dispatch) from the constructor on, so handlers
	// reach the connection through connection(), which waits for it.
	conn := acp.NewAgentSideConnection(a, w, r)
	conn.SetLogger(a.opt.Log)
	a.conn = conn
	close(a.ready)
	var err error
	select {
	case <-conn.Done():
	case <-ctx.Done():
		err = ctx.Err()
	}
	// The connection's end cancels the running prompts' contexts; each
	// then stops what it started (L4: the remote agent's process group).
	done := make(chan struct{})
	go func() { a.prompts.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(promptDrain):
		a.opt.Log.Warn("prompts still running after the editor went away", "waited", promptDrain)
	}
	return err
}

// promptDrain bounds how long Serve waits for running prompts to stop once
// the editor has gone.
const promptDrain = 15 * time.Second

// Initialize implements acp.Agent: protocol 1, and only what joule does.
func (a *Agent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	v := min(p.ProtocolVersion, acp.ProtocolVersion(acp.ProtocolVersionNumber))
	if v < 1 {
		return acp.InitializeResponse{}, acp.NewInvalidParams(map[string]any{"protocolVersion": fmt.Sprintf("joule speaks ACP protocol version 1; the client asked for %d", p.ProtocolVersion)})
	}
	return acp.InitializeResponse{
		ProtocolVersion:   v,
		AgentInfo:         &acp.Implementation{Name: "joule", Title: acp.Ptr("joule"), Version: a.opt.Version},
		AgentCapabilities: acp.AgentCapabilities{LoadSession: true},
		AuthMethods:       []acp.AuthMethod{},
	}, nil
}

// Authenticate implements acp.Agent: joule needs no sign-in.
func (a *Agent) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, acp.NewInvalidParams(map[string]any{"error": "joule advertises no authentication methods"})
}

func newSessionID() (acp.SessionId, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return acp.SessionId("acp-" + hex.EncodeToString(b[:])), nil
}

// NewSession implements acp.Agent.
func (a *Agent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	id, err := newSessionID()
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	a.addSession(id, cwd)
	a.markIssued(id)
	a.advertise(id)
	return acp.NewSessionResponse{SessionId: id}, nil
}

// sessionIDPattern is the shape of the ids newSessionID issues; only such
// an id is looked up in SessionsDir.
var sessionIDPattern = regexp.MustCompile(`^acp-[0-9a-f]{24}$`)

// markIssued records that this endpoint issued id.
func (a *Agent) markIssued(id acp.SessionId) {
	if a.opt.SessionsDir == "" {
		return
	}
	err := os.MkdirAll(a.opt.SessionsDir, 0o700)
	if err == nil {
		err = os.WriteFile(filepath.Join(a.opt.SessionsDir, string(id)), nil, 0o600)
	}
	if err != nil {
		a.opt.Log.Warn("recording the new session; it cannot be loaded before its first receipt", "session", id, "err", err)
	}
}

// issued reports whether this endpoint issued id (see SessionsDir).
func (a *Agent) issued(id acp.SessionId) bool {
	if a.opt.SessionsDir == "" || !sessionIDPattern.MatchString(string(id)) {
		return false
	}
	_, err := os.Stat(filepath.Join(a.opt.SessionsDir, string(id)))
	return err == nil
}

func (a *Agent) connection() *acp.AgentSideConnection {
	<-a.ready
	return a.conn
}

func (a *Agent) addSession(id acp.SessionId, cwd string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &session{id: id, cwd: cwd, disk: core.NewDirCache(cwd)}
	a.sessions[id] = s
	return s
}

func (a *Agent) session(id acp.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return nil, acp.NewInvalidParams(map[string]any{"sessionId": fmt.Sprintf("unknown session %q: create one with session/new or load it with session/load", id)})
	}
	return s, nil
}

// advertise sends the slash commands after the session's response: the
// SDK answers a request only when its handler returns, so it runs apart.
func (a *Agent) advertise(id acp.SessionId) {
	cmds := []acp.AvailableCommand{{Name: "cost", Description: "Energy and receipts of this session so far"}}
	for _, c := range l1.Commands {
		cmds = append(cmds, acp.AvailableCommand{Name: c.Name, Description: c.Description,
			Input: &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: c.Hint}}})
	}
	go func() {
		_ = a.connection().SessionUpdate(context.Background(), acp.SessionNotification{SessionId: id,
			Update: acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}})
	}()
}

// Cancel implements acp.Agent. The SDK has already cancelled the running
// prompt's context; a cancel with nothing running is a no-op, as the
// protocol makes it a notification.
func (a *Agent) Cancel(ctx context.Context, p acp.CancelNotification) error {
	if _, err := a.session(p.SessionId); err != nil {
		a.opt.Log.Warn("cancel for an unknown session", "session", p.SessionId)
	}
	return nil
}

// SetSessionMode implements acp.Agent: joule has no modes.
func (a *Agent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}

// SetSessionConfigOption implements acp.Agent: joule has no options.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

// ListSessions implements acp.Agent: not advertised.
func (a *Agent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

// ResumeSession implements acp.Agent: not advertised.
func (a *Agent) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

// CloseSession implements acp.Agent: not advertised.
func (a *Agent) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

func (s *session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return false
	}
	s.running = true
	return true
}

func (s *session) end() {
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
}

func (a *Agent) clientCaps() acp.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}

// promptText is the request as the user typed it. Editors split a prompt
// at each mention of a file (agent-shell's and Zed's @-mentions) into text
// blocks and resource_link blocks, so the blocks are joined inline (a space
// only where neither side has one) and a link to a file in the workspace
// reads as its workspace-relative path: "rename clamp in @item.go to bound"
// reaches the reader as typed, not with a file:// URI on a line of its own.
// joule advertises no image, audio or embedded-context support, so other
// blocks are refused.
func promptText(blocks []acp.ContentBlock, cwd string) (string, error) {
	var sb strings.Builder
	add := func(part string) {
		if sb.Len() > 0 && part != "" {
			last, _ := utf8.DecodeLastRuneInString(sb.String())
			first, _ := utf8.DecodeRuneInString(part)
			if !unicode.IsSpace(last) && !unicode.IsSpace(first) {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(part)
	}
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			add(b.Text.Text)
		case b.ResourceLink != nil:
			add(linkText(b.ResourceLink.Uri, cwd))
		default:
			return "", acp.NewInvalidParams(map[string]any{"prompt": "joule accepts text prompts only (no image, audio or embedded resource)"})
		}
	}
	t := sb.String()
	if strings.TrimSpace(t) == "" {
		return "", acp.NewInvalidParams(map[string]any{"prompt": "the prompt has no text"})
	}
	return t, nil
}

// linkText is how a resource link reads in a request: a file in the
// workspace as its relative path, another local file as its absolute
// path, anything else as its URI.
func linkText(uri, cwd string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
		return uri
	}
	p := filepath.Clean(u.Path)
	if rel, err := filepath.Rel(cwd, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return p
}

var errBusy = errors.New("busy")
