package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// Editor is a minimal ACP client playing an editor toward joule acp: it
// serves fs reads and writes from the disk, answers permission requests as
// told (Allow), and records every session update.
type Editor struct {
	Allow   bool
	mu      sync.Mutex
	updates []acp.SessionNotification
	asked   int
	reads   int
	writes  int
	onText  func(string)
}

var _ acp.Client = (*Editor)(nil)

func (c *Editor) ReadTextFile(ctx context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"path": err.Error()})
	}
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return acp.ReadTextFileResponse{Content: string(b)}, nil
}

func (c *Editor) WriteTextFile(ctx context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
		return acp.WriteTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return acp.WriteTextFileResponse{}, nil
}

func (c *Editor) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked++
	allow := c.Allow
	c.mu.Unlock()
	want := acp.PermissionOptionKindRejectOnce
	if allow {
		want = acp.PermissionOptionKindAllowOnce
	}
	for _, o := range p.Options {
		if o.Kind == want {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

func (c *Editor) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	f := c.onText
	c.mu.Unlock()
	if f != nil && n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil {
		f(n.Update.AgentMessageChunk.Content.Text.Text)
	}
	return nil
}

func (c *Editor) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}
func (c *Editor) KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}
func (c *Editor) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}
func (c *Editor) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}
func (c *Editor) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// Updates is every session update so far, in order.
func (c *Editor) Updates() []acp.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.SessionNotification(nil), c.updates...)
}

// Text is every agent message of the updates so far, joined.
func (c *Editor) Text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sb strings.Builder
	for _, n := range c.updates {
		if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
			sb.WriteString(m.Content.Text.Text)
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

// Process is a running joule acp with an editor connected to it.
type Process struct {
	Conn *acp.ClientSideConnection
	cmd  *exec.Cmd
	in   io.Closer
}

// Close ends joule acp's input and waits for it to exit.
func (p *Process) Close() error {
	p.in.Close()
	return p.cmd.Wait()
}

// StartACP launches bin acp with env added, and initializes it as an
// editor offering fs reads and writes.
func StartACP(ctx context.Context, bin string, env []string, dir string, ed *Editor, stderr io.Writer, args ...string) (*Process, error) {
	cmd := exec.Command(bin, append([]string{"acp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	conn := acp.NewClientSideConnection(ed, in, out)
	conn.SetLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	p := &Process{Conn: conn, cmd: cmd, in: in}
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo:         &acp.Implementation{Name: "joule-demo-editor", Version: "1"},
		ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}}); err != nil {
		p.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return p, nil
}

// Module is the small Go module the editor session edits: a type whose
// method a rename moves across packages.
var Module = map[string]string{
	"go.mod": "module example.com/greet\n\ngo 1.22\n",
	"greet/greet.go": `// Package greet says hello.
package greet

// Greeter greets people.
type Greeter struct{ Name string }

// Hello returns a greeting.
func (g Greeter) Hello() string { return "hello, " + g.Name }
`,
	"main.go": `package main

import (
	"fmt"

	"example.com/greet/greet"
)

func main() {
	g := greet.Greeter{Name: "joule"}
	fmt.Println(g.Hello())
}
`,
}

// ACP drives joule (the binary at joule) acp as an editor would: a session on a small Go
// module in ws, an L1 rename of a method across packages, then the same
// request on the same tree again, which L0 replays, then a symbol lookup,
// which L1 answers with its declaration.
func ACP(ctx context.Context, joule, home, ws string, stderr io.Writer, say func(string, ...any)) error {
	dir := filepath.Join(ws, "acp-demo")
	for p, s := range Module {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			return err
		}
	}
	ed := &Editor{Allow: true}
	p, err := StartACP(ctx, joule, []string{"JOULE_HOME=" + home}, dir, ed, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	say("joule acp: an editor session on %s", dir)
	ns, err := p.Conn.NewSession(ctx, acp.NewSessionRequest{Cwd: dir, McpServers: []acp.McpServer{}})
	if err != nil {
		return err
	}
	prompt := func(text string) (string, error) {
		before := len(ed.Text())
		pr, err := p.Conn.Prompt(ctx, acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		if err != nil {
			return "", err
		}
		out := strings.TrimSpace(ed.Text()[before:])
		say("  > %s\n  %s (%s)", text, strings.ReplaceAll(out, "\n", "\n  "), pr.StopReason)
		return out, nil
	}
	prior, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil {
		return err
	}
	out, err := prompt("rename Greeter.Hello to Greet")
	if err != nil {
		return err
	}
	got, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	if !strings.Contains(out, "L1 ·") || !strings.Contains(string(got), "g.Greet()") {
		return fmt.Errorf("acp demo: the rename did not close at L1:\n%s", out)
	}
	say("  main.go now calls g.Greet(); the editor wrote %d file(s) through fs/write_text_file", ed.writes)
	// Put the tree back: the same request on the same tree state is an L0 hit.
	if err := os.WriteFile(filepath.Join(dir, "main.go"), prior, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "greet/greet.go"), []byte(Module["greet/greet.go"]), 0o644); err != nil {
		return err
	}
	if out, err = prompt("rename Greeter.Hello to Greet"); err != nil {
		return err
	}
	if !strings.Contains(out, "L0 ·") {
		return fmt.Errorf("acp demo: the repeated request did not close at L0:\n%s", out)
	}
	// A lookup: L1 answers with the declaration, read from the syntax.
	if out, err = prompt("where is Greeter defined"); err != nil {
		return err
	}
	if !strings.Contains(out, "L1 ·") || !strings.Contains(out, "is declared at greet/greet.go:5:6") {
		return fmt.Errorf("acp demo: the lookup did not close at L1:\n%s", out)
	}
	say("  L1 answered the lookup with the declaration itself, without an index or a model")
	return nil
}
