// Package cline binds joule to Cline's PreToolUse file hook, in both the
// SDK/CLI shape (tool_call) and the VS Code extension's (preToolUse), and
// answers with Cline's cancel JSON: Cline ignores exit codes.
package cline

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook cline.
const Host = "cline"

// HookFile is the name Cline looks for in its hooks directories.
const HookFile = "PreToolUse"

// tool maps one Cline tool onto the gate: its name and argument keys.
type tool struct {
	name string
	keys map[string]string
}

var tools = map[string]tool{
	// SDK / CLI names
	"run_commands": {"Bash", nil},
	"read_files":   {"Read", map[string]string{"path": "file_path"}},
	"write_file":   {"Write", map[string]string{"path": "file_path"}},
	"editor":       {"Edit", map[string]string{"path": "file_path"}},
	// VS Code names
	"execute_command": {"Bash", nil},
	"read_file":       {"Read", map[string]string{"path": "file_path"}},
	"write_to_file":   {"Write", map[string]string{"path": "file_path"}},
	"replace_in_file": {"Edit", map[string]string{"path": "file_path"}},
	"search_files":    {"Grep", map[string]string{"regex": "pattern"}},
	"list_files":      {"Glob", nil},
	"web_fetch":       {"WebFetch", nil},
	"browser_action":  {"WebFetch", nil},
}

// Adapter is the Cline hook adapter.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

type payload struct {
	HookName       string   `json:"hookName"`
	TaskID         string   `json:"taskId"`
	WorkspaceRoots []string `json:"workspaceRoots"`
	ToolCall       *struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"tool_call"`
	PreToolUse *struct {
		ToolName   string          `json:"toolName"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"preToolUse"`
}

// Parse maps a PreToolUse payload, preferring the SDK's lossless tool_call
// over the VS Code string map. MCP calls (use_mcp_tool) become
// mcp__server__tool with their arguments.
func (Adapter) Parse(b []byte) (*hook.Call, error) {
	var p payload
	if err := hook.Decode(b, &p); err != nil {
		return nil, err
	}
	ev := &gate.Event{SessionID: p.TaskID}
	if len(p.WorkspaceRoots) > 0 {
		ev.Cwd = p.WorkspaceRoots[0]
	}
	call := &hook.Call{Hook: p.HookName, Event: ev}
	if p.HookName != "tool_call" && p.HookName != "PreToolUse" {
		return call, &hook.UnknownEventError{Host: Host, Event: p.HookName}
	}
	var raw json.RawMessage
	switch {
	case p.ToolCall != nil:
		ev.Tool, raw = p.ToolCall.Name, p.ToolCall.Input
		if p.ToolCall.ID != "" {
			id := p.ToolCall.ID
			ev.ContentID = &id
		}
	case p.PreToolUse != nil:
		ev.Tool, raw = p.PreToolUse.ToolName, p.PreToolUse.Parameters
	}
	if ev.Tool == "" {
		return call, errors.New("the tool name is missing")
	}
	in, err := hook.InputObject(raw, "the tool input")
	if err != nil {
		return call, err
	}
	if ev.Tool == "use_mcp_tool" {
		var m struct {
			Server    string          `json:"server_name"`
			Tool      string          `json:"tool_name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		json.Unmarshal(in, &m)
		if m.Server == "" || m.Tool == "" {
			return call, errors.New("use_mcp_tool without server_name and tool_name")
		}
		ev.Tool = hook.MCPTool(m.Server, m.Tool)
		args := m.Arguments
		var s string
		if json.Unmarshal(args, &s) == nil { // the VS Code map carries it as a string
			args = json.RawMessage(s)
		}
		if in, err = hook.InputObject(args, "arguments"); err != nil {
			return call, err
		}
	} else if t, ok := tools[ev.Tool]; ok {
		ev.Tool = t.name
		if in, err = hook.Rename(in, t.keys); err != nil {
			return call, err
		}
		in = normalize(t.name, in, ev.Cwd)
	}
	ev.Input = in
	return call, nil
}

// normalize joins run_commands' list into one script (the gate judges every
// line) and makes relative paths absolute against the workspace root.
func normalize(tool string, in json.RawMessage, root string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(in, &m) != nil {
		return in
	}
	if tool == "Bash" {
		if list, ok := m["commands"].([]any); ok && m["command"] == nil {
			var lines []string
			for _, c := range list {
				if s, ok := c.(string); ok {
					lines = append(lines, s)
				}
			}
			m["command"] = strings.Join(lines, "\n")
		}
	}
	if p, ok := m["file_path"].(string); ok && p != "" && !filepath.IsAbs(p) && root != "" {
		m["file_path"] = filepath.Join(root, p)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return in
	}
	return out
}

type output struct {
	Cancel       bool   `json:"cancel"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Context      string `json:"context,omitempty"`
	// OverrideInput is a json.RawMessage so that a deny can send null,
	// which omitempty would drop: only present when set.
	OverrideInput json.RawMessage `json:"overrideInput,omitempty"`
}

// nullInput are the SDK/CLI tools, by the gate's names, that validate
// their input against a schema when they run (Cline 3.0.65's @cline/core:
// run_commands, read_files, editor and three it keeps its names for), so
// that a null input fails the one call, runs nothing, and the task goes on.
var nullInput = map[string]bool{
	"Bash": true, "Read": true, "Edit": true, "apply_patch": true,
	"fetch_web_content": true, "search_codebase": true,
}

// Answer prints Cline's JSON with exit 0 in every case, since Cline reads
// only stdout: {"cancel":false} to allow. A deny must not be
// {"cancel":true}, which is Cline's stop of the whole task (the model never
// sees why, and nothing after it runs): for the built-in SDK/CLI tools that
// validate their input, joule replaces the input with null (overrideInput),
// so the call fails without running, and gives its reason as the hook's
// context, which Cline hands the model with the call's error. Any other
// tool (MCP, the VS Code shape) can only be stopped with the task. Cline's
// review flag has no effect on file hooks, so ask is a deny that says so,
// and so is a rewrite.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	res = hook.NoAsk(Host, hook.NoRewrite(Host, res))
	if res.Decision == gate.Allow && call != nil && call.Event != nil && call.Event.Input != nil {
		return hook.Output{Stdout: hook.Marshal(output{})}
	}
	if res.Decision != gate.Deny {
		res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
	}
	reason := hook.Reason(res)
	if call != nil && call.Hook == "tool_call" && call.Event != nil && nullInput[call.Event.Tool] {
		return hook.Output{Stdout: hook.Marshal(output{OverrideInput: json.RawMessage("null"),
			Context: reason + " (joule replaced the call's input, so it did not run)"})}
	}
	return hook.Output{Stdout: hook.Marshal(output{Cancel: true, ErrorMessage: reason})}
}

// CanAsk implements hook.AskLimiter: Cline's review flag has no effect on
// file hooks, so it never asks.
func (Adapter) CanAsk(*hook.Call) bool { return false }
