package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/joulehook/joule/core/gate"
)

// hookPayload is a host's hook payload: Claude Code's PreToolUse shape
// (session_id, tool_name, tool_input, cwd) or joule's own ActionEvent
// (session_id, tool, input, cwd). Other fields hosts send are ignored.
type hookPayload struct {
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Cwd       string          `json:"cwd"`
	ContentID *string         `json:"content_id"`
	HookEvent string          `json:"hook_event_name"`
	Payload   json.RawMessage `json:"payload"`
}

// event normalizes the payload to the ActionEvent JSON the gate reads. What
// cannot be normalized is left for the gate to refuse (malformed-event).
func (p hookPayload) event() ([]byte, string, error) {
	if len(p.Payload) > 0 && string(p.Payload) != "null" {
		raw := p.Payload
		var text string
		if json.Unmarshal(raw, &text) == nil { // the payload as JSON text
			raw = []byte(text)
		}
		var inner hookPayload
		if err := json.Unmarshal(raw, &inner); err != nil {
			return nil, "", fmt.Errorf("payload is not a hook payload object: %v", err)
		}
		if len(inner.Payload) > 0 {
			return nil, "", errors.New("payload must not nest another payload")
		}
		return inner.event()
	}
	tool, input := p.Tool, p.Input
	if p.ToolName != "" {
		tool, input = p.ToolName, p.ToolInput
	}
	// Some hosts (Cursor's beforeMCPExecution) send the tool input as JSON text.
	var text string
	if len(input) > 0 && json.Unmarshal(input, &text) == nil {
		input = json.RawMessage(text)
	}
	ev := map[string]any{"session_id": p.SessionID, "tool": tool, "cwd": p.Cwd}
	if len(input) > 0 {
		ev["input"] = input
	}
	if p.ContentID != nil {
		ev["content_id"] = *p.ContentID
	}
	b, err := json.Marshal(ev)
	if err != nil {
		// input is not valid JSON: hand the gate something it will refuse, with the reason.
		return nil, p.HookEvent, fmt.Errorf("tool input is not JSON: %v", err)
	}
	return b, p.HookEvent, nil
}

// hookDecision is what the gate tool returns: the gate's result, and the
// same decision in Claude Code's hook output shape.
type hookDecision struct {
	gate.Result
	URI  string         `json:"receipt_uri,omitempty"`
	Hook map[string]any `json:"hookSpecificOutput"`
}

func (s *Server) gateTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var p hookPayload
	var res gate.Result
	event := "PreToolUse"
	if err := decodeArgs(req, &p, false); err != nil { // hosts send more fields than the gate reads
		res = s.cfg.Gate.DecideJSON(ctx, nil) // sealed as malformed
		res.Reason = "the hook payload cannot be read: " + err.Error() + " (sealed as: " + res.Reason + ")"
	} else if b, ev, err := p.event(); err != nil {
		res = s.cfg.Gate.DecideJSON(ctx, nil)
		res.Reason = err.Error() + " (sealed as: " + res.Reason + ")"
	} else {
		if ev != "" {
			event = ev
		}
		res = s.cfg.Gate.DecideJSON(ctx, b)
	}
	out := hookDecision{Result: res}
	if res.Sequence > 0 {
		out.URI = receiptURI(res.Session, res.Sequence)
		s.subs.poke()
	}
	perm := res.Decision
	if perm == gate.Rewrite {
		perm = gate.Allow
	}
	out.Hook = map[string]any{"hookEventName": event, "permissionDecision": perm, "permissionDecisionReason": fmt.Sprintf("joule gate: %s (%s): %s", res.Decision, res.Code, res.Reason)}
	if len(res.UpdatedInput) > 0 {
		out.Hook["updatedInput"] = res.UpdatedInput
	}
	b, _ := json.Marshal(out)
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(b))}, StructuredContent: out}, nil
}
