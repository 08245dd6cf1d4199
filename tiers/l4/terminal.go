package l4

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
	"mvdan.cc/sh/v3/syntax"

	"github.com/joulehook/joule/core/gate"
)

// Terminals is an editor's terminal capability (ACP terminal/*), which the
// remote agent's commands are forwarded to when the editor offers it. The
// session id of each request is the editor's, filled in by the
// implementation.
type Terminals interface {
	CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error)
	KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error)
	ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error)
}

const (
	// DefaultCommandTimeout bounds a command joule runs itself for the
	// remote agent when Remote.CommandTimeout is 0.
	DefaultCommandTimeout = 10 * time.Minute
	// defaultOutputLimit is the output a local terminal keeps when the
	// remote sets no outputByteLimit; maxOutputLimit caps what it may ask.
	defaultOutputLimit = 1 << 20
	maxOutputLimit     = 16 << 20
)

// terminals are the remote's terminals during one prompt: each either the
// editor's (forwarded) or a process joule runs in the workspace.
type terminals struct {
	mu     sync.Mutex
	n      int
	byID   map[string]*terminal
	closed bool
}

type terminal struct {
	editorID string // set for a terminal the editor runs
	local    *localTerminal
}

// commandLine is the command as the gate judges it: the words a shell would
// run, quoted where needed.
func commandLine(p acp.CreateTerminalRequest) (string, error) {
	if len(p.Args) == 0 {
		return p.Command, nil
	}
	words := []string{p.Command}
	for _, a := range p.Args {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			return "", fmt.Errorf("argument %q cannot be quoted for the gate: %v", a, err)
		}
		words = append(words, q)
	}
	return strings.Join(words, " "), nil
}

// argv is how a terminal/create is run, by the editor's terminal and by
// joule's own runner alike: a command line without args, as agents send
// them (claude-code-acp sends the model's whole Bash line as command), is run
// by /bin/sh -c; a command with args, or a bare program name, directly.
func argv(p acp.CreateTerminalRequest) (string, []string) {
	if len(p.Args) == 0 && strings.ContainsAny(p.Command, " \t\n;&|<>()$`'\"*?[]#~=%\\") {
		return "/bin/sh", []string{"-c", p.Command}
	}
	return p.Command, p.Args
}

func termError(msg string) error {
	return acp.NewInvalidParams(map[string]any{"terminalId": msg})
}

func (c *client) terminal(id string) (*terminal, error) {
	c.terms.mu.Lock()
	defer c.terms.mu.Unlock()
	t, ok := c.terms.byID[id]
	if !ok {
		return nil, termError(fmt.Sprintf("unknown terminal %q", id))
	}
	return t, nil
}

// CreateTerminal gates the command as Claude Code's Bash, then forwards it
// to the editor's terminal when the editor offers one, else runs it in the
// workspace with a timeout and an output cap.
func (c *client) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	if strings.TrimSpace(p.Command) == "" {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"command": "the command is empty"})
	}
	line, err := commandLine(p)
	if err != nil {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"args": err.Error()})
	}
	cwd := c.req.Root
	if p.Cwd != nil && *p.Cwd != "" {
		rel, err := c.rel(*p.Cwd)
		if err != nil {
			return acp.CreateTerminalResponse{}, err
		}
		if rel == "" {
			return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"cwd": fmt.Sprintf("%s is outside the workspace %s", *p.Cwd, c.req.Root)})
		}
		cwd = filepath.Clean(*p.Cwd)
	}
	r := c.decideIn(ctx, "Bash", map[string]any{"command": line}, cwd)
	switch r.Decision {
	case gate.Deny:
		_ = c.s.ed.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("joule denied the remote agent's command %q (%s): %s", line, r.Code, r.Reason)))
		return acp.CreateTerminalResponse{}, denied(r)
	case gate.Ask:
		ok, err := c.askEditor(ctx, acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(fmt.Sprintf("l4-terminal-%d", c.nextTerminal())),
			Title: acp.Ptr("Run " + line), Kind: acp.Ptr(acp.ToolKindExecute), RawInput: map[string]any{"command": line, "cwd": cwd}})
		if err != nil {
			return acp.CreateTerminalResponse{}, err
		}
		if !ok {
			return acp.CreateTerminalResponse{}, acp.NewInvalidRequest(map[string]any{"error": "the user rejected the command"})
		}
	}
	c.terms.mu.Lock()
	closed := c.terms.closed
	c.terms.mu.Unlock()
	if closed {
		return acp.CreateTerminalResponse{}, acp.NewInvalidRequest(map[string]any{"error": "the prompt has ended"})
	}
	if ed := c.s.ed.Terminals(); ed != nil {
		fw := p
		fw.Cwd = &cwd
		fw.Command, fw.Args = argv(p)
		resp, err := ed.CreateTerminal(ctx, fw)
		if err != nil {
			return acp.CreateTerminalResponse{}, err
		}
		if resp.TerminalId == "" {
			return acp.CreateTerminalResponse{}, acp.NewInternalError(map[string]any{"error": "the editor created a terminal without an id"})
		}
		c.addTerminal(resp.TerminalId, &terminal{editorID: resp.TerminalId})
		return resp, nil
	}
	limit := defaultOutputLimit
	if p.OutputByteLimit != nil {
		if *p.OutputByteLimit < 0 {
			return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"outputByteLimit": "must not be negative"})
		}
		limit = min(*p.OutputByteLimit, maxOutputLimit)
	}
	timeout := c.s.r.CommandTimeout
	if timeout == 0 {
		timeout = DefaultCommandTimeout
	}
	lt, err := startLocal(p, cwd, limit, timeout)
	if err != nil {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"command": err.Error()})
	}
	id := fmt.Sprintf("joule-term-%d", c.nextTerminal())
	c.addTerminal(id, &terminal{local: lt})
	return acp.CreateTerminalResponse{TerminalId: id}, nil
}

func (c *client) nextTerminal() int {
	c.terms.mu.Lock()
	defer c.terms.mu.Unlock()
	c.terms.n++
	return c.terms.n
}

func (c *client) addTerminal(id string, t *terminal) {
	c.terms.mu.Lock()
	defer c.terms.mu.Unlock()
	if c.terms.byID == nil {
		c.terms.byID = map[string]*terminal{}
	}
	c.terms.byID[id] = t
}

func (c *client) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	t, err := c.terminal(p.TerminalId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	if t.local == nil {
		return c.s.ed.Terminals().TerminalOutput(ctx, p)
	}
	out, trunc := t.local.output()
	return acp.TerminalOutputResponse{Output: out, Truncated: trunc, ExitStatus: t.local.status()}, nil
}

func (c *client) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	t, err := c.terminal(p.TerminalId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	if t.local == nil {
		return c.s.ed.Terminals().WaitForTerminalExit(ctx, p)
	}
	select {
	case <-t.local.done:
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, ctx.Err()
	}
	st := t.local.status()
	return acp.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: st.Signal}, nil
}

func (c *client) KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	t, err := c.terminal(p.TerminalId)
	if err != nil {
		return acp.KillTerminalResponse{}, err
	}
	if t.local == nil {
		return c.s.ed.Terminals().KillTerminal(ctx, p)
	}
	t.local.kill()
	return acp.KillTerminalResponse{}, nil
}

func (c *client) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	t, err := c.terminal(p.TerminalId)
	if err != nil {
		return acp.ReleaseTerminalResponse{}, err
	}
	c.terms.mu.Lock()
	delete(c.terms.byID, p.TerminalId)
	c.terms.mu.Unlock()
	if t.local == nil {
		return c.s.ed.Terminals().ReleaseTerminal(ctx, p)
	}
	t.local.kill()
	return acp.ReleaseTerminalResponse{}, nil
}

// releaseAll ends the prompt's terminals the remote left open: local
// processes are killed, the editor's terminals released.
func (c *client) releaseAll(ctx context.Context) {
	c.terms.mu.Lock()
	c.terms.closed = true
	left := c.terms.byID
	c.terms.byID = nil
	c.terms.mu.Unlock()
	for id, t := range left {
		if t.local != nil {
			t.local.kill()
			<-t.local.done
			continue
		}
		if ed := c.s.ed.Terminals(); ed != nil {
			_, _ = ed.ReleaseTerminal(ctx, acp.ReleaseTerminalRequest{TerminalId: id})
		}
	}
}

// localTerminal is a command joule runs for the remote agent: stdout and
// stderr together, the last limit bytes kept.
type localTerminal struct {
	cmd    *exec.Cmd
	done   chan struct{}
	cancel context.CancelFunc

	mu       sync.Mutex
	buf      []byte
	limit    int
	trunc    bool
	exit     *acp.TerminalExitStatus
	timedOut bool
}

func startLocal(p acp.CreateTerminalRequest, cwd string, limit int, timeout time.Duration) (*localTerminal, error) {
	name, args := argv(p)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = cwd
	cmd.Env = os.Environ()
	for _, e := range p.Env {
		if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") {
			cancel()
			return nil, fmt.Errorf("bad environment variable name %q", e.Name)
		}
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	lt := &localTerminal{cmd: cmd, done: make(chan struct{}), cancel: cancel, limit: limit}
	cmd.Stdout, cmd.Stderr = lt, lt
	cmd.Stdin = nil
	processGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	go func() {
		_ = cmd.Wait() // the exit status says how it ended
		lt.mu.Lock()
		lt.exit = exitStatus(cmd)
		lt.timedOut = ctx.Err() == context.DeadlineExceeded
		if lt.timedOut {
			lt.appendLocked([]byte(fmt.Sprintf("\n[joule: the command was stopped after %s]\n", timeout)))
		}
		lt.mu.Unlock()
		cancel()
		close(lt.done)
	}()
	return lt, nil
}

func exitStatus(cmd *exec.Cmd) *acp.TerminalExitStatus {
	st := &acp.TerminalExitStatus{}
	ps := cmd.ProcessState
	if ps == nil {
		code := -1
		st.ExitCode = &code
		return st
	}
	if sig := signalOf(ps); sig != "" {
		st.Signal = &sig
		return st
	}
	code := ps.ExitCode()
	st.ExitCode = &code
	return st
}

func (t *localTerminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.appendLocked(p)
	return len(p), nil
}

// appendLocked keeps the last limit bytes, cut at a character boundary, as
// ACP asks of a client truncating output.
func (t *localTerminal) appendLocked(p []byte) {
	t.buf = append(t.buf, p...)
	if len(t.buf) <= t.limit {
		return
	}
	cut := len(t.buf) - t.limit
	for cut < len(t.buf) && !utf8.RuneStart(t.buf[cut]) {
		cut++
	}
	t.buf = append(t.buf[:0:0], t.buf[cut:]...)
	t.trunc = true
}

func (t *localTerminal) output() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD"), t.trunc
}

func (t *localTerminal) status() *acp.TerminalExitStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exit
}

func (t *localTerminal) kill() {
	select {
	case <-t.done:
	default:
		killGroup(t.cmd)
	}
}

// decideIn is decide with the command's working directory.
func (c *client) decideIn(ctx context.Context, tool string, input map[string]any, cwd string) gate.Result {
	b, _ := json.Marshal(input)
	return c.s.r.Gate.Decide(ctx, &gate.Event{SessionID: c.req.Session, Tool: tool, Input: b, Cwd: cwd})
}
