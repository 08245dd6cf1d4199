// Package qwencode binds joule to Qwen Code (the npm package
// @qwen-code/qwen-code, CLI qwen): its PreToolUse command hook, mapped onto
// the gate's vocabulary and answered with Qwen's decision JSON; the
// installer that writes the hook and joule's MCP server into Qwen's
// settings.json; and the facts a host registry needs about it.
package qwencode

import (
	"encoding/json"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook qwen-code.
const Host = "qwen-code"

// PreToolUse is the one Qwen Code event that gates a tool call: it runs as
// the tool is about to execute, after Qwen's own approval (docs/hosts.md,
// Qwen Code).
const PreToolUse = "PreToolUse"

// tools maps Qwen Code's built-in tools (ToolNames in its
// packages/core/src/tools/tool-names.ts, 0.24) whose input keys are
// already the gate's: command, file_path, content, old_string,
// new_string, pattern, path, url, prompt, query.
var tools = map[string]string{
	"run_shell_command": "Bash",
	"read_file":         "Read",
	"write_file":        "Write",
	"edit":              "Edit",
	"glob":              "Glob",
	"grep_search":       "Grep",
	"web_fetch":         "WebFetch",
	"web_search":        "WebSearch",
	"todo_write":        "TodoWrite",
	"notebook_edit":     "NotebookEdit",
	"agent":             "Task",
}

// Adapter is the Qwen Code hook adapter. Its zero value is ready to use.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

type payload struct {
	hook.ToolPayload
	// ToolCallID is the model's own id for the call (call_…); Qwen's
	// tool_use_id is one it makes up per execution (toolu_<ms>_<random>).
	ToolCallID string `json:"tool_call_id"`
}

// Parse maps a PreToolUse payload. MCP tools already carry the gate's
// name (mcp__<server>__<tool>); list_directory is a Glob of its path; a
// tool the gate has no word for keeps its Qwen name, which a grant can
// name in a rule. The content id is the model's call id.
func (Adapter) Parse(b []byte) (*hook.Call, error) {
	var p payload
	call, err := hook.ParseToolPayload(Host, b, &p, PreToolUse)
	if err != nil {
		return call, err
	}
	call.Event.ContentID = nil
	if p.ToolCallID != "" {
		id := p.ToolCallID
		call.Event.ContentID = &id
	}
	switch {
	case tools[p.ToolName] != "":
		call.Event.Tool = tools[p.ToolName]
	case p.ToolName == "list_directory":
		call.Event.Tool = "Glob"
	}
	return call, nil
}

// output is the part of Qwen's hook output (PreToolUseHookOutput) joule
// sets: the Claude Code shape, which Qwen reads before its top-level
// decision field.
type output struct {
	HookSpecificOutput specific `json:"hookSpecificOutput"`
}

type specific struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

// answer renders one decision as Qwen's JSON on stdout with exit 0, which
// Qwen reads whatever else the hook printed on stderr.
func answer(decision, reason string) hook.Output {
	return hook.Output{Stdout: hook.Marshal(output{specific{HookEventName: PreToolUse, PermissionDecision: decision, PermissionDecisionReason: reason}})}
}

// Answer renders a decision. An allow is permissionDecision "allow", which
// lets the tool run: Qwen's own approval has already happened by then. An
// ask is Qwen's "ask": an interactive session shows its confirmation
// prompt, a headless one does not run the tool. Qwen cannot rewrite a
// tool's input from this hook, so a rewrite is a deny. A payload joule
// could not read is also exit 2 with the reason on stderr, which Qwen
// reads as a deny even if it stopped reading the JSON.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	if call == nil || call.Hook != PreToolUse || call.Event == nil || call.Event.Input == nil {
		res = hook.NoAsk(Host, hook.NoRewrite(Host, res))
		if res.Decision != gate.Deny {
			res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
		}
		out := answer(gate.Deny, hook.Reason(res))
		out.Stderr, out.Exit = hook.Reason(res)+"\n", 2
		return out
	}
	switch res.Decision {
	case gate.Allow:
		return answer(gate.Allow, "")
	case gate.Ask:
		return answer(gate.Ask, hook.Reason(res))
	case gate.Rewrite:
		res = hook.NoRewrite(Host, res)
	case gate.Deny:
	default:
		res = hook.Deny(gate.CodeInternal, "unknown gate decision "+res.Decision)
	}
	return answer(gate.Deny, hook.Reason(res))
}

// Deny is the explicit deny Qwen reads for reason: what the resident
// client and the installed wrapper print when joule could not decide.
func Deny(reason string) []byte {
	b, _ := json.Marshal(output{specific{HookEventName: PreToolUse, PermissionDecision: gate.Deny, PermissionDecisionReason: reason}})
	return b
}
