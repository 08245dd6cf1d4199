// Package cursor binds joule to Cursor's agent hooks (beforeShellExecution,
// beforeMCPExecution, beforeReadFile, preToolUse): one ActionEvent per event,
// answered with Cursor's permission JSON.
package cursor

import (
	"encoding/json"
	"errors"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook cursor.
const Host = "cursor"

// The Cursor hook events this adapter gates.
const (
	BeforeShell = "beforeShellExecution"
	BeforeMCP   = "beforeMCPExecution"
	BeforeRead  = "beforeReadFile"
	PreToolUse  = "preToolUse"
)

// Events lists them in the order an install writes them.
var Events = []string{BeforeShell, BeforeMCP, BeforeRead, PreToolUse}

// tools maps Cursor's preToolUse tool names onto the gate's.
var tools = map[string]string{"Shell": "Bash", "Read": "Read", "Write": "Write", "Edit": "Edit", "StrReplace": "Edit",
	"Delete": "Write", "Grep": "Grep", "Glob": "Glob", "Task": "Task", "WebFetch": "WebFetch", "WebSearch": "WebSearch"}

// Adapter is the Cursor hook adapter.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

type payload struct {
	ConversationID string          `json:"conversation_id"`
	GenerationID   string          `json:"generation_id"`
	HookEvent      string          `json:"hook_event_name"`
	WorkspaceRoots []string        `json:"workspace_roots"`
	Command        *string         `json:"command"`
	Cwd            string          `json:"cwd"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	URL            string          `json:"url"`
	FilePath       string          `json:"file_path"`
	ToolUseID      string          `json:"tool_use_id"`
}

// Parse maps one Cursor hook payload. Cursor's shell, MCP and read events
// carry no per-call id, so only preToolUse's tool_use_id becomes a content
// id. The session is the conversation; the cwd is the shell event's own, else
// the first workspace root.
func (Adapter) Parse(b []byte) (*hook.Call, error) {
	var p payload
	if err := hook.Decode(b, &p); err != nil {
		return nil, err
	}
	ev := &gate.Event{SessionID: p.ConversationID, Cwd: p.Cwd}
	if ev.Cwd == "" && len(p.WorkspaceRoots) > 0 {
		ev.Cwd = p.WorkspaceRoots[0]
	}
	call := &hook.Call{Hook: p.HookEvent, Event: ev}
	var err error
	switch p.HookEvent {
	case BeforeShell:
		ev.Tool = "Bash"
		if p.Command == nil {
			return call, errors.New("command is missing")
		}
		ev.Input, _ = json.Marshal(map[string]string{"command": *p.Command})
	case BeforeRead:
		ev.Tool = "Read"
		if p.FilePath == "" {
			return call, errors.New("file_path is missing")
		}
		path := p.FilePath
		if !filepath.IsAbs(path) && ev.Cwd != "" {
			path = filepath.Join(ev.Cwd, path)
		}
		ev.Input, _ = json.Marshal(map[string]string{"file_path": path})
	case BeforeMCP:
		if p.ToolName == "" {
			return call, errors.New("tool_name is missing")
		}
		ev.Tool = hook.MCPTool(serverName(p.URL, derefOr(p.Command)), p.ToolName)
		// Cursor sends the MCP arguments as a JSON string.
		raw := p.ToolInput
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = json.RawMessage(s)
		}
		ev.Input, err = hook.InputObject(raw, "tool_input")
	case PreToolUse:
		if p.ToolName == "" {
			return call, errors.New("tool_name is missing")
		}
		ev.Tool = p.ToolName
		if t := tools[p.ToolName]; t != "" {
			ev.Tool = t
		}
		if ev.Input, err = hook.InputObject(p.ToolInput, "tool_input"); err == nil {
			ev.Input, err = hook.Rename(ev.Input, map[string]string{"path": "file_path", "filePath": "file_path"})
		}
		if p.ToolUseID != "" {
			id := p.ToolUseID
			ev.ContentID = &id
		}
	default:
		return call, &hook.UnknownEventError{Host: Host, Event: p.HookEvent}
	}
	if err != nil {
		ev.Input = nil
	}
	return call, err
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// serverName names an MCP server Cursor identifies only by its URL or
// command: the URL's host, else the command's program name.
func serverName(rawURL, command string) string {
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	if f := strings.Fields(command); len(f) > 0 {
		return filepath.Base(f[0])
	}
	return "unknown"
}

type output struct {
	Permission   string `json:"permission"`
	UserMessage  string `json:"user_message,omitempty"`
	AgentMessage string `json:"agent_message,omitempty"`
}

// Answer renders Cursor's permission JSON with exit 0. beforeReadFile cannot
// ask, and no event can rewrite, so those degrade to deny and say so. A
// payload joule could not read also exits 2, which Cursor reads as a deny.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	res = hook.NoRewrite(Host, res)
	known := call != nil && call.Event != nil && call.Event.Input != nil
	switch {
	case !known:
		res = hook.NoAsk(Host, res)
	case call.Hook == BeforeRead:
		res = hook.NoAsk(Host+"'s "+BeforeRead, res)
	}
	if !known {
		if res.Decision != gate.Deny {
			res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
		}
		reason := hook.Reason(res)
		return hook.Output{Stdout: hook.Marshal(output{gate.Deny, reason, reason}), Stderr: reason + "\n", Exit: 2}
	}
	switch res.Decision {
	case gate.Allow:
		return hook.Output{Stdout: hook.Marshal(output{Permission: gate.Allow})}
	case gate.Ask:
		reason := hook.Reason(res)
		return hook.Output{Stdout: hook.Marshal(output{gate.Ask, reason, reason})}
	}
	reason := hook.Reason(res)
	return hook.Output{Stdout: hook.Marshal(output{gate.Deny, reason, reason})}
}

// CanAsk implements hook.AskLimiter: beforeReadFile can only allow or deny.
func (Adapter) CanAsk(call *hook.Call) bool { return call.Hook != BeforeRead }
