package codex

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Codex runs a project's or user's hook only once a person has trusted it:
// its config.toml must hold, under [hooks.state."<key>"], a trusted_hash
// equal to the hook's current hash (Codex's /hooks screen writes it). The
// key is "<hooks.json path>:<event>:<group index>:<handler index>" and the
// hash, as codex-rs/hooks/src/engine/discovery.rs computes it
// (command_hook_hash, version_for_toml), is "sha256:" and the hex SHA-256
// of the compact JSON, keys sorted, of the normalized identity
// {"event_name", "matcher", "hooks": [the one handler]}, with the handler's
// timeout defaulted to 600 and its Windows command left out.

// eventLabels are Codex's snake-case names of the events joule installs.
var eventLabels = map[string]string{PreToolUse: "pre_tool_use", PermissionRequest: "permission_request"}

// HookKey is Codex's [hooks.state] key for handler hi of group gi of event
// in the hooks.json at path.
func HookKey(path, event string, gi, hi int) string {
	return fmt.Sprintf("%s:%s:%d:%d", path, eventLabels[event], gi, hi)
}

// TrustHash is the trusted_hash Codex expects for a command handler
// (a hooks.json handler object) in a group with matcher ("" for none) of
// event. It reports an error for a handler that is not a command with a
// non-empty command string.
func TrustHash(event, matcher string, handler map[string]any) (string, error) {
	label, ok := eventLabels[event]
	if !ok {
		return "", fmt.Errorf("codex: no trust label for event %q", event)
	}
	cmd, _ := handler["command"].(string)
	if t, _ := handler["type"].(string); t != "command" || cmd == "" {
		return "", fmt.Errorf("codex: %s handler is not a command hook", event)
	}
	timeout := 600.0
	switch v := handler["timeout"].(type) {
	case float64:
		timeout = v
	case int:
		timeout = float64(v)
	case json.Number:
		if f, err := v.Float64(); err == nil {
			timeout = f
		}
	}
	if timeout < 1 {
		timeout = 1
	}
	async, _ := handler["async"].(bool)
	h := map[string]any{"type": "command", "command": cmd, "timeout": uint64(timeout), "async": async}
	if sm, ok := handler["statusMessage"].(string); ok {
		h["statusMessage"] = sm
	}
	identity := map[string]any{"event_name": label, "hooks": []any{h}}
	if matcher != "" {
		identity["matcher"] = matcher
	}
	var buf bytes.Buffer
	if err := canonical(&buf, identity); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// canonical writes v as serde_json would: compact, object keys sorted,
// and no HTML escaping of <, > and &.
func canonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := canonical(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := canonical(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := canonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	return nil
}

// The trust joule records with --trust sits in the user's config.toml
// between these two lines, rebuilt on every install; a table of the same
// name that is already in the file (written by Codex's own dialogs) is
// edited in place instead, since TOML forbids defining it twice.
const (
	trustBegin = "# joule: trust begin (written by `joule install codex --trust`; `joule install codex --uninstall` removes it)"
	trustEnd   = "# joule: trust end"
)

// trustEntry is one key = "value" that must hold in table (a dotted TOML
// table name, its segments already quoted where needed).
type trustEntry struct {
	table, key, value string
}

// planTrust returns the user's config.toml (before, at path) with every
// entry of want holding, and joule's previous trust block rebuilt: the
// entries of other installs (another project's) are kept, those that own
// reports as this install's are replaced by want.
func planTrust(before []byte, path string, want []trustEntry, own func(table string) bool) ([]byte, error) {
	kept, _, err := withoutMarked(before, trustBegin, trustEnd, path)
	if err != nil {
		return nil, err
	}
	for _, e := range blockEntries(before) {
		if !own(e.table) {
			want = append([]trustEntry{e}, want...)
		}
	}
	text := string(kept)
	var block strings.Builder
	for _, e := range want {
		var doc map[string]any
		if _, err := toml.Decode(text, &doc); err != nil {
			return nil, fmt.Errorf("%s is not valid TOML (%v); fix it, joule will not edit it", path, err)
		}
		tbl, exists := lookupTable(doc, e.table)
		if !exists {
			fmt.Fprintf(&block, "[%s]\n%s = %s\n", e.table, e.key, tomlQuote(e.value))
			continue
		}
		if v, _ := tbl[e.key].(string); v == e.value {
			continue
		}
		edited, ok := setInTable(text, e.table, e.key, e.value)
		if !ok {
			return nil, fmt.Errorf("%s defines [%s] in a form joule does not edit: set %s = %s there yourself", path, e.table, e.key, tomlQuote(e.value))
		}
		text = edited
	}
	if block.Len() > 0 {
		// As planConfig appends its block: the file's own end kept, one
		// blank line between, which withoutMarked takes back.
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if text != "" {
			text += "\n"
		}
		text += trustBegin + "\n" + block.String() + trustEnd + "\n"
	}
	var doc map[string]any
	if _, err := toml.Decode(text, &doc); err != nil {
		return nil, fmt.Errorf("%s: recording Codex's trust would not parse back (%v); trust the project and joule's hooks in codex (/hooks) instead", path, err)
	}
	for _, e := range want {
		if tbl, _ := lookupTable(doc, e.table); tbl == nil || tbl[e.key] != e.value {
			return nil, fmt.Errorf("%s: recording [%s] %s would not read back; set it there yourself", path, e.table, e.key)
		}
	}
	return []byte(text), nil
}

// lookupTable finds a dotted table name (as trustEntries writes them) in
// a decoded TOML document.
func lookupTable(doc map[string]any, table string) (map[string]any, bool) {
	var segs []string
	// The name is "a.b.\"quoted\"": split on dots outside quotes.
	var cur strings.Builder
	inq, esc := false, false
	for _, r := range table {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case inq && r == '\\':
			cur.WriteRune(r)
			esc = true
		case r == '"':
			cur.WriteRune(r)
			inq = !inq
		case r == '.' && !inq:
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	segs = append(segs, cur.String())
	m := doc
	for _, seg := range segs {
		name := seg
		if strings.HasPrefix(seg, `"`) {
			var v struct{ K string }
			if _, err := toml.Decode("K = "+seg, &v); err != nil {
				return nil, false
			}
			name = v.K
		}
		next, ok := m[name].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// setInTable sets key = "value" in the table whose header line is exactly
// [table] (Codex writes its tables that way), replacing the key's line or
// adding one after the header. It reports false when there is no such
// header line.
func setInTable(text, table, key, value string) (string, bool) {
	lines := strings.SplitAfter(text, "\n")
	header := -1
	for i, l := range lines {
		if t := strings.TrimSpace(l); t == "["+table+"]" {
			header = i
			break
		}
	}
	if header < 0 {
		return text, false
	}
	line := key + " = " + tomlQuote(value) + "\n"
	for i := header + 1; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, "[") {
			break
		}
		if k, _, ok := strings.Cut(t, "="); ok && strings.TrimSpace(k) == key {
			lines[i] = line
			return strings.Join(lines, ""), true
		}
	}
	if !strings.HasSuffix(lines[header], "\n") {
		lines[header] += "\n"
	}
	lines = append(lines[:header+1], append([]string{line}, lines[header+1:]...)...)
	return strings.Join(lines, ""), true
}

// blockEntries reads back the entries of joule's trust block in b, which
// planTrust wrote as "[table]" lines each followed by one key = "value".
func blockEntries(b []byte) []trustEntry {
	var out []trustEntry
	in, table := false, ""
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == trustBegin:
			in = true
		case t == trustEnd:
			in = false
		case !in:
		case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]"):
			table = t[1 : len(t)-1]
		default:
			var kv map[string]any
			if _, err := toml.Decode(t, &kv); err != nil || table == "" {
				continue
			}
			for k, v := range kv {
				if s, ok := v.(string); ok {
					out = append(out, trustEntry{table: table, key: k, value: s})
				}
			}
		}
	}
	return out
}
