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
		if p.ToolCall != nil && ev.Tool == "run_commands" {
			call.Input = in // a contained command is handed back in this shape
		}
		ev.Tool = t.name
		if in, err = hook.Rename(in, t.keys); err != nil {
			return call, err
		}
		in = normalize(t.name, in, ev.Cwd)
	} else if server, name, ok := strings.Cut(ev.Tool, "__"); ok && server != "" && name != "" && p.ToolCall != nil {
		// The SDK names an MCP tool <server>__<tool> (@cline/core's
		// default name transform); the gate's name is mcp__server__tool.
		ev.Tool = hook.MCPTool(server, name)
	}
	ev.Input = in
	return call, nil
}

// normalize sets a Bash input's command to the script Cline will run (the
// gate judges every line) and makes relative paths absolute against the
// workspace root. An input Cline would not run has no command, which the
// gate refuses.
func normalize(tool string, in json.RawMessage, root string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(in, &m) != nil {
		return in
	}
	if tool == "Bash" {
		if lines, ok := commandLines(m); ok {
			m["command"] = strings.Join(lines, "\n")
		} else {
			delete(m, "command")
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

// commandLines are the shell lines run_commands runs for an input, read as
// Cline 3.0.65 reads it (@cline/core: validateWithZod with the union of
// input shapes, the first that parses winning, then its command list):
// {commands: [string | {command, args}]}, {commands: string | {command,
// args}}, {command, args}, {command}, {cmd}. Keys a shape does not name are
// dropped by the parse, so a "command" beside a valid "commands" never
// runs. A {command, args} entry runs its argv without a shell; its line is
// the argv shell-quoted. False: Cline would refuse the input and run
// nothing.
func commandLines(m map[string]any) ([]string, bool) {
	if c, ok := m["commands"]; ok {
		if list, ok := c.([]any); ok {
			var lines []string
			for _, e := range list {
				l, ok := commandEntry(e)
				if !ok {
					lines = nil
					break
				}
				lines = append(lines, l)
			}
			if lines != nil || len(list) == 0 {
				return lines, true
			}
		} else if l, ok := commandEntry(c); ok {
			return []string{l}, true
		}
	}
	if l, ok := argv(m); ok {
		return []string{l}, true
	}
	if c, ok := m["command"].(string); ok {
		return []string{c}, true
	}
	if c, ok := m["cmd"].(string); ok {
		return []string{c}, true
	}
	return nil, false
}

// commandEntry is one entry of commands: a shell line, or an argv object.
func commandEntry(e any) (string, bool) {
	if s, ok := e.(string); ok {
		return s, true
	}
	if o, ok := e.(map[string]any); ok {
		return argv(o)
	}
	return "", false
}

// argv reads {command, args?}: command a non-empty string, args absent or
// a list of strings. With args it runs without a shell, so its line is the
// words quoted; without, command is a shell line.
func argv(o map[string]any) (string, bool) {
	c, ok := o["command"].(string)
	if !ok || c == "" {
		return "", false
	}
	raw, has := o["args"]
	if !has {
		return c, true
	}
	args, ok := raw.([]any)
	if !ok {
		return "", false
	}
	words := []string{hook.ShellQuote(c)}
	for _, a := range args {
		s, ok := a.(string)
		if !ok {
			return "", false
		}
		words = append(words, hook.ShellQuote(s))
	}
	return strings.Join(words, " "), true
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

// JouleServer is the name joule install gives joule's MCP server in
// Cline's MCP settings.
const JouleServer = "joule"

// jouleGated are joule's own MCP tools that read their arguments strictly
// (joule mcp refuses an argument it does not know, running nothing): a
// deny replaces the call's arguments with deniedArg, so the one call
// fails and the task goes on. Cline hands any other MCP server whatever
// input the hook gives (the SDK does not check an MCP tool's input against
// its schema), so no replacement is sure to run nothing there.
var jouleGated = map[string]bool{
	"read_file": true, "write_file": true, "edit_file": true,
	"list_directory": true, "search": true, "run_command": true,
}

// deniedArg is the argument a denied joule MCP call is sent instead of its
// own, which joule mcp refuses.
const deniedArg = "joule_denied"

// Answer prints Cline's JSON with exit 0 in every case, since Cline reads
// only stdout: {"cancel":false} to allow. A deny must not be
// {"cancel":true}, which is Cline's stop of the whole task (the model never
// sees why, and nothing after it runs): for the built-in SDK/CLI tools that
// validate their input, joule replaces the input with null (overrideInput),
// so the call fails without running, and gives its reason as the hook's
// context, which Cline hands the model with the call's error; for joule's
// own gated MCP tools it replaces the arguments with one joule mcp refuses.
// Any other tool (other MCP servers, the VS Code shape) can only be stopped
// with the task. A rewrite (containment) of run_commands is handed back as
// its one command; Cline's review flag has no effect on file hooks, so ask
// is a deny that says so, and so is any other rewrite.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	res = hook.NoAsk(Host, res)
	if in, ok := rewritten(call, res); ok {
		return hook.Output{Stdout: hook.Marshal(output{OverrideInput: in, Context: hook.Reason(res)})}
	}
	res = hook.NoRewrite(Host, res)
	if res.Decision == gate.Allow && call != nil && call.Event != nil && call.Event.Input != nil {
		return hook.Output{Stdout: hook.Marshal(output{})}
	}
	if res.Decision != gate.Deny {
		res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
	}
	reason := hook.Reason(res)
	if call != nil && call.Hook == "tool_call" && call.Event != nil {
		if nullInput[call.Event.Tool] {
			return hook.Output{Stdout: hook.Marshal(output{OverrideInput: json.RawMessage("null"),
				Context: reason + " (joule replaced the call's input, so it did not run)"})}
		}
		if name, ok := strings.CutPrefix(call.Event.Tool, hook.MCPTool(JouleServer, "")); ok && jouleGated[name] {
			in, _ := json.Marshal(map[string]string{deniedArg: reason})
			return hook.Output{Stdout: hook.Marshal(output{OverrideInput: in,
				Context: reason + " (joule replaced the call's arguments, so joule mcp refused it)"})}
		}
	}
	return hook.Output{Stdout: hook.Marshal(output{Cancel: true, ErrorMessage: reason})}
}

// rewritten is the run_commands input that carries a rewrite of the gate
// (the contained line as its one command), for a call that came as
// run_commands from the SDK/CLI.
func rewritten(call *hook.Call, res gate.Result) (json.RawMessage, bool) {
	if res.Decision != gate.Rewrite || len(res.UpdatedInput) == 0 || call == nil || call.Hook != "tool_call" ||
		call.Event == nil || call.Event.Tool != "Bash" || call.Input == nil {
		return nil, false
	}
	var m struct {
		Command *string `json:"command"`
	}
	if json.Unmarshal(res.UpdatedInput, &m) != nil || m.Command == nil {
		return nil, false
	}
	in, err := json.Marshal(map[string][]string{"commands": {*m.Command}})
	return in, err == nil
}

// CanRewrite implements hook.RewriteLimiter: only the SDK's run_commands
// (tool_call) takes a replaced command back; a shell call of the VS Code
// extension's shape is decided without containment, and its receipt says
// so.
func (Adapter) CanRewrite(call *hook.Call) bool {
	return call.Event == nil || call.Event.Tool != "Bash" || call.Input != nil
}

// CanAsk implements hook.AskLimiter: Cline's review flag has no effect on
// file hooks, so it never asks.
func (Adapter) CanAsk(*hook.Call) bool { return false }
