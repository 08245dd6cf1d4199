// Package claudecode binds joule to Claude Code, the reference profile of
// JouleHook (§6): the PreToolUse and PermissionRequest hook adapter, and the
// plugin (hooks, MCP receipt server, status line) that installs it.
package claudecode

import (
	"encoding/json"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook claude-code.
const Host = "claude-code"

// Hook event names this adapter gates.
const (
	PreToolUse        = "PreToolUse"
	PermissionRequest = "PermissionRequest"
)

// Adapter is the Claude Code hook adapter. Its zero value is ready to use.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

// Parse maps a PreToolUse or PermissionRequest payload (BaseHookInput +
// PreToolUse in the agent SDK's types) onto the ActionEvent: Claude Code's
// tool vocabulary is the gate's, so tool and input pass through unchanged;
// the tool_use_id, when present, is the content id.
func (Adapter) Parse(b []byte) (*hook.Call, error) {
	return hook.ParseToolPayload(Host, b, &hook.ToolPayload{}, PreToolUse, PermissionRequest)
}

// hookOutput is Claude Code's SyncHookJSONOutput, the fields joule sets.
type hookOutput struct {
	HookSpecificOutput *specific `json:"hookSpecificOutput,omitempty"`
}

type specific struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
	Decision                 *behavior       `json:"decision,omitempty"`
}

type behavior struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

// Answer renders a decision. An allow prints nothing, so Claude Code's own
// permission rules and prompts still apply (JouleHook §8: the gate adds, it
// does not remove the host's approvals); a rewrite (containment) hands back
// only the updatedInput, with no decision, for the same reason. A deny is permissionDecision "deny"
// with exit 0; a payload joule could not read (call nil or without a known
// event) is also exit 2 with the reason on stderr, which blocks every
// blocking event of Claude Code.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	if call == nil || (call.Hook != PreToolUse && call.Hook != PermissionRequest) {
		res = hook.NoAsk(Host, hook.NoRewrite(Host, res))
		if res.Decision != gate.Deny {
			res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
		}
		reason := hook.Reason(res)
		out := hookOutput{&specific{HookEventName: PreToolUse, PermissionDecision: gate.Deny, PermissionDecisionReason: reason}}
		return hook.Output{Stdout: hook.Marshal(out), Stderr: reason + "\n", Exit: 2}
	}
	if call.Hook == PermissionRequest {
		switch {
		case res.Decision == gate.Allow, res.Decision == gate.Ask:
			return hook.Output{} // the dialog is shown as usual
		case res.Decision == gate.Rewrite && hook.SameCommand(call.Input, res.UpdatedInput):
			// The contained command PreToolUse handed back, judged again
			// by its inner line: the user approves what will run.
			return hook.Output{}
		}
		res = hook.NoRewrite(Host, res)
		out := hookOutput{&specific{HookEventName: PermissionRequest, Decision: &behavior{Behavior: gate.Deny, Message: hook.Reason(res)}}}
		return hook.Output{Stdout: hook.Marshal(out)}
	}
	switch res.Decision {
	case gate.Allow:
		return hook.Output{}
	case gate.Ask:
		return hook.Output{Stdout: hook.Marshal(hookOutput{&specific{HookEventName: PreToolUse, PermissionDecision: gate.Ask, PermissionDecisionReason: hook.Reason(res)}})}
	case gate.Rewrite:
		// updatedInput without a permissionDecision: Claude Code runs the
		// rewritten input through its own permission check, prompting as
		// it would have (observed with the real CLI, docs/hosts.md); an
		// allow would skip that prompt.
		if len(res.UpdatedInput) > 0 {
			return hook.Output{Stdout: hook.Marshal(hookOutput{&specific{HookEventName: PreToolUse, UpdatedInput: res.UpdatedInput}})}
		}
		res = hook.Deny(gate.CodeInternal, "the gate asked for a rewrite without the rewritten input")
	case gate.Deny:
	default:
		res = hook.Deny(gate.CodeInternal, "unknown gate decision "+res.Decision)
	}
	return hook.Output{Stdout: hook.Marshal(hookOutput{&specific{HookEventName: PreToolUse, PermissionDecision: gate.Deny, PermissionDecisionReason: hook.Reason(res)}})}
}
