// Package codex binds joule to the OpenAI Codex CLI's PreToolUse and
// PermissionRequest hooks, whose payloads already use the gate's tool names
// (Bash, mcp__server__tool) except apply_patch.
package codex

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook codex.
const Host = "codex"

// Hook events this adapter gates.
const (
	PreToolUse        = "PreToolUse"
	PermissionRequest = "PermissionRequest"
)

// Adapter is the Codex CLI hook adapter.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

// Parse maps a Codex hook payload (Claude Code's schema). apply_patch, whose
// tool_input.command is a patch envelope, is judged as a Write of the one
// file it touches; a patch touching several files keeps the name
// apply_patch, which only a grant rule naming it allows.
func (Adapter) Parse(b []byte) (*hook.Call, error) {
	var p hook.ToolPayload
	call, err := hook.ParseToolPayload(Host, b, &p, PreToolUse, PermissionRequest)
	if err != nil {
		return call, err
	}
	in := call.Event.Input
	if p.ToolName == "apply_patch" {
		var patch struct {
			Command string `json:"command"`
		}
		json.Unmarshal(in, &patch)
		files := PatchFiles(patch.Command)
		if len(files) == 1 {
			path := files[0]
			if !filepath.IsAbs(path) && filepath.IsAbs(p.Cwd) {
				path = filepath.Join(p.Cwd, path)
			}
			call.Event.Tool = "Write"
			call.Event.Input, _ = json.Marshal(map[string]string{"file_path": path})
		}
	}
	return call, nil
}

// PatchFiles lists the files an apply_patch envelope adds, updates, deletes
// or moves to, in order.
func PatchFiles(patch string) []string {
	var files []string
	seen := map[string]bool{}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, prefix := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if f, ok := strings.CutPrefix(line, prefix); ok && !seen[f] {
				seen[f] = true
				files = append(files, strings.TrimSpace(f))
			}
		}
	}
	return files
}

type output struct {
	HookSpecificOutput specific `json:"hookSpecificOutput"`
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

// Answer renders Codex's answer. Codex has no ask (it fails open on one),
// so ask is a deny that says so; a deny always carries a non-empty reason,
// which Codex requires. An allow prints nothing: Codex's own approvals
// still apply. A payload joule could not read is exit 2 with the reason on
// stderr, which Codex honours only when stderr is non-empty.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	if call == nil || call.Event == nil || call.Event.Input == nil || (call.Hook != PreToolUse && call.Hook != PermissionRequest) {
		res = hook.NoAsk(Host, hook.NoRewrite(Host, res))
		if res.Decision != gate.Deny {
			res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
		}
		return hook.Output{Stderr: hook.Reason(res) + "\n", Exit: 2}
	}
	if call.Hook == PermissionRequest {
		if res.Decision == gate.Allow || res.Decision == gate.Ask {
			return hook.Output{} // Codex shows its own approval prompt
		}
		if res.Decision == gate.Rewrite && hook.SameCommand(call.Input, res.UpdatedInput) {
			// The contained line PreToolUse handed back, judged again by
			// its inner line: the user approves what will run.
			return hook.Output{}
		}
		res = hook.NoRewrite(Host, res)
		return hook.Output{Stdout: hook.Marshal(output{specific{HookEventName: PermissionRequest, Decision: &behavior{Behavior: gate.Deny, Message: hook.Reason(res)}}})}
	}
	res = hook.NoAsk(Host, res)
	switch res.Decision {
	case gate.Allow:
		return hook.Output{}
	case gate.Rewrite:
		if len(res.UpdatedInput) > 0 && string(call.Event.Input) == strings.TrimSpace(string(call.Input)) {
			return hook.Output{Stdout: hook.Marshal(output{specific{HookEventName: PreToolUse, PermissionDecision: gate.Allow,
				PermissionDecisionReason: hook.Reason(res), UpdatedInput: res.UpdatedInput}})}
		}
		res = hook.NoRewrite(Host, res)
	}
	return hook.Output{Stdout: hook.Marshal(output{specific{HookEventName: PreToolUse, PermissionDecision: gate.Deny, PermissionDecisionReason: hook.Reason(res)}})}
}

// CanAsk implements hook.AskLimiter: only PermissionRequest shows Codex's
// own approval prompt; PreToolUse has no ask.
func (Adapter) CanAsk(call *hook.Call) bool { return call.Hook == PermissionRequest }
