package acpagent

import (
	"context"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/tiers/l4"
)

// Terminals implements l4.Editor: the editor's terminals, when it offers
// them, run the remote agent's commands (after the gate allowed them).
func (t *turn) Terminals() l4.Terminals {
	if !t.a.clientCaps().Terminal {
		return nil
	}
	return editorTerminals{t}
}

// editorTerminals forwards terminal requests to the editor, in the
// editor's session.
type editorTerminals struct{ t *turn }

func (e editorTerminals) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	p.SessionId = e.t.s.id
	return e.t.a.connection().CreateTerminal(ctx, p)
}

func (e editorTerminals) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	p.SessionId = e.t.s.id
	return e.t.a.connection().TerminalOutput(ctx, p)
}

func (e editorTerminals) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	p.SessionId = e.t.s.id
	return e.t.a.connection().WaitForTerminalExit(ctx, p)
}

func (e editorTerminals) KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	p.SessionId = e.t.s.id
	return e.t.a.connection().KillTerminal(ctx, p)
}

func (e editorTerminals) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	p.SessionId = e.t.s.id
	return e.t.a.connection().ReleaseTerminal(ctx, p)
}
