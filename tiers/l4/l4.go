// Package l4 is the cascade's wire tier: it delegates a request to a remote
// frontier coding agent over ACP, as that agent's client, relaying its
// updates to the editor and putting its permission requests and file writes
// through the gate first. Its writes are held in memory and become one
// signed coding op, applied only if the request closes.
package l4

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"mvdan.cc/sh/v3/syntax"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
)

// Editor is what the tier may do toward the editor the request came from.
type Editor interface {
	// Update relays one session update to the editor's session.
	Update(ctx context.Context, u acp.SessionUpdate) error
	// Permission asks the user, through the editor, about a tool call.
	Permission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
	// Files is the tree state the request applies to.
	Files(ctx context.Context) (core.Files, error)
	// Buffer is a workspace file (slash-separated, relative) as the editor
	// holds it, unsaved changes included; ok is false if it does not exist.
	// A buffer that differs from Files becomes part of the tree state.
	Buffer(ctx context.Context, rel string) (b []byte, ok bool, err error)
	// Usage records the token usage the remote agent reported for its turn.
	Usage(u acp.Usage)
	// Terminals is the editor's terminal capability, nil when it offers none.
	Terminals() Terminals
	// Metered records that the remote's model calls were pointed at joule
	// proxy, which meters them: its reported usage is not estimated again.
	Metered()
}

// Remote launches and drives a remote ACP agent.
type Remote struct {
	Argv []string // the agent's command line
	Env  []string // extra environment (e.g. ProxyEnv of a fixed proxy URL)
	// Proxy, when set, returns the base URL of a running joule proxy ("" when
	// none runs); it is asked at each launch and the agent's model traffic
	// is pointed at the proxy with ProxyEnv.
	Proxy   func() string
	Gate    *gate.Gate // decides its permission requests, reads and writes
	Key     ed25519.PrivateKey
	Timeout time.Duration // longest a prompt may run; 0 means 30 minutes
	// CommandTimeout bounds each command joule runs itself for the remote
	// (when the editor offers no terminal); 0 means DefaultCommandTimeout.
	CommandTimeout time.Duration
	Stderr         io.Writer // the agent's stderr; nil discards it
	Log            *slog.Logger
	// Mode, when set, is the ACP session mode the remote's sessions are
	// put in (session/set_mode) before the prompt: claude-agent-acp's
	// bypassPermissions, say. It must be one of the modes the remote offers.
	Mode string
	// Contain, when set, runs the agent's whole process tree confined to
	// the session's grant (Containment); nil runs it as it is, its own
	// changes to the disk decided after the turn and undone if denied.
	Contain *Containment
}

// ProxyEnv points a remote agent's model traffic at joule proxy's base URL:
// Anthropic's API (Claude Code and its ACP adapter), OpenAI's (Codex and
// most others) and Gemini's (Gemini CLI, GOOGLE_GEMINI_BASE_URL, which
// takes the host; the client adds /v1beta).
func ProxyEnv(base string) []string {
	if i := strings.Index(base, "/session/"); i < 0 {
		base = strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1")
	}
	// A per-session URL: the session path stays, "/v1" goes after it.
	base = strings.TrimSuffix(base, "/")
	return []string{"ANTHROPIC_BASE_URL=" + base, "OPENAI_BASE_URL=" + base + "/v1", "GOOGLE_GEMINI_BASE_URL=" + base}
}

// ProxyArgs adds to a remote's command line what points its model traffic
// at base when its environment cannot: Codex (codex-acp) reads no
// OPENAI_BASE_URL, only its openai_base_url setting, which -c sets.
func ProxyArgs(argv []string, base string) []string {
	if runs(argv, "codex-acp") { // npx @zed-industries/codex-acp@0.16.0, …/codex-acp.js
		out := append([]string(nil), argv...)
		return append(out, "-c", "openai_base_url="+strings.TrimSuffix(base, "/")+"/v1")
	}
	return argv
}

// SessionURL is joule proxy's base URL for one session's calls: the proxy
// seals every call made through it in that session's chain, whatever
// session header (if any) the client sends.
func SessionURL(base, session string) string {
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1")
	return base + "/session/" + url.PathEscape(session)
}

// Stage returns the L4 stage for one prompt turn of one editor session.
func (r *Remote) Stage(ed Editor) tiers.Stage { return &stage{r: r, ed: ed} }

type stage struct {
	r  *Remote
	ed Editor
}

func (s *stage) Tier() core.Tier { return core.L4 }

// ErrProtocol reports a remote agent that does not speak ACP version 1.
var ErrProtocol = errors.New("remote agent protocol")

// TryResolve implements tiers.Stage: it runs one prompt on a fresh remote
// session. The remote's writes become the op; a turn without writes that
// ends normally closes as an answer (its messages were relayed).
func (s *stage) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	r := s.r
	if len(r.Argv) == 0 {
		return nil, errors.New("l4: no remote agent configured")
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	files, err := s.ed.Files(ctx)
	if err != nil {
		return nil, err
	}
	// The disk as the remote's turn starts: whatever it changes there, by a
	// command it runs or by its own hand, is sealed with its writes.
	disk := core.NewDirCache(req.Root)
	before, err := disk.Read()
	if err != nil {
		return nil, fmt.Errorf("l4: reading the workspace: %v", err)
	}
	argv := r.Argv
	var env []string
	proxy, su := "", ""
	if r.Proxy != nil {
		if u := r.Proxy(); u != "" {
			su = SessionURL(u, req.Session)
			env = ProxyEnv(su)
			argv = ProxyArgs(argv, su)
			proxy = u
			s.ed.Metered()
		}
	}
	if r.Contain != nil {
		wrapped, cenv, cleanup, err := r.Contain.wrap(ctx, r.Gate, req.Session, req.Root, argv, proxy, su)
		if err != nil {
			// Fail closed: an agent meant to run contained does not run
			// otherwise.
			return nil, fmt.Errorf("l4: containing the remote agent: %v", err)
		}
		defer cleanup()
		argv, env = wrapped, append(cenv, env...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = req.Root
	cmd.Env = append(append(os.Environ(), r.Env...), env...)
	cmd.Stderr = r.Stderr
	// A descendant that left the group may hold its stderr open: Wait
	// stops copying it two seconds after the remote has exited.
	cmd.WaitDelay = 2 * time.Second
	// Its own process group, so that ending the session ends everything it
	// started (a wrapper such as npx or sh -c, and the CLI it runs).
	remoteGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("l4: starting %s: %v", r.Argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		// The adapters do not all exit when their stdin closes (claude-code-acp
		// does not), and what they started may outlive them: the whole
		// group is told to stop at once, and killed if it has not soon.
		stdin.Close()
		endGroup(cmd)
		<-exited
	}()
	c := &client{s: s, req: req, prior: files, writes: core.Files{}}
	defer c.releaseAll(context.WithoutCancel(ctx))
	log := r.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	conn := acp.NewClientSideConnection(c, stdin, &kindFilter{r: bufio.NewReader(stdout), log: log})
	conn.SetLogger(log)
	// A crashed agent never answers: fail its calls as soon as it exits.
	cctx, ccancel := context.WithCancelCause(ctx)
	defer ccancel(nil)
	go func() {
		select {
		case <-exited:
			ccancel(errors.New("the remote agent exited"))
		case <-conn.Done():
			ccancel(errors.New("the remote agent closed its connection"))
		case <-cctx.Done():
		}
	}()
	fail := func(what string, err error) error {
		if cause := context.Cause(cctx); cause != nil && ctx.Err() == nil {
			return fmt.Errorf("l4: %s: %v", what, cause)
		}
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("l4: %s: the remote agent did not answer within %s", what, timeout)
		}
		return fmt.Errorf("l4: %s: %v", what, err)
	}
	// Gemini CLI cannot create a file through the client's file system:
	// before write_file it reads the file, and it does not recognise ACP's
	// error for a missing one (its SDK rejects with a plain object, which
	// its ENOENT check does not read), so every new file fails. It is
	// offered none: it writes itself, contained by the kernel to the grant
	// (Contain), or decided after the turn.
	fsCap := !runs(r.Argv, "gemini", "gemini.js")
	ir, err := conn.Initialize(cctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo:         &acp.Implementation{Name: "joule", Version: "acp-client"},
		ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: fsCap, WriteTextFile: fsCap}, Terminal: true}})
	if err != nil {
		return nil, fail("initialize", err)
	}
	if ir.ProtocolVersion != acp.ProtocolVersionNumber {
		return nil, fmt.Errorf("%w: it answered protocol version %d; joule speaks %d", ErrProtocol, ir.ProtocolVersion, acp.ProtocolVersionNumber)
	}
	ns, err := conn.NewSession(cctx, acp.NewSessionRequest{Cwd: req.Root, McpServers: []acp.McpServer{}})
	if authRequired(err) {
		// A remote that wants its credentials named (codex-acp): the first
		// method it offers whose environment variables its environment
		// holds. The credentials stay the remote's own.
		id := envAuth(ir.AuthMethods, cmd.Env)
		if id == "" {
			return nil, fmt.Errorf("l4: the remote agent asks to be signed in, and none of its methods is an environment variable it was given (%s): sign in with its own CLI or set one", authList(ir.AuthMethods))
		}
		if _, err := conn.Authenticate(cctx, acp.AuthenticateRequest{MethodId: id}); err != nil {
			return nil, fail("authenticate "+id, err)
		}
		ns, err = conn.NewSession(cctx, acp.NewSessionRequest{Cwd: req.Root, McpServers: []acp.McpServer{}})
	}
	if err != nil {
		return nil, fail("session/new", err)
	}
	c.remoteSession = ns.SessionId
	if r.Mode != "" {
		if err := setMode(cctx, conn, ns, r.Mode); err != nil {
			return nil, fail("session/set_mode", err)
		}
	}
	pr, err := conn.Prompt(cctx, acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(req.Prompt)}})
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, fail("session/prompt", err)
	}
	note := "the remote agent answered"
	switch pr.StopReason {
	case acp.StopReasonEndTurn:
	case acp.StopReasonCancelled:
		if ctx.Err() != nil {
			return nil, context.Canceled
		}
		// Not the editor's cancel: the remote ended its own turn (codex-acp
		// aborts it when a permission is rejected). What it did is sealed.
		note = "the remote agent stopped its turn"
	default:
		return nil, fmt.Errorf("l4: the remote agent stopped: %s", pr.StopReason)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// What the remote changed on the disk itself (a command it ran, a tool
	// of its own): every file that differs from the turn's start.
	after, err := disk.Read()
	if err != nil {
		return nil, fmt.Errorf("l4: reading the workspace after the remote's turn: %v", err)
	}
	ondisk, gone := diskChanges(before, after)
	// A remote may change the disk without asking (codex-acp's default
	// mode applies its patches and runs sandboxed commands unasked): each
	// such change is decided now as the write it is, and one the grant
	// denies is undone.
	reverted, err := c.undoDenied(ctx, before, ondisk)
	if err != nil {
		return nil, err
	}
	// The op builds on the tree as the editor holds it: each written file's
	// buffer (a write replaces the whole file), then the writes.
	for rel := range c.writes {
		if _, _, err := s.ed.Buffer(ctx, rel); err != nil {
			return nil, err
		}
	}
	if c.prior, err = s.ed.Files(ctx); err != nil {
		return nil, err
	}
	next := c.prior.Clone()
	for rel, b := range ondisk {
		if _, held := c.writes[rel]; !held {
			next[rel] = b
		}
	}
	for rel, b := range c.writes {
		next[rel] = b
	}
	if pr.Usage != nil {
		s.ed.Usage(*pr.Usage)
		note += fmt.Sprintf(" (reported usage: %d input, %d output tokens)", pr.Usage.InputTokens, pr.Usage.OutputTokens)
	}
	op, err := l1.NewOpWith(req.Sum, c.prior, next, core.PublicKey(r.Key.Public().(ed25519.PublicKey)), strings.TrimSpace(req.Prompt), core.L4)
	if errors.Is(err, l1.ErrNoChange) {
		if len(reverted) > 0 {
			note += fmt.Sprintf("; it changed %s on the disk itself, which the grant denies: joule undid it", strings.Join(reverted, ", "))
		}
		if len(gone) > 0 {
			note += fmt.Sprintf("; it deleted %s, which a coding op cannot express: that is not sealed", strings.Join(gone, ", "))
		}
		return &tiers.Resolution{Answer: note}, nil
	}
	if err != nil {
		return nil, err
	}
	signed, err := core.SignOp(r.Key, op)
	if err != nil {
		return nil, err
	}
	answer := fmt.Sprintf("%s and changed %d file(s)", note, len(op.Edits))
	if len(reverted) > 0 {
		answer += fmt.Sprintf("; joule undid its change to %s, which the grant denies", strings.Join(reverted, ", "))
	}
	if len(ondisk) > 0 {
		answer += fmt.Sprintf(" (%d on the disk, by a command or tool of its own)", len(ondisk))
	}
	if len(gone) > 0 {
		answer += fmt.Sprintf("; it also deleted %s, which a coding op cannot express: that is not in the op", strings.Join(gone, ", "))
	}
	return &tiers.Resolution{Op: signed, Answer: answer}, nil
}

// undoDenied (called with c.mu held) decides each file the remote changed
// on the disk itself as a
// Write (new) or Edit, and puts back the ones the grant denies (an ask is
// a deny here: the change is already made, there is nothing to ask
// before). They are dropped from changed; the names are returned.
func (c *client) undoDenied(ctx context.Context, before, changed core.Files) ([]string, error) {
	var undone []string
	for _, rel := range sortedKeys(changed) {
		if _, held := c.writes[rel]; held { // the caller holds c.mu
			continue // its write through fs/write_text_file was decided
		}
		abs := filepath.Join(c.req.Root, filepath.FromSlash(rel))
		old, existed := before[rel]
		tool := "Edit"
		if !existed {
			tool = "Write"
		}
		r := c.decide(ctx, tool, map[string]any{"file_path": abs})
		if r.Decision == gate.Allow {
			continue
		}
		var err error
		if existed {
			err = os.WriteFile(abs, old, 0o644)
		} else {
			err = os.Remove(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("l4: undoing the remote's change to %s, which the grant denies: %v", rel, err)
		}
		_ = c.s.ed.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("the remote agent changed %s on the disk without asking; joule's grant denies that %s (%s): %s; joule undid it", rel, tool, r.Code, r.Reason)))
		delete(changed, rel)
		undone = append(undone, rel)
	}
	return undone, nil
}

func sortedKeys(f core.Files) []string {
	ks := make([]string, 0, len(f))
	for k := range f {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// diskChanges are the files whose content differs between two reads of the
// workspace (new ones included), and the files that are gone.
func diskChanges(before, after core.Files) (core.Files, []string) {
	changed := core.Files{}
	for rel, b := range after {
		if old, ok := before[rel]; !ok || !bytes.Equal(old, b) {
			changed[rel] = b
		}
	}
	var gone []string
	for rel := range before {
		if _, ok := after[rel]; !ok {
			gone = append(gone, rel)
		}
	}
	sort.Strings(gone)
	return changed, gone
}

// setMode puts the remote's new session in mode, one of those it offers.
func setMode(ctx context.Context, conn *acp.ClientSideConnection, ns acp.NewSessionResponse, mode string) error {
	if ns.Modes == nil {
		return fmt.Errorf("the remote agent offers no session modes, and %q was asked for", mode)
	}
	var ids []string
	for _, m := range ns.Modes.AvailableModes {
		if string(m.Id) == mode {
			_, err := conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: m.Id})
			return err
		}
		ids = append(ids, string(m.Id))
	}
	return fmt.Errorf("the remote agent offers no mode %q (it offers %s)", mode, strings.Join(ids, ", "))
}

// authRequired says whether err is ACP's "authentication required".
func authRequired(err error) bool {
	var re *acp.RequestError
	return errors.As(err, &re) && re.Code == -32000
}

// envAuth is the first env_var auth method whose variables are all set
// (non-empty) in env, "" if none.
func envAuth(ms []acp.AuthMethod, env []string) string {
	set := map[string]bool{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set[k] = v != ""
		}
	}
	for _, m := range ms {
		if m.EnvVar == nil || len(m.EnvVar.Vars) == 0 {
			continue
		}
		all := true
		for _, v := range m.EnvVar.Vars {
			all = all && set[v.Name]
		}
		if all {
			return m.EnvVar.Id
		}
	}
	return ""
}

func authList(ms []acp.AuthMethod) string {
	var out []string
	for _, m := range ms {
		switch {
		case m.EnvVar != nil:
			var vars []string
			for _, v := range m.EnvVar.Vars {
				vars = append(vars, "$"+v.Name)
			}
			out = append(out, m.EnvVar.Id+" ("+strings.Join(vars, ", ")+")")
		case m.Agent != nil:
			out = append(out, string(m.Agent.Id))
		case m.Terminal != nil:
			out = append(out, m.Terminal.Id)
		}
	}
	if len(out) == 0 {
		return "it names none"
	}
	return strings.Join(out, ", ")
}

// client is joule as the remote agent's ACP client.
type client struct {
	s             *stage
	req           *tiers.Request
	remoteSession acp.SessionId

	mu     sync.Mutex
	prior  core.Files // the tree the turn started from
	writes core.Files // the remote's writes, held until the op is sealed

	calls map[acp.ToolCallId]acp.ToolCallUpdate // what the remote said about each tool call

	terms terminals
}

var _ acp.Client = (*client)(nil)

// rel maps an absolute path the remote names to a workspace path.
func (c *client) rel(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", acp.NewInvalidParams(map[string]any{"path": "paths must be absolute"})
	}
	r, err := filepath.Rel(c.req.Root, filepath.Clean(p))
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", nil
	}
	return filepath.ToSlash(r), nil
}

func (c *client) decide(ctx context.Context, tool string, input map[string]any) gate.Result {
	b, _ := json.Marshal(input)
	return c.s.r.Gate.Decide(ctx, &gate.Event{SessionID: c.req.Session, Tool: tool, Input: b, Cwd: c.req.Root})
}

func denied(r gate.Result) error {
	return acp.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("joule's grant denies this (%s): %s", r.Code, r.Reason)})
}

func (c *client) ReadTextFile(ctx context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	if r := c.decide(ctx, "Read", map[string]any{"file_path": p.Path}); r.Decision == gate.Deny {
		return acp.ReadTextFileResponse{}, denied(r)
	}
	rel, err := c.rel(p.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	c.mu.Lock()
	b, ok := c.writes[rel]
	c.mu.Unlock()
	switch {
	case ok:
	case rel == "": // outside the workspace, as the grant allowed
		if b, err = os.ReadFile(p.Path); errors.Is(err, fs.ErrNotExist) {
			return acp.ReadTextFileResponse{}, resourceNotFound(p.Path)
		} else if err != nil {
			return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"path": err.Error()})
		}
	default: // the editor's buffer, so unsaved changes are seen
		if core.ValidatePath(rel) != nil {
			return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"path": fmt.Sprintf("%s is not a workspace file joule can read", p.Path)})
		}
		if b, ok, err = c.s.ed.Buffer(ctx, rel); err != nil {
			return acp.ReadTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
		}
		if !ok {
			return acp.ReadTextFileResponse{}, resourceNotFound(p.Path)
		}
	}
	return acp.ReadTextFileResponse{Content: lines(string(b), p.Line, p.Limit)}, nil
}

// resourceNotFound is ACP's error for a file that does not exist (-32002,
// "Resource not found"): an agent that checks whether the file it is about
// to write exists (Gemini CLI's write_file) reads it as ENOENT, where
// Invalid params fails its tool.
func resourceNotFound(path string) error {
	return &acp.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"path": path + ": no such file"}}
}

func lines(s string, line, limit *int) string {
	if line == nil && limit == nil {
		return s
	}
	ls := strings.SplitAfter(s, "\n")
	start := 0
	if line != nil && *line > 1 {
		start = min(*line-1, len(ls))
	}
	end := len(ls)
	if limit != nil && *limit >= 0 {
		end = min(start+*limit, len(ls))
	}
	return strings.Join(ls[start:end], "")
}

func (c *client) WriteTextFile(ctx context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	rel, err := c.rel(p.Path)
	if err != nil {
		return acp.WriteTextFileResponse{}, err
	}
	if rel == "" {
		return acp.WriteTextFileResponse{}, acp.NewInvalidParams(map[string]any{"path": fmt.Sprintf("%s is outside the workspace %s", p.Path, c.req.Root)})
	}
	if err := core.ValidatePath(rel); err != nil {
		return acp.WriteTextFileResponse{}, acp.NewInvalidParams(map[string]any{"path": err.Error()})
	}
	c.mu.Lock()
	_, exists := c.writes[rel]
	if !exists {
		_, exists = c.prior[rel]
	}
	c.mu.Unlock()
	tool := "Edit"
	if !exists {
		tool = "Write"
	}
	r := c.decide(ctx, tool, map[string]any{"file_path": p.Path})
	switch r.Decision {
	case gate.Deny:
		return acp.WriteTextFileResponse{}, denied(r)
	case gate.Ask:
		ok, err := c.askEditor(ctx, acp.ToolCallUpdate{ToolCallId: acp.ToolCallId("l4-write-" + rel), Title: acp.Ptr("write " + rel),
			Kind: acp.Ptr(acp.ToolKindEdit), Locations: []acp.ToolCallLocation{{Path: p.Path}}})
		if err != nil {
			return acp.WriteTextFileResponse{}, err
		}
		if !ok {
			return acp.WriteTextFileResponse{}, acp.NewInvalidRequest(map[string]any{"error": "the user rejected the write"})
		}
	}
	c.mu.Lock()
	c.writes[rel] = []byte(p.Content)
	c.mu.Unlock()
	return acp.WriteTextFileResponse{}, nil
}

func (c *client) askEditor(ctx context.Context, call acp.ToolCallUpdate) (bool, error) {
	resp, err := c.s.ed.Permission(ctx, acp.RequestPermissionRequest{ToolCall: call, Options: []acp.PermissionOption{
		{OptionId: "allow", Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce}}})
	if err != nil {
		return false, err
	}
	return resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == "allow", nil
}

// merged is the permission request's tool call completed from the earlier
// tool_call (and tool_call_update) updates with the same toolCallId: an
// adapter such as claude-code-acp sends kind and locations only there.
func (c *client) merged(call acp.ToolCallUpdate) acp.ToolCallUpdate {
	c.mu.Lock()
	seen, ok := c.calls[call.ToolCallId]
	c.mu.Unlock()
	if !ok {
		return call
	}
	if call.Kind == nil {
		call.Kind = seen.Kind
	}
	if call.Title == nil {
		call.Title = seen.Title
	}
	if call.RawInput == nil {
		call.RawInput = seen.RawInput
	} else if raw, ok := call.RawInput.(map[string]any); ok && len(raw) == 0 && seen.RawInput != nil {
		call.RawInput = seen.RawInput
	}
	if len(call.Locations) == 0 {
		call.Locations = seen.Locations
	}
	return call
}

// remember keeps what the remote said about each tool call, so that a later
// permission request naming it can be mapped (see merged).
func (c *client) remember(u acp.SessionUpdate) {
	var id acp.ToolCallId
	var kind *acp.ToolKind
	var title *string
	var raw any
	var locs []acp.ToolCallLocation
	switch {
	case u.ToolCall != nil:
		tc := u.ToolCall
		id, title, raw, locs = tc.ToolCallId, &tc.Title, tc.RawInput, tc.Locations
		if tc.Kind != "" {
			kind = &tc.Kind
		}
	case u.ToolCallUpdate != nil:
		tc := u.ToolCallUpdate
		id, kind, title, raw, locs = tc.ToolCallId, tc.Kind, tc.Title, tc.RawInput, tc.Locations
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[acp.ToolCallId]acp.ToolCallUpdate{}
	}
	if len(c.calls) >= maxRemembered {
		if _, ok := c.calls[id]; !ok {
			return
		}
	}
	seen := c.calls[id]
	seen.ToolCallId = id
	if kind != nil {
		seen.Kind = kind
	}
	if title != nil && *title != "" {
		seen.Title = title
	}
	if m, ok := raw.(map[string]any); raw != nil && (!ok || len(m) > 0) {
		seen.RawInput = raw
	}
	if len(locs) > 0 {
		seen.Locations = locs
	}
	c.calls[id] = seen
}

// maxRemembered bounds the tool calls a prompt remembers.
const maxRemembered = 4096

// event maps a remote tool call onto the gate's vocabulary (Claude Code's
// tool names) from its kind, raw input and locations; exists says whether a
// workspace file is there (a new file is a Write, an existing one an Edit).
// ok is false when the call cannot be mapped, and why says what is missing.
func event(call acp.ToolCallUpdate, exists func(path string) bool) (tool string, input map[string]any, ok bool, why string) {
	raw, _ := call.RawInput.(map[string]any)
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, _ := raw[k].(string); s != "" {
				return s
			}
		}
		return ""
	}
	path := str("file_path", "path", "notebook_path", "abs_path")
	if path == "" && len(call.Locations) > 0 {
		path = call.Locations[0].Path
	}
	command := str("command", "cmd")
	if command == "" {
		// Codex sends its command as an argv array.
		if argv, ok := raw["command"].([]any); ok && len(argv) > 0 {
			words := make([]string, 0, len(argv))
			for _, a := range argv {
				w, ok := a.(string)
				if !ok {
					words = nil
					break
				}
				words = append(words, w)
			}
			command = shellLine(words)
		}
	}
	edit := func() (string, map[string]any, bool, string) {
		if _, has := raw["content"]; has && !exists(path) {
			return "Write", map[string]any{"file_path": path}, true, ""
		}
		if !exists(path) && call.Kind != nil && *call.Kind == acp.ToolKindEdit && raw["old_string"] == nil {
			return "Write", map[string]any{"file_path": path}, true, ""
		}
		return "Edit", map[string]any{"file_path": path}, true, ""
	}
	kind := acp.ToolKind("")
	if call.Kind != nil {
		kind = *call.Kind
	}
	if command != "" && kind != acp.ToolKindEdit {
		// A command is judged as the command, whatever kind the remote
		// gave it (codex-acp labels `cat f` read and `rg x` search).
		return "Bash", map[string]any{"command": command}, true, ""
	}
	switch kind {
	case acp.ToolKindExecute:
		if command != "" {
			return "Bash", map[string]any{"command": command}, true, ""
		}
		return "", nil, false, "an execute call without a command in its rawInput"
	case acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove:
		if path != "" {
			return edit()
		}
		return "", nil, false, fmt.Sprintf("a %s call without a path in its rawInput or locations", kind)
	case acp.ToolKindRead:
		if path != "" {
			return "Read", map[string]any{"file_path": path}, true, ""
		}
		return "", nil, false, "a read call without a path in its rawInput or locations"
	case acp.ToolKindFetch:
		if u := str("url"); u != "" {
			return "WebFetch", map[string]any{"url": u}, true, ""
		}
		return "", nil, false, "a fetch call without a url in its rawInput"
	case acp.ToolKindSearch:
		return "Grep", map[string]any{"pattern": str("pattern", "query"), "path": path}, true, ""
	}
	// No kind (or think/other): the raw input's shape says what it does.
	switch {
	case command != "":
		return "Bash", map[string]any{"command": command}, true, ""
	case path != "" && (raw["content"] != nil || raw["old_string"] != nil || raw["new_string"] != nil || raw["edits"] != nil || raw["new_source"] != nil):
		return edit()
	case str("url") != "":
		return "WebFetch", map[string]any{"url": str("url")}, true, ""
	case path != "" && len(raw) <= 3 && (raw["offset"] != nil || raw["limit"] != nil || len(raw) == 1):
		return "Read", map[string]any{"file_path": path}, true, ""
	}
	title := ""
	if call.Title != nil {
		title = *call.Title
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "", nil, false, fmt.Sprintf("joule cannot tell what the remote's tool call %q does: it has no kind joule maps, and no file_path, command or url in its rawInput (keys: %s)", title, strings.Join(keys, ", "))
}

// shellLine is argv as one shell command line, each word quoted as needed;
// "sh -c LINE" (and bash -lc, as Codex wraps commands) is LINE itself.
func shellLine(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") && (filepath.Base(argv[0]) == "sh" || filepath.Base(argv[0]) == "bash" || filepath.Base(argv[0]) == "zsh") {
		return argv[2]
	}
	words := make([]string, 0, len(argv))
	for _, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = a
		}
		words = append(words, q)
	}
	return strings.Join(words, " ")
}

// exists says whether a path the remote names is a file of the tree the turn
// started from (or one it has written since).
func (c *client) exists(p string) bool {
	rel, err := c.rel(p)
	if err != nil || rel == "" {
		_, err := os.Stat(p)
		return err == nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.writes[rel]; ok {
		return true
	}
	if _, ok := c.prior[rel]; ok {
		return true
	}
	_, err = os.Stat(filepath.Join(c.req.Root, filepath.FromSlash(rel)))
	return err == nil
}

// RequestPermission puts the remote's request to the gate, mapped from the
// request and the earlier updates about the same tool call: allow answers
// it, deny rejects it, ask relays it to the editor with the remote's
// options. A request joule cannot map is relayed to the editor with a
// thought saying why; without an answer from there it is rejected.
func (c *client) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	call := c.merged(p.ToolCall)
	pick := func(kinds ...acp.PermissionOptionKind) acp.RequestPermissionResponse {
		for _, k := range kinds {
			for _, o := range p.Options {
				if o.Kind == k {
					return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}
				}
			}
		}
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
	}
	reject := func() acp.RequestPermissionResponse {
		return pick(acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways)
	}
	// relay asks the editor. The remote always gets an ACP outcome, never a
	// JSON-RPC error: "cancelled" when its turn is being cancelled (as ACP
	// asks of a client), its reject option when the editor has no answer.
	relay := func(why string) (acp.RequestPermissionResponse, error) {
		resp, err := c.s.ed.Permission(ctx, acp.RequestPermissionRequest{ToolCall: call, Options: p.Options})
		switch {
		case ctx.Err() != nil:
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		case err != nil:
			_ = c.s.ed.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("joule rejected the remote's tool call: %s, and the editor did not answer (%v)", why, err)))
			return reject(), nil
		}
		return resp, nil
	}
	tool, input, ok, why := event(call, c.exists)
	if !ok {
		_ = c.s.ed.Update(ctx, acp.UpdateAgentThoughtText(why+"; asking you."))
		return relay(why)
	}
	r := c.decide(ctx, tool, input)
	switch r.Decision {
	case gate.Allow:
		// Once only: a later call of the same tool is decided again.
		return pick(acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways), nil
	case gate.Ask:
		return relay(fmt.Sprintf("the grant asks about its %s %s", tool, describe(input)))
	}
	_ = c.s.ed.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("joule denied the remote agent's %s %s (%s): %s", tool, describe(input), r.Code, r.Reason)))
	return reject(), nil
}

func describe(input map[string]any) string {
	for _, k := range []string{"command", "file_path", "url", "pattern"} {
		if s, _ := input[k].(string); s != "" {
			return fmt.Sprintf("%q", s)
		}
	}
	return ""
}

// SessionUpdate relays the remote's updates to the editor unchanged; kinds
// this SDK does not know were dropped before decoding (kindFilter).
func (c *client) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	c.remember(n.Update)
	return c.s.ed.Update(ctx, n.Update)
}

// knownKinds are the session update kinds acp-go-sdk v0.13.0 decodes. The
// SDK decodes an unknown kind by shape into a wrong one, so a newer agent's
// updates of other kinds are dropped here rather than relayed mislabelled.
var knownKinds = map[string]bool{
	"user_message_chunk": true, "agent_message_chunk": true, "agent_thought_chunk": true, "tool_call": true,
	"tool_call_update": true, "plan": true, "available_commands_update": true, "current_mode_update": true,
	"config_option_update": true, "session_info_update": true, "usage_update": true,
}

// kindFilter passes the remote's stdout through line by line, dropping
// session/update notifications of kinds the SDK does not know.
type kindFilter struct {
	r   *bufio.Reader
	log *slog.Logger
	buf []byte
}

func (f *kindFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		line, err := f.r.ReadBytes('\n')
		if len(line) > 0 && !f.drop(line) {
			f.buf = line
		}
		if err != nil {
			if len(f.buf) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

func (f *kindFilter) drop(line []byte) bool {
	if !bytes.Contains(line, []byte(`"session/update"`)) {
		return false
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Update struct {
				Kind string `json:"sessionUpdate"`
			} `json:"update"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "session/update" || knownKinds[m.Params.Update.Kind] {
		return false
	}
	f.log.Warn("dropped a remote session update of a kind this joule does not know", "kind", m.Params.Update.Kind)
	return true
}
