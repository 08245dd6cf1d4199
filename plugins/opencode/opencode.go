// Package opencode binds joule to OpenCode's tool.execute.before plugin hook:
// joule.ts, the plugin OpenCode loads, forwards each call to
// `joule hook opencode`, which this adapter answers.
package opencode

import (
	_ "embed"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is the adapter's name: joule hook opencode.
const Host = "opencode"

// BeforeTool is the plugin hook joule.ts forwards.
const BeforeTool = "tool.execute.before"

// JouleServer is the name joule install gives joule's MCP server in
// opencode.json.
const JouleServer = "joule"

// Plugin is joule.ts, the plugin an install copies into OpenCode's plugin
// directory.
//
//go:embed joule.ts
var Plugin []byte

type tool struct {
	name string
	keys map[string]string
}

var tools = map[string]tool{
	"bash":      {"Bash", nil},
	"read":      {"Read", map[string]string{"filePath": "file_path"}},
	"write":     {"Write", map[string]string{"filePath": "file_path"}},
	"edit":      {"Edit", map[string]string{"filePath": "file_path", "oldString": "old_string", "newString": "new_string", "replaceAll": "replace_all"}},
	"multiedit": {"MultiEdit", map[string]string{"filePath": "file_path"}},
	"patch":     {"Edit", map[string]string{"filePath": "file_path"}},
	"glob":      {"Glob", nil},
	"grep":      {"Grep", nil},
	"list":      {"Glob", nil},
	"webfetch":  {"WebFetch", nil},
	"task":      {"Task", nil},
	"todowrite": {"TodoWrite", nil},
	"todoread":  {"TodoRead", nil},
}

// Adapter is the OpenCode adapter.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Host() string { return Host }

type payload struct {
	Hook  string `json:"hook"`
	Input *struct {
		Tool      string `json:"tool"`
		SessionID string `json:"sessionID"`
		CallID    string `json:"callID"`
	} `json:"input"`
	Output *struct {
		Args json.RawMessage `json:"args"`
	} `json:"output"`
	Directory string `json:"directory"`
	Worktree  string `json:"worktree"`
}

// Parse maps what joule.ts forwards. OpenCode's built-in tools get the
// gate's names and argument keys; bash's workdir, when absolute, is the cwd;
// the callID is the content id. MCP tools (<server>_<tool>) keep their
// OpenCode names, as the split between server and tool is ambiguous, except
// joule's own server, which joule install registers as "joule": its tools
// are mcp__joule__<tool>, as in every other host.
func (Adapter) Parse(b []byte) (*hook.Call, error) {
	var p payload
	if err := hook.Decode(b, &p); err != nil {
		return nil, err
	}
	ev := &gate.Event{Cwd: p.Directory}
	call := &hook.Call{Hook: p.Hook, Event: ev}
	if p.Hook != BeforeTool {
		return call, &hook.UnknownEventError{Host: Host, Event: p.Hook}
	}
	if p.Input == nil || p.Input.Tool == "" {
		return call, errors.New("input.tool is missing")
	}
	ev.SessionID, ev.Tool = p.Input.SessionID, p.Input.Tool
	if p.Input.CallID != "" {
		id := p.Input.CallID
		ev.ContentID = &id
	}
	var raw json.RawMessage
	if p.Output != nil {
		raw = p.Output.Args
	}
	call.Input = raw
	in, err := hook.InputObject(raw, "output.args")
	if err != nil {
		return call, err
	}
	if rest, ok := strings.CutPrefix(p.Input.Tool, JouleServer+"_"); ok && rest != "" {
		ev.Tool = hook.MCPTool(JouleServer, rest)
	} else if t, ok := tools[p.Input.Tool]; ok {
		ev.Tool = t.name
		if in, err = hook.Rename(in, t.keys); err != nil {
			return call, err
		}
		var m struct {
			Workdir string `json:"workdir"`
		}
		if json.Unmarshal(in, &m) == nil && filepath.IsAbs(m.Workdir) && t.name == "Bash" {
			ev.Cwd = m.Workdir
		}
	}
	ev.Input = in
	return call, nil
}

type answer struct {
	Decision string          `json:"decision"`
	Reason   string          `json:"reason,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
}

// Answer prints the decision joule.ts obeys: allow (with args for a
// rewrite) or deny with a reason, which joule.ts throws. OpenCode cannot ask
// from this hook, so ask is a deny that says so; a rewrite is handed back
// only for tools whose arguments the gate saw unrenamed.
func (Adapter) Answer(call *hook.Call, res gate.Result) hook.Output {
	res = hook.NoAsk(Host, res)
	known := call != nil && call.Event != nil && call.Event.Input != nil
	if known && res.Decision == gate.Rewrite && len(res.UpdatedInput) > 0 && sameJSON(call.Event.Input, call.Input) {
		return hook.Output{Stdout: hook.Marshal(answer{Decision: gate.Allow, Reason: hook.Reason(res), Args: res.UpdatedInput})}
	}
	res = hook.NoRewrite(Host, res)
	if known && res.Decision == gate.Allow {
		return hook.Output{Stdout: hook.Marshal(answer{Decision: gate.Allow})}
	}
	if res.Decision != gate.Deny {
		res = hook.Deny(gate.CodeInternal, "joule reached a decision without a hook event: "+res.Reason)
	}
	return hook.Output{Stdout: hook.Marshal(answer{Decision: gate.Deny, Reason: hook.Reason(res)})}
}

// sameJSON reports whether a and b are the same JSON value: the gate's
// copy of the arguments is re-encoded (Go escapes <, > and &), so bytes
// alone would refuse a rewrite of every command with a redirection.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// CanAsk implements hook.AskLimiter: tool.execute.before cannot ask.
func (Adapter) CanAsk(*hook.Call) bool { return false }
