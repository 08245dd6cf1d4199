package resident

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Deny is host's explicit deny with reason, byte for byte what the host's
// adapter in plugins/ answers for an unsealed deny (a test holds them
// equal; the table, deny_table.go, is generated from the adapters by go
// generate ./plugins/hosts): what the client prints when neither a gate
// nor joule hook could decide in time. reason is the full text ("joule
// deny (code): ..."). An unknown host gets exit 2 and the reason on
// stderr, which every process-spawning host reads as a block.
func Deny(host, reason string) (stdout, stderr []byte, exit int) {
	f, ok := denies[host]
	if !ok {
		return nil, []byte(reason + "\n"), 2
	}
	return join(f.stdout, jsonString(reason)), join(f.stderr, reason), f.exit
}

// denyForm is one host's deny around its reason (see denies).
type denyForm struct {
	stdout, stderr []string
	exit           int
}

func join(pieces []string, reason string) []byte {
	if pieces == nil {
		return nil
	}
	return []byte(strings.Join(pieces, reason))
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
