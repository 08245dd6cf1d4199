package gate

import (
	"context"
	"encoding/json"
	"unicode/utf8"
)

// Refuse seals a deny that a host adapter reached before it had an event to
// decide: a host payload it could not read, an unknown hook event. The raw
// payload is kept only as a digest; session and tool are the adapter's best
// reading of it (MalformedSession and "(malformed)" when it has none).
func (g *Gate) Refuse(ctx context.Context, session, tool, cwd string, payload []byte, code, reason string) Result {
	if session == "" || len(session) > 256 || !utf8.ValidString(session) {
		session = MalformedSession
	}
	if tool == "" || len(tool) > 256 || !utf8.ValidString(tool) {
		tool = "(malformed)"
	}
	if !utf8.ValidString(cwd) || len(cwd) > 4096 {
		cwd = ""
	}
	if code == "" {
		code = CodeMalformed
	}
	return g.seal(ctx, &Event{SessionID: session, Tool: tool, Input: json.RawMessage("{}"), Cwd: cwd}, payload, Verdict{Decision: Deny, Code: code, Reason: reason}, nil)
}
