// Package hook is the contract every host adapter in plugins/ implements: read
// one host hook payload into the gate's ActionEvent, and write the gate's
// decision back as that host's native answer, failing closed on everything.
package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/joulehook/joule/core/gate"
)

// Output is a host's view of one hook run: what it reads on stdout and
// stderr, and the exit status.
type Output struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Call is one parsed hook invocation.
type Call struct {
	Event *gate.Event // the normalized action; nil when the payload could not be read
	Hook  string      // the host's hook event name, as sent
	// Input is the tool input exactly as the host sent it, for hosts whose
	// tool vocabulary differs from the gate's.
	Input json.RawMessage
}

// Adapter maps one host. Parse never panics; any error is a refusal, and the
// (possibly partial) Call it returns alongside names what was known.
type Adapter interface {
	// Host is the name used on the command line: joule hook <Host>.
	Host() string
	Parse(payload []byte) (*Call, error)
	// Answer renders res for the host. call may be partial or nil.
	Answer(call *Call, res gate.Result) Output
}

// AskLimiter is implemented by adapters whose host cannot put an ask to a
// person for some calls. Run then has the gate seal such an ask as the deny
// the host carries out, so the receipt and the host agree.
type AskLimiter interface {
	CanAsk(call *Call) bool
}

// RewriteLimiter is implemented by adapters whose host can replace the
// input of some calls only (Cline: its SDK's run_commands, not the VS Code
// extension's execute_command). Run decides such a call without the
// containment it could not carry, the receipt saying why, instead of
// denying every command the gate allows.
type RewriteLimiter interface {
	CanRewrite(call *Call) bool
}

// Decider is the gate as an adapter needs it; *gate.Gate implements it.
type Decider interface {
	Decide(ctx context.Context, ev *gate.Event) gate.Result
	DecideNoAsk(ctx context.Context, ev *gate.Event, host string) gate.Result
	Refuse(ctx context.Context, session, tool, cwd string, payload []byte, code, reason string) gate.Result
}

// Run decides one payload for a host. Whatever happens (an unreadable
// payload, an unknown hook event, a panic in the adapter or the gate) the
// host gets its own explicit deny, never silence or a crash, because every
// host runs the action when a hook fails.
func Run(ctx context.Context, a Adapter, d Decider, payload []byte) (out Output) {
	var call *Call
	defer func() {
		if p := recover(); p != nil {
			out = Fallback(a, call, gate.Result{Decision: gate.Deny, Code: gate.CodeInternal, Reason: fmt.Sprintf("internal error in joule's %s adapter: %v", a.Host(), p)})
		}
	}()
	call, err := a.Parse(payload)
	if err != nil {
		session, tool, cwd := "", "", ""
		if call != nil && call.Event != nil {
			session, tool, cwd = call.Event.SessionID, call.Event.Tool, call.Event.Cwd
		}
		var ue *UnknownEventError
		reason := err.Error()
		if !errors.As(err, &ue) {
			reason = "joule cannot read this " + a.Host() + " hook payload: " + reason
		}
		return a.Answer(call, d.Refuse(ctx, session, tool, cwd, payload, gate.CodeMalformed, reason))
	}
	if err := call.Event.Validate(); err != nil {
		ev := call.Event
		return a.Answer(call, d.Refuse(ctx, ev.SessionID, ev.Tool, ev.Cwd, payload, gate.CodeMalformed, "joule cannot read this "+a.Host()+" hook payload: "+err.Error()))
	}
	if l, ok := a.(RewriteLimiter); ok && !l.CanRewrite(call) {
		if c, ok := d.(gate.Contained); ok && c.C != nil && c.C.Off == "" {
			d = gate.Contained{Gate: c.Gate, C: &gate.Containment{Off: a.Host() + " cannot replace this call's input from its hook"}}
		}
	}
	if l, ok := a.(AskLimiter); ok && !l.CanAsk(call) {
		return a.Answer(call, d.DecideNoAsk(ctx, call.Event, a.Host()))
	}
	return a.Answer(call, d.Decide(ctx, call.Event))
}

// Fallback answers res through a, and if even that panics, with a plain
// exit-2 deny that most hosts honour.
func Fallback(a Adapter, call *Call, res gate.Result) (out Output) {
	defer func() {
		if recover() != nil {
			out = Output{Stderr: res.Reason + "\n", Exit: 2}
		}
	}()
	return a.Answer(call, res)
}

// Deny is an unsealed deny for failures before a gate exists (no key, a
// store that cannot be opened): the host still gets its explicit deny.
func Deny(code, reason string) gate.Result {
	return gate.Result{Decision: gate.Deny, Code: code, Reason: reason}
}

// UnknownEventError is a hook event an adapter does not gate. It is still a
// deny: a gate wired to an event it does not understand must not wave it
// through.
type UnknownEventError struct{ Host, Event string }

func (e *UnknownEventError) Error() string {
	if e.Event == "" {
		return fmt.Sprintf("the %s hook payload names no hook event, so joule cannot tell what it gates", e.Host)
	}
	return fmt.Sprintf("joule does not gate the %s hook event %q; wire it only to the events in docs/hosts.md", e.Host, e.Event)
}

// MaxPayload bounds a host payload; a larger one is refused unread.
const MaxPayload = gate.MaxEventSize

// Decode reads payload as one JSON object into v with a specific error for
// each way it can be wrong. Unknown fields are allowed: hosts add fields
// across versions, and the gate judges only what it maps.
func Decode(payload []byte, v any) error {
	t := bytes.TrimSpace(payload)
	switch {
	case len(payload) > MaxPayload:
		return fmt.Errorf("payload is %d bytes, above the %d MiB limit", len(payload), MaxPayload>>20)
	case len(t) == 0:
		return errors.New("empty input: want one JSON object on stdin")
	case !utf8.Valid(payload):
		return errors.New("payload is not valid UTF-8")
	case t[0] == '[':
		return errors.New("payload is a JSON array: want one JSON object")
	case t[0] != '{':
		return errors.New("payload is not JSON: want one JSON object")
	}
	if err := gate.CheckKeys(t, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return fmt.Errorf("field %q has the wrong type (%s)", ute.Field, ute.Value)
		}
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// InputObject checks that raw is a JSON object (the shape every tool input must
// have) and returns it; a missing input is the empty object.
func InputObject(raw json.RawMessage, field string) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' {
		return nil, fmt.Errorf("%s must be a JSON object", field)
	}
	return t, nil
}

// Marshal encodes v without HTML escaping, so reasons with < > & read as
// written.
func Marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("{}\n")
	}
	return b.Bytes()
}

// Reason is the text a host shows for res: the reason with its machine code,
// so a user can look the code up in docs/gate.md.
func Reason(res gate.Result) string {
	r := res.Reason
	if r == "" {
		r = res.Decision
	}
	if res.Code != "" && res.Code != gate.CodeAllowed {
		r = fmt.Sprintf("joule %s (%s): %s", res.Decision, res.Code, r)
	}
	return r
}

// NoAsk degrades an ask to a deny for a host whose hook cannot ask a person
// (JouleHook §3.2), saying so in the reason. Other decisions pass unchanged.
func NoAsk(host string, res gate.Result) gate.Result {
	if res.Decision != gate.Ask {
		return res
	}
	res.Decision = gate.Deny
	res.Reason = fmt.Sprintf("the grant says to ask a person, but %s cannot ask from a hook, so joule denies: %s", host, res.Reason)
	return res
}

// NoRewrite degrades a rewrite to a deny for a host that cannot replace a
// tool's input, or whose input the gate saw translated.
func NoRewrite(host string, res gate.Result) gate.Result {
	if res.Decision != gate.Rewrite {
		return res
	}
	res.Decision = gate.Deny
	res.Reason = fmt.Sprintf("the grant allows this action only rewritten, but %s cannot replace a tool's input from this hook, so joule denies: %s", host, res.Reason)
	return res
}

// SameCommand reports whether two tool inputs carry the same command: a
// permission request for the line a contained rewrite handed back, judged
// again by its inner line, which the host's own dialog may then show.
func SameCommand(a, b json.RawMessage) bool {
	var x, y struct {
		Command *string `json:"command"`
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || x.Command == nil || y.Command == nil {
		return false
	}
	return *x.Command == *y.Command
}

// Rename returns input with keys renamed (old → new), every other key kept:
// hosts name the same argument differently (filePath, file_path).
func Rename(input json.RawMessage, renames map[string]string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(input, &m); err != nil {
		return nil, fmt.Errorf("tool input is not a JSON object: %v", err)
	}
	for from, to := range renames {
		if v, ok := m[from]; ok {
			if _, clash := m[to]; !clash {
				m[to] = v
				delete(m, from)
			}
		}
	}
	return json.Marshal(m)
}

// MCPTool is the gate's name for an MCP tool: mcp__<server>__<tool>, the
// vocabulary capability rules are written in.
func MCPTool(server, tool string) string { return "mcp__" + server + "__" + tool }

// ToolPayload is the tool-hook input Claude Code defined and Codex and
// Gemini CLI copied: the base fields every one of them sends.
type ToolPayload struct {
	SessionID string          `json:"session_id"`
	Cwd       string          `json:"cwd"`
	HookEvent string          `json:"hook_event_name"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
}

// Tool returns p: a host's payload type embeds ToolPayload, adds its own
// fields, and is parsed whole by ParseToolPayload.
func (p *ToolPayload) Tool() *ToolPayload { return p }

// ParseToolPayload decodes b into p (a *ToolPayload, or a host's payload
// embedding one) and maps it onto a Call for one of events: tool and input
// pass through, the tool_use_id is the content id. Any problem is an
// error, with the partial Call naming what was known.
func ParseToolPayload(host string, b []byte, p interface{ Tool() *ToolPayload }, events ...string) (*Call, error) {
	if err := Decode(b, p); err != nil {
		return nil, err
	}
	base := p.Tool()
	call := &Call{Hook: base.HookEvent, Input: base.ToolInput,
		Event: &gate.Event{SessionID: base.SessionID, Tool: base.ToolName, Cwd: base.Cwd}}
	if !slices.Contains(events, base.HookEvent) {
		return call, &UnknownEventError{Host: host, Event: base.HookEvent}
	}
	if base.ToolName == "" {
		return call, errors.New("tool_name is missing")
	}
	in, err := InputObject(base.ToolInput, "tool_input")
	if err != nil {
		return call, err
	}
	call.Event.Input = in
	if base.ToolUseID != "" {
		id := base.ToolUseID
		call.Event.ContentID = &id
	}
	return call, nil
}
