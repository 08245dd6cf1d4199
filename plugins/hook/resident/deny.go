package resident

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Deny is host's explicit deny with reason, byte for byte what the host's
// adapter in plugins/ answers for an unsealed deny (a test holds them
// equal): what the client prints when neither a gate nor joule hook could
// decide in time. reason is the full text ("joule deny (code): ...").
// An unknown host gets exit 2 and the reason on stderr, which every
// process-spawning host reads as a block.
func Deny(host, reason string) (stdout, stderr []byte, exit int) {
	q := jsonString(reason)
	line := []byte(reason + "\n")
	switch host {
	case "claude-code":
		return []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":` + q + "}}\n"), line, 2
	case "cline":
		return []byte(`{"cancel":true,"errorMessage":` + q + "}\n"), nil, 0
	case "opencode":
		return []byte(`{"decision":"deny","reason":` + q + "}\n"), nil, 0
	case "gemini-cli":
		return []byte(`{"decision":"deny","reason":` + q + "}\n"), line, 2
	case "cursor":
		return []byte(`{"permission":"deny","user_message":` + q + `,"agent_message":` + q + "}\n"), line, 2
	case "antigravity":
		return []byte(`{"decision":"deny","reason":` + q + `,"allow_tool":false,"deny_reason":` + q + "}\n"), line, 2
	default: // codex, windsurf, and any host joule does not know
		return nil, line, 2
	}
}

// jsonString quotes s as encoding/json does with HTML escaping off.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			h := strconv.FormatInt(int64(r), 16)
			if len(h) < 2 {
				b.WriteByte('0')
			}
			b.WriteString(h)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '\u2028':
			b.WriteString(`\u2028`)
		case r == '\u2029':
			b.WriteString(`\u2029`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}
