// Package geminicli binds joule to Gemini CLI's BeforeTool hook: it maps
// Gemini's tool names onto the gate's vocabulary and answers with Gemini's
// decision JSON.
package geminicli

import (
	"encoding/json"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook gemini-cli.
const Host = "gemini-cli"

// BeforeTool is the only Gemini CLI event that gates a tool call.
const BeforeTool = "BeforeTool"

// tools maps Gemini's built-in tools whose input keys are already the
// gate's (command, file_path, content, old_string, new_string, pattern,
// query): the input passes unchanged, so a rewrite can be handed back.
var tools = map[string]string{
	"run_shell_command":   "Bash",
	"read_file":           "Read",
	"write_file":          "Write",
	"replace":             "Edit",
	"glob":                "Glob",
	"grep_search":         "Grep",
	"search_file_content": "Grep",
	"google_web_search":   "WebSearch",
	"write_todos":         "TodoWrite",
}

// Adapter is the Gemini CLI hook adapter.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

type payload struct {
	hook.ToolPayload
	MCPContext *struct {
		ServerName string `json:"server_name"`
		ToolName   string `json:"tool_name"`
	} `json:"mcp_context"`
}

// Parse maps a BeforeTool payload. MCP tools (mcp_context present) become
// mcp__<server>__<tool>; a tool Gemini names that the gate has no word for
// keeps its Gemini name, which a grant can name in a rule. Gemini gives no
// per-call id, so there is no content id.
func (Adapter) Parse(b []byte) (*hook.Call, error) {
	var p payload
	call, err := hook.ParseToolPayload(Host, b, &p, BeforeTool)
	if err != nil {
		return call, err
	}
	// Gemini gives no per-call id: a tool_use_id is not its field.
	call.Event.ContentID = nil
	in := call.Event.Input
	switch {
	case p.MCPContext != nil && p.MCPContext.ServerName != "" && p.MCPContext.ToolName != "":
		call.Event.Tool = hook.MCPTool(p.MCPContext.ServerName, p.MCPContext.ToolName)
	case tools[p.ToolName] != "":
		call.Event.Tool = tools[p.ToolName]
	case p.ToolName == "web_fetch":
		// web_fetch carries its URLs inside a prompt; the gate judges the
		// first one, and a prompt without one is a fetch it cannot judge.
		call.Event.Tool = "WebFetch"
		var in struct {
			Prompt string `json:"prompt"`
		}
		json.Unmarshal(call.Event.Input, &in)
		if u := firstURL(in.Prompt); u != "" {
			call.Event.Input, _ = json.Marshal(map[string]string{"url": u, "prompt": in.Prompt})
		}
	case p.ToolName == "list_directory":
		call.Event.Tool = "Glob"
		call.Event.Input, err = hook.Rename(in, map[string]string{"dir_path": "path"})
	}
	return call, err
}

func firstURL(s string) string {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "https://") || strings.HasPrefix(f, "http://") {
			return strings.TrimRight(f, ".,;:)]}'\"")
		}
	}
	return ""
}

type output struct {
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason,omitempty"`
	HookSpecificOutput *specificOutput `json:"hookSpecificOutput,omitempty"`
}

type specificOutput struct {
	HookEventName string          `json:"hookEventName"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// Answer renders Gemini's decision JSON on stdout with exit 0; Gemini
// parses it whatever the exit status. A payload joule could not read also
// exits 2 with the reason on stderr, which Gemini treats as a deny even if
// it stopped reading JSON. A rewrite is handed back only for tools whose
// input the gate saw unchanged.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	if call == nil || call.Hook != BeforeTool || call.Event == nil || call.Event.Input == nil {
		res = hook.NoAsk(Host, hook.NoRewrite(Host, res))
		reason := hook.Reason(res)
		return hook.Output{Stdout: hook.Marshal(output{Decision: gate.Deny, Reason: reason}), Stderr: reason + "\n", Exit: 2}
	}
	switch res.Decision {
	case gate.Allow:
		return hook.Output{Stdout: hook.Marshal(output{Decision: gate.Allow})}
	case gate.Ask:
		return hook.Output{Stdout: hook.Marshal(output{Decision: gate.Ask, Reason: hook.Reason(res)})}
	case gate.Rewrite:
		if len(res.UpdatedInput) > 0 && string(call.Event.Input) == string(call.Input) {
			return hook.Output{Stdout: hook.Marshal(output{Decision: gate.Allow, Reason: hook.Reason(res),
				HookSpecificOutput: &specificOutput{HookEventName: BeforeTool, ToolInput: res.UpdatedInput}})}
		}
		res = hook.NoRewrite(Host, res)
	}
	return hook.Output{Stdout: hook.Marshal(output{Decision: gate.Deny, Reason: hook.Reason(res)})}
}
