// Package windsurf binds joule to Windsurf's Cascade pre-hooks
// (pre_run_command, pre_write_code, pre_read_code, pre_mcp_tool_use), which
// block only by exit status 2.
package windsurf

import (
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook windsurf.
const Host = "windsurf"

// The Cascade events this adapter gates.
const (
	PreRunCommand = "pre_run_command"
	PreWriteCode  = "pre_write_code"
	PreReadCode   = "pre_read_code"
	PreMCPToolUse = "pre_mcp_tool_use"
)

// Events lists them in the order an install writes them.
var Events = []string{PreRunCommand, PreWriteCode, PreReadCode, PreMCPToolUse}

// Adapter is the Windsurf hook adapter. Dir is the hook process's working
// directory, the cwd of events whose payload has none (Cascade runs hooks
// in the workspace).
type Adapter struct{ Dir string }

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

type payload struct {
	Action       string `json:"agent_action_name"`
	TrajectoryID string `json:"trajectory_id"`
	ExecutionID  string `json:"execution_id"`
	ToolInfo     *struct {
		CommandLine *string         `json:"command_line"`
		Cwd         string          `json:"cwd"`
		FilePath    string          `json:"file_path"`
		Edits       json.RawMessage `json:"edits"`
		Server      string          `json:"mcp_server_name"`
		Tool        string          `json:"mcp_tool_name"`
		Arguments   json.RawMessage `json:"mcp_tool_arguments"`
	} `json:"tool_info"`
}

// Parse maps one Cascade payload: a command is Bash, a write is MultiEdit
// with Cascade's edits, a read is Read, an MCP call mcp__server__tool. The
// execution_id is the content id.
func (a Adapter) Parse(b []byte) (*hook.Call, error) {
	var p payload
	if err := hook.Decode(b, &p); err != nil {
		return nil, err
	}
	ev := &gate.Event{SessionID: p.TrajectoryID, Cwd: a.Dir}
	call := &hook.Call{Hook: p.Action, Event: ev}
	switch p.Action {
	case PreRunCommand, PreWriteCode, PreReadCode, PreMCPToolUse:
	default:
		return call, &hook.UnknownEventError{Host: Host, Event: p.Action}
	}
	ti := p.ToolInfo
	if ti == nil {
		return call, errors.New("tool_info is missing")
	}
	if ti.Cwd != "" {
		ev.Cwd = ti.Cwd
	}
	if p.ExecutionID != "" {
		id := p.ExecutionID
		ev.ContentID = &id
	}
	abs := func(path string) string {
		if !filepath.IsAbs(path) && ev.Cwd != "" {
			return filepath.Join(ev.Cwd, path)
		}
		return path
	}
	var err error
	switch p.Action {
	case PreRunCommand:
		ev.Tool = "Bash"
		if ti.CommandLine == nil {
			return call, errors.New("tool_info.command_line is missing")
		}
		ev.Input, _ = json.Marshal(map[string]string{"command": *ti.CommandLine})
	case PreWriteCode:
		ev.Tool = "MultiEdit"
		if ti.FilePath == "" {
			return call, errors.New("tool_info.file_path is missing")
		}
		edits := ti.Edits
		if len(edits) == 0 {
			edits = json.RawMessage("[]")
		}
		ev.Input, err = json.Marshal(map[string]any{"file_path": abs(ti.FilePath), "edits": edits})
	case PreReadCode:
		ev.Tool = "Read"
		if ti.FilePath == "" {
			return call, errors.New("tool_info.file_path is missing")
		}
		ev.Input, _ = json.Marshal(map[string]string{"file_path": abs(ti.FilePath)})
	case PreMCPToolUse:
		if ti.Server == "" || ti.Tool == "" {
			return call, errors.New("tool_info.mcp_server_name or mcp_tool_name is missing")
		}
		ev.Tool = hook.MCPTool(ti.Server, ti.Tool)
		ev.Input, err = hook.InputObject(ti.Arguments, "tool_info.mcp_tool_arguments")
	}
	if err != nil {
		ev.Input = nil
	}
	return call, err
}

// Answer: Cascade honours only the exit status. Allow is exit 0; anything
// else is exit 2 with the reason on stderr (shown with show_output). Cascade
// has no reliable ask and no rewrite, so both are denies that say so.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	res = hook.NoAsk(Host, hook.NoRewrite(Host, res))
	known := call != nil && call.Event != nil && call.Event.Input != nil
	if res.Decision == gate.Allow && known {
		return hook.Output{}
	}
	if res.Decision != gate.Deny {
		res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
	}
	return hook.Output{Stderr: hook.Reason(res) + "\n", Exit: 2}
}

// CanAsk implements hook.AskLimiter: Cascade has no reliable ask.
func (Adapter) CanAsk(*hook.Call) bool { return false }
