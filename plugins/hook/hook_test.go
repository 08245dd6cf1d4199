package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/gate"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		in, err string
	}{
		{`{"a":"b"}`, ""},
		{"", "empty input"},
		{"  \n", "empty input"},
		{"[1]", "JSON array"},
		{"hello", "not JSON"},
		{"{\"a\":\"\xff\"}", "UTF-8"},
		{`{"a":"x"} {"b":2}`, "trailing data"},
		{`{"a":`, "not a JSON object"},
		{`{"a":1}`, `field "a" has the wrong type`},
		{"{\"a\":\"" + strings.Repeat("x", MaxPayload) + "\"}", "above the 16 MiB limit"},
		// Keys are exact, as hosts write and read them: encoding/json alone
		// would let A or a second a override a.
		{`{"a":"x","A":"y"}`, `key "A" is not "a"`},
		{`{"a":"x","a":"y"}`, `key "a" appears twice`},
		{`{"b":"x","B":"y"}`, ""},
	}
	for _, tt := range tests {
		var v struct {
			A string `json:"a"`
		}
		err := Decode([]byte(tt.in), &v)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%.40q: got %v, want %q", tt.in, err, tt.err)
		}
	}
}

type panicky struct{ inParse bool }

func (panicky) Host() string { return "test" }
func (p panicky) Parse([]byte) (*Call, error) {
	if p.inParse {
		panic("boom")
	}
	return &Call{Hook: "x", Event: &gate.Event{SessionID: "s", Tool: "Bash", Input: json.RawMessage("{}"), Cwd: "/"}}, nil
}
func (p panicky) Answer(_ *Call, res gate.Result) Output {
	if !p.inParse {
		panic("boom in answer")
	}
	return Output{Stdout: []byte(res.Decision + ":" + res.Reason), Exit: 2}
}

// fixedGate allows every event and denies every refusal.
type fixedGate struct{}

func (fixedGate) Decide(context.Context, *gate.Event) gate.Result {
	return gate.Result{Decision: gate.Allow}
}
func (fixedGate) DecideNoAsk(context.Context, *gate.Event, string) gate.Result {
	return gate.Result{Decision: gate.Allow}
}
func (fixedGate) Refuse(context.Context, string, string, string, []byte, string, string) gate.Result {
	return gate.Result{Decision: gate.Deny}
}

// TestRunPanics: a panic in an adapter still reaches the host as a deny.
// TestToolPayloadKeysExact: Tool_Name must not override tool_name.
func TestToolPayloadKeysExact(t *testing.T) {
	var p ToolPayload
	_, err := ParseToolPayload("test", []byte(`{"session_id":"s","cwd":"/","hook_event_name":"PreToolUse","tool_name":"Read","Tool_Name":"Bash","tool_input":{}}`), &p, "PreToolUse")
	if err == nil || !strings.Contains(err.Error(), `key "Tool_Name" is not "tool_name"`) {
		t.Fatalf("got %v, want the case-differing key refused", err)
	}
}

func TestRunPanics(t *testing.T) {
	out := Run(context.Background(), panicky{inParse: true}, fixedGate{}, []byte("{}"))
	if out.Exit != 2 || !strings.Contains(string(out.Stdout), "deny:internal error in joule's test adapter: boom") {
		t.Fatalf("panic in Parse: %+v", out)
	}
	// Answer panics on the allow and on the fallback: the last resort is a
	// plain exit 2 with the reason.
	out = Run(context.Background(), panicky{}, fixedGate{}, []byte("{}"))
	if out.Exit != 2 || !strings.Contains(out.Stderr, "internal error") {
		t.Fatalf("panic in Answer: %+v", out)
	}
}

func TestNoAskNoRewrite(t *testing.T) {
	ask := gate.Result{Decision: gate.Ask, Code: gate.CodeAskRule, Reason: "r"}
	if got := NoAsk("h", ask); got.Decision != gate.Deny || !strings.Contains(got.Reason, "h cannot ask") {
		t.Errorf("NoAsk: %+v", got)
	}
	rw := gate.Result{Decision: gate.Rewrite, UpdatedInput: json.RawMessage(`{}`)}
	if got := NoRewrite("h", rw); got.Decision != gate.Deny || !strings.Contains(got.Reason, "cannot replace") {
		t.Errorf("NoRewrite: %+v", got)
	}
	for _, d := range []string{gate.Allow, gate.Deny} {
		if NoAsk("h", gate.Result{Decision: d}).Decision != d || NoRewrite("h", gate.Result{Decision: d}).Decision != d {
			t.Errorf("%s changed", d)
		}
	}
}

// TestApply: a change backs up what it replaces, an unchanged file is not
// touched, a deletion removes the file.
func TestApply(t *testing.T) {
	dir, backups := t.TempDir(), filepath.Join(t.TempDir(), "backups")
	p := filepath.Join(dir, "sub", "f.json")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lines, err := Apply([]Change{{Path: p, After: []byte("a")}}, now, backups)
	if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "wrote ") {
		t.Fatalf("create: %v %v", lines, err)
	}
	lines, _ = Apply([]Change{{Path: p, Before: []byte("a"), After: []byte("a")}}, now, backups)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "unchanged ") {
		t.Fatalf("unchanged: %v", lines)
	}
	lines, _ = Apply([]Change{{Path: p, Before: []byte("a"), After: []byte("b")}}, now, backups)
	found, _ := filepath.Glob(filepath.Join(backups, "f.json.*.20260102T030405.000.bak"))
	if len(found) != 1 {
		t.Fatalf("backups %v, want one of f.json in %s", found, backups)
	}
	if b, _ := os.ReadFile(found[0]); string(b) != "a" || !strings.Contains(lines[0], found[0]) {
		t.Fatalf("backup: %v %q", lines, b)
	}
	if fi, _ := os.Stat(found[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want 0600", fi.Mode().Perm())
	}
	Apply([]Change{{Path: p, Before: []byte("b")}}, now.Add(time.Second), backups)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("not removed")
	}
	// Nothing of joule's is left beside the file: a project's git status
	// stays clean.
	if left, _ := filepath.Glob(filepath.Join(dir, "sub", "*")); len(left) != 0 {
		t.Errorf("left in the project: %v", left)
	}
	// Two files of the same name in different directories keep apart.
	q := filepath.Join(dir, "other", "f.json")
	Apply([]Change{{Path: q, After: []byte("x")}}, now, backups)
	Apply([]Change{{Path: q, Before: []byte("x"), After: []byte("y")}}, now, backups)
	if both, _ := filepath.Glob(filepath.Join(backups, "f.json.*.20260102T030405.000.bak")); len(both) != 2 {
		t.Errorf("backups %v, want two", both)
	}
}

// TestSetGroups keeps the user's handlers and groups, replaces joule's, and
// removes only joule's on uninstall.
func TestSetGroups(t *testing.T) {
	var hooks map[string]any
	json.Unmarshal([]byte(`{"PreToolUse":[{"matcher":"Bash","hooks":[{"command":"lint"},{"command":"/old/joule hook h"}]},{"matcher":"*","hooks":[{"command":"/old/joule hook h"}]}],"Stop":[{"hooks":[{"command":"x"}]}]}`), &hooks)
	isOurs := IsJouleCommand("h")
	h := map[string]any{"command": "/new/joule hook h"}
	if err := SetGroups(hooks, []string{"PreToolUse"}, "*", h, isOurs, true, "f"); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(hooks)
	want := `{"PreToolUse":[{"hooks":[{"command":"lint"}],"matcher":"Bash"},{"hooks":[{"command":"/new/joule hook h"}],"matcher":"*"}],"Stop":[{"hooks":[{"command":"x"}]}]}`
	if string(got) != want {
		t.Fatalf("install:\n got %s\nwant %s", got, want)
	}
	SetGroups(hooks, nil, "", nil, isOurs, false, "f")
	got, _ = json.Marshal(hooks)
	if want := `{"PreToolUse":[{"hooks":[{"command":"lint"}],"matcher":"Bash"}],"Stop":[{"hooks":[{"command":"x"}]}]}`; string(got) != want {
		t.Fatalf("uninstall:\n got %s\nwant %s", got, want)
	}
}
