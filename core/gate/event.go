// Package gate decides, before it runs, whether an AI agent's tool action is
// allowed: a deterministic function of the normalized action event, the
// signed grant chain and the budget ledger, never a model call. Every
// decision, allow and deny alike, is sealed as a hash-chained receipt.
package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"unicode/utf8"
)

// Event is the normalized ActionEvent (JouleHook §3.1): what a host adapter
// hands the gate. Tool names use Claude Code's vocabulary (Bash, Read,
// Write, Edit, MultiEdit, NotebookEdit, Glob, Grep, WebFetch, WebSearch,
// mcp__server__tool).
type Event struct {
	SessionID string          `json:"session_id"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Cwd       string          `json:"cwd"`
	ContentID *string         `json:"content_id"`
}

// MaxEventSize bounds an event: a larger one is denied unread.
const MaxEventSize = 16 << 20

// MaxCommandSize bounds a shell command line the gate will analyse.
const MaxCommandSize = 1 << 20

// MalformedError reports an event the gate cannot read; it decides deny
// with code malformed-event.
type MalformedError struct{ Reason string }

func (e *MalformedError) Error() string { return "malformed event: " + e.Reason }

func malformed(format string, args ...any) error {
	return &MalformedError{fmt.Sprintf(format, args...)}
}

// ParseEvent decodes and checks one ActionEvent. Any problem is a
// *MalformedError: the gate fails closed on it.
func ParseEvent(b []byte) (*Event, error) {
	if len(b) > MaxEventSize {
		return nil, malformed("event is %d bytes, above the %d MiB limit", len(b), MaxEventSize>>20)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, malformed("empty input: want one ActionEvent JSON object")
	}
	if !utf8.Valid(b) {
		return nil, malformed("event is not valid UTF-8")
	}
	switch t := bytes.TrimSpace(b); t[0] {
	case '{':
	case '[':
		return nil, malformed("the event is a JSON array: want one ActionEvent JSON object")
	default:
		return nil, malformed("the event is not a JSON object: want one ActionEvent JSON object")
	}
	var ev Event
	if err := CheckKeys(b, &ev); err != nil {
		return nil, malformed("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, malformed("field %q has the wrong type (%s)", ute.Field, ute.Value)
		}
		return nil, malformed("not an ActionEvent JSON object: %v", err)
	}
	if dec.More() {
		return nil, malformed("trailing data after the event object")
	}
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return &ev, nil
}

// Validate checks the required fields.
func (ev *Event) Validate() error {
	switch {
	case ev.SessionID == "":
		return malformed("session_id is missing")
	case len(ev.SessionID) > 256:
		return malformed("session_id is longer than 256 bytes")
	case ev.Tool == "":
		return malformed("tool is missing")
	case len(ev.Tool) > 256:
		return malformed("tool name is longer than 256 bytes")
	case ev.Cwd == "":
		return malformed("cwd is missing")
	case !filepath.IsAbs(ev.Cwd):
		return malformed("cwd %q is not absolute", ev.Cwd)
	case len(bytes.TrimSpace(ev.Input)) == 0 || bytes.TrimSpace(ev.Input)[0] != '{':
		return malformed("input must be a JSON object")
	}
	if !utf8.ValidString(ev.SessionID) || !utf8.ValidString(ev.Tool) || !utf8.ValidString(ev.Cwd) {
		return malformed("fields must be valid UTF-8")
	}
	return nil
}

// inputFields decodes the tool input as an object of raw values.
func (ev *Event) inputFields() (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ev.Input, &m); err != nil {
		return nil, malformed("input is not a JSON object: %v", err)
	}
	return m, nil
}

// decodeString decodes a valid JSON string literal as encoding/json does;
// only plain ASCII without escapes is done here.
func decodeString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	body := lit[1 : len(lit)-1]
	for _, c := range body {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			var s string
			err := json.Unmarshal(lit, &s)
			return s, err == nil
		}
	}
	return string(body), true
}

// stringField returns input[key] as a string; required fields must exist.
func stringField(m map[string]json.RawMessage, key string, required bool) (string, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		if required {
			return "", malformed("input.%s is missing", key)
		}
		return "", nil
	}
	s, ok := decodeString(raw)
	if !ok {
		return "", malformed("input.%s must be a string", key)
	}
	return s, nil
}
