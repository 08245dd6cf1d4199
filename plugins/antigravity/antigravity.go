// Package antigravity binds joule to Google Antigravity's PreToolUse hook
// (agy CLI and IDE). The host's contract is only partly documented, so the
// adapter reads both payload shapes reported for it and answers in both
// reported decision vocabularies.
package antigravity

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook antigravity.
const Host = "antigravity"

// PreToolUse is the hook event that gates a tool call.
const PreToolUse = "PreToolUse"

// tool is how one Antigravity tool maps onto the gate: its name there and
// which argument keys become the gate's.
type tool struct {
	name string
	keys map[string]string
}

var tools = map[string]tool{
	"run_command":          {"Bash", map[string]string{"CommandLine": "command", "Command": "command"}},
	"view_file":            {"Read", map[string]string{"AbsolutePath": "file_path", "FilePath": "file_path", "TargetFile": "file_path"}},
	"write_to_file":        {"Write", map[string]string{"TargetFile": "file_path", "CodeContent": "content"}},
	"edit_file":            {"Edit", map[string]string{"TargetFile": "file_path", "FilePath": "file_path"}},
	"replace_file_content": {"Edit", map[string]string{"TargetFile": "file_path"}},
	"codebase_search":      {"Grep", map[string]string{"Query": "pattern"}},
	"grep_search":          {"Grep", map[string]string{"Query": "pattern", "SearchPath": "path"}},
	"find_by_name":         {"Glob", map[string]string{"Pattern": "pattern", "SearchDirectory": "path"}},
	"read_url_content":     {"WebFetch", map[string]string{"Url": "url"}},
	"search_web":           {"WebSearch", map[string]string{"query": "query", "Query": "query"}},
}

// Adapter is the Antigravity hook adapter. Dir is the hook process's working
// directory, the cwd when the payload names none.
type Adapter struct{ Dir string }

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

type payload struct {
	// agy 1.0.x, as reported: camelCase.
	ConversationID string   `json:"conversationId"`
	StepIdx        *int     `json:"stepIdx"`
	WorkspacePaths []string `json:"workspacePaths"`
	ToolCall       *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"toolCall"`
	// The Claude-Code-like shape another adapter reports.
	SessionID string          `json:"session_id"`
	Cwd       string          `json:"cwd"`
	HookEvent string          `json:"hook_event_name"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// Parse maps either payload shape. Antigravity's own tools are renamed to
// the gate's with their argument keys; others keep their names. The
// conversation and step index form the content id.
func (a Adapter) Parse(b []byte) (*hook.Call, error) {
	var p payload
	if err := hook.Decode(b, &p); err != nil {
		return nil, err
	}
	ev := &gate.Event{SessionID: p.SessionID, Cwd: p.Cwd, Tool: p.ToolName}
	call := &hook.Call{Hook: p.HookEvent, Event: ev}
	raw := p.ToolInput
	if p.ToolCall != nil || p.ConversationID != "" {
		call.Hook = PreToolUse // agy runs only PreToolUse hooks with this shape
		ev.SessionID = p.ConversationID
		if len(p.WorkspacePaths) > 0 {
			ev.Cwd = p.WorkspacePaths[0]
		}
		if p.ToolCall != nil {
			ev.Tool, raw = p.ToolCall.Name, p.ToolCall.Args
		}
		if p.StepIdx != nil {
			id := fmt.Sprintf("%s/%d", p.ConversationID, *p.StepIdx)
			ev.ContentID = &id
		}
	}
	if call.Hook != PreToolUse {
		return call, &hook.UnknownEventError{Host: Host, Event: call.Hook}
	}
	if ev.Cwd == "" {
		ev.Cwd = a.Dir
	}
	if ev.Tool == "" {
		return call, errors.New("the tool name is missing")
	}
	in, err := hook.InputObject(raw, "the tool arguments")
	if err != nil {
		return call, err
	}
	if t, ok := tools[ev.Tool]; ok {
		ev.Tool = t.name
		if in, err = hook.Rename(in, t.keys); err != nil {
			return call, err
		}
		var m map[string]json.RawMessage
		json.Unmarshal(in, &m)
		if cwd, ok := m["Cwd"]; ok && t.name == "Bash" {
			var s string
			if json.Unmarshal(cwd, &s) == nil && filepath.IsAbs(s) {
				ev.Cwd = s
			}
		}
	}
	ev.Input = in
	return call, nil
}

type output struct {
	Decision   string `json:"decision"`
	Reason     string `json:"reason,omitempty"`
	AllowTool  bool   `json:"allow_tool"`
	DenyReason string `json:"deny_reason,omitempty"`
}

// Answer prints {"decision","reason"} (the shape reported for agy) together
// with JouleHook §3.4's allow_tool/deny_reason, exit 0. Ask is reported to
// raise the native approval prompt; rewriting is unknown, so a rewrite is a
// deny that says so. A payload joule could not read also exits 2 with the
// reason on stderr.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	res = hook.NoRewrite(Host, res)
	if call == nil || call.Event == nil || call.Event.Input == nil {
		res = hook.NoAsk(Host, res)
		if res.Decision != gate.Deny {
			res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
		}
		reason := hook.Reason(res)
		return hook.Output{Stdout: hook.Marshal(output{gate.Deny, reason, false, reason}), Stderr: reason + "\n", Exit: 2}
	}
	switch res.Decision {
	case gate.Allow:
		return hook.Output{Stdout: hook.Marshal(output{Decision: gate.Allow, AllowTool: true})}
	case gate.Ask:
		return hook.Output{Stdout: hook.Marshal(output{Decision: gate.Ask, Reason: hook.Reason(res)})}
	}
	reason := hook.Reason(res)
	return hook.Output{Stdout: hook.Marshal(output{gate.Deny, reason, false, reason})}
}
