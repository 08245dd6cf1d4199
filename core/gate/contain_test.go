package gate

import (
	"encoding/json"
	"strings"
	"testing"
)

func bashEvent(session, line string) *Event {
	in, _ := json.Marshal(map[string]string{"command": line, "description": "d"})
	return &Event{SessionID: session, Tool: "Bash", Input: in, Cwd: "/ws"}
}

func commandOf(t *testing.T, in json.RawMessage) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(in, &m); err != nil {
		t.Fatal(err)
	}
	if m["description"] != "d" {
		t.Fatalf("the other input fields were not kept: %s", in)
	}
	return m["command"]
}

func TestContain(t *testing.T) {
	c := &Containment{Exe: "/opt/j oule/joule", ABI: 7}
	allow := Verdict{Decision: Allow, Code: CodeAllowed, Reason: "granted"}
	for _, tc := range []struct{ line, want string }{
		{"go test ./...", `'/opt/j oule/joule' exec --session 's' -- /bin/bash -c 'go test ./...'`},
		{"echo 'a'\"b\" $HOME", `'/opt/j oule/joule' exec --session 's' -- /bin/bash -c 'echo '\''a'\''"b" $HOME'`},
		{"git push origin main", `'/opt/j oule/joule' exec --session 's' --net -- /bin/bash -c 'git push origin main'`},
		{"cd x && curl -s http://h/", `'/opt/j oule/joule' exec --session 's' --net -- /bin/bash -c 'cd x && curl -s http://h/'`},
		{"git status", `'/opt/j oule/joule' exec --session 's' -- /bin/bash -c 'git status'`},
	} {
		v, in := c.contain(bashEvent("s", tc.line), allow)
		if v.Decision != Rewrite || !strings.Contains(v.Reason, "contained: runs under joule exec (landlock ABI 7") {
			t.Fatalf("%q: %+v", tc.line, v)
		}
		if got := commandOf(t, in); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.line, got, tc.want)
		}
		// The rewritten line comes back (PermissionRequest, or the model
		// writing it): judged by the original, wrapped the same way.
		back := c.unwrap(bashEvent("s", tc.want))
		if got := commandOf(t, back.Input); got != tc.line {
			t.Errorf("unwrap %q: got %q", tc.want, got)
		}
	}
	// Not for another session, another binary, or anything not exactly ours.
	for _, line := range []string{
		`'/opt/j oule/joule' exec --session 'other' -- /bin/bash -c 'ls'`,
		`'/tmp/joule' exec --session 's' -- /bin/bash -c 'ls'`,
		`'/opt/j oule/joule' exec --session 's' -- /bin/bash -c 'ls'; rm -rf /`,
		`'/opt/j oule/joule' exec --session 's' -- /bin/sh -c 'ls'`,
	} {
		if got := commandOf(t, c.unwrap(bashEvent("s", line)).Input); got != line {
			t.Errorf("unwrapped %q to %q", line, got)
		}
	}
	// Denies, asks and other tools pass unchanged.
	for _, v := range []Verdict{deny(CodeNotGranted, "no"), {Decision: Ask, Code: CodeAskRule}} {
		if got, in := c.contain(bashEvent("s", "ls"), v); got != v || in != nil {
			t.Errorf("%+v was changed to %+v", v, got)
		}
	}
	if got, in := c.contain(&Event{SessionID: "s", Tool: "Read", Input: json.RawMessage(`{"file_path":"/ws/a"}`)}, allow); got != allow || in != nil {
		t.Errorf("a Read was rewritten: %+v", got)
	}
	var none *Containment
	if got, in := none.contain(bashEvent("s", "ls"), allow); got != allow || in != nil {
		t.Errorf("containment off changed the verdict: %+v", got)
	}
	// Without Landlock: a deny unless the fallback allows analysis alone.
	if got, _ := (&Containment{Exe: "/j"}).contain(bashEvent("s", "ls"), allow); got.Decision != Deny || got.Code != CodeNoContainment {
		t.Errorf("without Landlock: %+v", got)
	}
	if got, in := (&Containment{Exe: "/j", Fallback: true}).contain(bashEvent("s", "ls"), allow); got.Decision != Allow || in != nil || !strings.Contains(got.Reason, "analysis alone decided") {
		t.Errorf("without Landlock, fallback unconfined: %+v", got)
	}
}
