// Command fakeremote is a scripted ACP agent standing in for a frontier
// coding agent in joule's L4 tests. The prompt's first word picks the script:
//
//	write PATH TEXT   read PATH, ask permission to edit it, write TEXT to it
//	answer TEXT       send TEXT as a message, change nothing
//	newkind           send an update of a kind ACP v1 does not define, then answer
//	crash             exit mid-prompt
//	hang              say "remote: hanging", then never answer
//	deny PATH         ask permission to edit PATH and report the outcome
//	term [-limit N] [-kill] [-cwd DIR] [-line] CMD ARGS…
//	                  run CMD in a client terminal (killed at once with
//	                  -kill; -line sends CMD ARGS… as one command line),
//	                  wait for it, report its exit and output
//	leave CMD ARGS…   start CMD in a terminal and end the turn without
//	                  releasing it
//	env NAME…         report these environment variables
//
// FAKEREMOTE_PROTOCOL overrides the protocol version it answers.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

type agent struct {
	conn *acp.AgentSideConnection
	mu   sync.Mutex
	cwd  string
}

func (a *agent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	v := acp.ProtocolVersion(acp.ProtocolVersionNumber)
	if s := os.Getenv("FAKEREMOTE_PROTOCOL"); s != "" {
		n, _ := strconv.Atoi(s)
		v = acp.ProtocolVersion(n)
	}
	return acp.InitializeResponse{ProtocolVersion: v, AgentInfo: &acp.Implementation{Name: "fakeremote", Version: "1"}}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.mu.Lock()
	a.cwd = p.Cwd
	a.mu.Unlock()
	return acp.NewSessionResponse{SessionId: "remote-1"}, nil
}

func (a *agent) say(ctx context.Context, sid acp.SessionId, text string) {
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText(text)})
}

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	text := ""
	for _, b := range p.Prompt {
		if b.Text != nil {
			text += b.Text.Text
		}
	}
	f := strings.Fields(text)
	if len(f) == 0 {
		return acp.PromptResponse{StopReason: acp.StopReasonRefusal}, nil
	}
	sid := p.SessionId
	path := func(i int) string { return filepath.Join(a.cwd, f[i]) }
	switch f[0] {
	case "answer":
		a.say(ctx, sid, "remote says: "+strings.Join(f[1:], " "))
	case "newkind":
		// Written raw: the SDK cannot build an update kind it does not know.
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/update",
			"params": map[string]any{"sessionId": sid, "update": map[string]any{"sessionUpdate": "notice", "content": map[string]any{"type": "text", "text": "from the future"}}}})
		os.Stdout.Write(append(line, '\n'))
		a.say(ctx, sid, "remote says: after a new kind")
	case "write", "deny":
		call := acp.ToolCallUpdate{ToolCallId: "remote-call-1", Title: acp.Ptr("Edit " + f[1]), Kind: acp.Ptr(acp.ToolKindEdit),
			Locations: []acp.ToolCallLocation{{Path: path(1)}}, RawInput: map[string]any{"file_path": path(1)}}
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.StartToolCall("remote-call-1", "Edit "+f[1], acp.WithStartKind(acp.ToolKindEdit))})
		resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: sid, ToolCall: call, Options: []acp.PermissionOption{
			{OptionId: "yes", Name: "Yes", Kind: acp.PermissionOptionKindAllowOnce}, {OptionId: "no", Name: "No", Kind: acp.PermissionOptionKindRejectOnce}}})
		if err != nil {
			if ctx.Err() != nil {
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			}
			// A client must answer with an outcome; say what came instead.
			a.say(ctx, sid, "remote: permission request failed: "+err.Error())
			break
		}
		granted := resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == "yes"
		outcome := "cancelled"
		if resp.Outcome.Selected != nil {
			outcome = "selected:" + string(resp.Outcome.Selected.OptionId)
		}
		if f[0] == "deny" || !granted {
			a.say(ctx, sid, fmt.Sprintf("remote: permission granted=%v outcome=%s", granted, outcome))
			break
		}
		old, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: path(1)})
		content := strings.Join(f[2:], " ") + "\n"
		if err == nil {
			content = old.Content + content
		}
		if _, err := a.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: path(1), Content: content}); err != nil {
			a.say(ctx, sid, "remote: write refused: "+err.Error())
			break
		}
		a.say(ctx, sid, "remote: wrote "+f[1])
	case "term":
		a.term(ctx, sid, f[1:])
	case "leave":
		t, err := a.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: sid, Command: f[1], Args: f[2:]})
		if err != nil {
			a.say(ctx, sid, "remote: terminal refused: "+err.Error())
			break
		}
		a.say(ctx, sid, "remote: left terminal "+t.TerminalId+" running")
	case "env":
		var vs []string
		for _, n := range f[1:] {
			vs = append(vs, n+"="+os.Getenv(n))
		}
		a.say(ctx, sid, "remote: env "+strings.Join(vs, " "))
	case "crash":
		a.say(ctx, sid, "remote: about to crash")
		os.Exit(3)
	case "hang":
		a.say(ctx, sid, "remote: hanging")
		<-ctx.Done()
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	default:
		return acp.PromptResponse{StopReason: acp.StopReasonRefusal}, nil
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: &acp.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}}, nil
}

func (a *agent) term(ctx context.Context, sid acp.SessionId, f []string) {
	req := acp.CreateTerminalRequest{SessionId: sid}
	kill, line := false, false
	for len(f) > 1 && strings.HasPrefix(f[0], "-") {
		switch f[0] {
		case "-line":
			line, f = true, f[1:]
		case "-kill":
			kill, f = true, f[1:]
		case "-limit":
			n, _ := strconv.Atoi(f[1])
			req.OutputByteLimit, f = &n, f[2:]
		case "-cwd":
			dir := f[1]
			req.Cwd, f = &dir, f[2:]
		default:
			f = f[1:]
		}
	}
	if len(f) == 0 {
		a.say(ctx, sid, "remote: term needs a command")
		return
	}
	req.Command, req.Args = f[0], f[1:]
	if line {
		req.Command, req.Args = strings.Join(f, " "), nil
	}
	t, err := a.conn.CreateTerminal(ctx, req)
	if err != nil {
		a.say(ctx, sid, "remote: terminal refused: "+err.Error())
		return
	}
	if kill {
		if _, err := a.conn.KillTerminal(ctx, acp.KillTerminalRequest{SessionId: sid, TerminalId: t.TerminalId}); err != nil {
			a.say(ctx, sid, "remote: kill failed: "+err.Error())
		}
	}
	w, err := a.conn.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{SessionId: sid, TerminalId: t.TerminalId})
	if err != nil {
		a.say(ctx, sid, "remote: wait failed: "+err.Error())
		return
	}
	o, err := a.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: t.TerminalId})
	if err != nil {
		a.say(ctx, sid, "remote: output failed: "+err.Error())
		return
	}
	if _, err := a.conn.ReleaseTerminal(ctx, acp.ReleaseTerminalRequest{SessionId: sid, TerminalId: t.TerminalId}); err != nil {
		a.say(ctx, sid, "remote: release failed: "+err.Error())
	}
	_, err = a.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: t.TerminalId})
	exit := "?"
	switch {
	case w.Signal != nil:
		exit = "signal:" + *w.Signal
	case w.ExitCode != nil:
		exit = strconv.Itoa(*w.ExitCode)
	}
	a.say(ctx, sid, fmt.Sprintf("remote: terminal %s exit=%s truncated=%v output=%q released=%v", t.TerminalId, exit, o.Truncated, o.Output, err != nil))
}

func (a *agent) Cancel(context.Context, acp.CancelNotification) error { return nil }
func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}
func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}
func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}
func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}
func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

func main() {
	a := &agent{}
	a.conn = acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	<-a.conn.Done()
}
