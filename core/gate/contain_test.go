package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/sandbox"
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

// TestContainPolicy: with a Runner the line runs under joule-exec with the
// decision's policy, written content-addressed (0600) where joule-exec
// reads it; the rewritten line unwraps to the original, and so does one
// naming any other policy of that directory, while anything else that
// merely looks like it stays as it is.
func TestContainPolicy(t *testing.T) {
	dir := t.TempDir()
	ws := t.TempDir()
	c := &Containment{Exe: "/opt/joule/joule", ABI: 7, Runner: "/opt/joule/joule-exec", PolicyDir: dir}
	g := &grant.Grant{Roots: []string{ws}, Allow: []string{"Read", "Write(src/**)", "Bash(go test:*)"}, Deny: []string{"Read(.env)"}, NotAfter: 4102444800}
	p := &Policy{Chain: grant.Chain{{Grant: g}}, Home: "/home/u", Protected: []string{ws + "/.mcp.json"}, Private: []string{"/home/u/.joule"}}
	allow := Verdict{Decision: Allow, Code: CodeAllowed, Reason: "granted"}
	v, in := c.rewrite(bashEvent("s", "go test ./..."), allow, p)
	if v.Decision != Rewrite {
		t.Fatalf("%+v", v)
	}
	line := commandOf(t, in)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("want one policy file, got %v", entries)
	}
	path := filepath.Join(dir, entries[0].Name())
	if want := `'/opt/joule/joule-exec' --policy '` + path + `' -- /bin/bash -c 'go test ./...'`; line != want {
		t.Fatalf("got  %s\nwant %s", line, want)
	}
	got, err := sandbox.ReadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.NotAfter != g.NotAfter || len(got.Links) != 1 || got.Links[0].Deny[0] != "Read(.env)" || got.Roots[0] != ws || got.Private[0] != "/home/u/.joule" {
		t.Fatalf("policy: %+v", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("policy mode %v", fi.Mode())
	}
	if back := commandOf(t, c.unwrap(bashEvent("s", line)).Input); back != "go test ./..." {
		t.Fatalf("unwrap: %q", back)
	}
	other := `'/opt/joule/joule-exec' --policy '` + dir + `/` + strings.Repeat("ab", 32) + `.json' --net -- /bin/bash -c 'ls'`
	if back := commandOf(t, c.unwrap(bashEvent("s", other)).Input); back != "ls" {
		t.Fatalf("unwrap of another policy of the directory: %q", back)
	}
	for _, l := range []string{
		`'/opt/joule/joule-exec' --policy '/tmp/` + strings.Repeat("ab", 32) + `.json' -- /bin/bash -c 'ls'`,
		`'/opt/joule/joule-exec' --policy '` + dir + `/` + strings.Repeat("AB", 32) + `.json' -- /bin/bash -c 'ls'`,
		`'/opt/joule/joule-exec' --policy '` + dir + `/x.json' -- /bin/bash -c 'ls'`,
		`'/opt/joule/joule-exec' --policy '` + path + `' -- /bin/bash -c 'ls'; id`,
		`'/tmp/joule-exec' --policy '` + path + `' -- /bin/bash -c 'ls'`,
	} {
		if back := commandOf(t, c.unwrap(bashEvent("s", l)).Input); back != l {
			t.Errorf("unwrapped %q to %q", l, back)
		}
	}
	// The same decision again writes nothing new; without a policy (or a
	// directory it cannot be written to) the line runs under joule exec.
	c.rewrite(bashEvent("s", "go test ./..."), allow, p)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a second decision wrote another file: %v", entries)
	}
	_, in = c.rewrite(bashEvent("s", "ls"), allow, nil)
	if l := commandOf(t, in); !strings.HasPrefix(l, `'/opt/joule/joule' exec --session 's' -- `) {
		t.Fatalf("without a policy: %s", l)
	}
	os.WriteFile(filepath.Join(ws, "file"), nil, 0o600)
	c.PolicyDir = filepath.Join(ws, "file", "policy")
	_, in = c.rewrite(bashEvent("s", "ls"), allow, p)
	if l := commandOf(t, in); !strings.HasPrefix(l, `'/opt/joule/joule' exec --session 's' -- `) {
		t.Fatalf("with an unwritable policy directory: %s", l)
	}
}

// TestContainNotices: a contained verdict says in its reason (so its
// receipt) when Landlock alone confines the command, and an install that
// opted out says it is not contained, rewriting nothing and leaving the
// rest as it is.
func TestContainNotices(t *testing.T) {
	allow := Verdict{Decision: Allow, Code: CodeAllowed, Reason: "granted"}
	for _, tc := range []struct {
		name       string
		c          *Containment
		decision   string
		says, not  string
		unwrapsOwn bool
	}{
		{"namespaces", &Containment{Exe: "/j", ABI: 7}, Rewrite, "; contained: runs under joule exec (landlock ABI 7 and user, mount and PID namespaces, network off", "warning", true},
		{"landlock only", &Containment{Exe: "/j", ABI: 7, LandlockOnly: true}, Rewrite,
			"; contained: runs under joule exec (landlock ABI 7, network off (best effort: file modes, owners and times outside the writable trees can be changed", "namespaces, network", true},
		{"no-contain", &Containment{Off: "installed with --no-contain"}, Allow, "granted; not contained: installed with --no-contain, so analysis alone decided", "contained: runs", false},
		{"no-contain beats no landlock", &Containment{Off: "installed with --no-contain", Fallback: false}, Allow, "not contained: installed with --no-contain", "Landlock", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, in := tc.c.contain(bashEvent("s", "ls"), allow)
			if v.Decision != tc.decision || !strings.Contains(v.Reason, tc.says) || strings.Contains(v.Reason, tc.not) {
				t.Fatalf("%+v", v)
			}
			if (in != nil) != (tc.decision == Rewrite) {
				t.Fatalf("input %s for a %s", in, v.Decision)
			}
			if tc.c.LandlockOnly && !strings.Contains(v.Reason, "; warning: "+LandlockOnlyWarning+"; contained: ") {
				t.Errorf("no warning: %s", v.Reason)
			}
			// A line in the form containment writes is judged as it is
			// when this install does not contain.
			line := `'/j' exec --session 's' -- /bin/bash -c 'ls'`
			if got := commandOf(t, tc.c.unwrap(bashEvent("s", line)).Input); (got == "ls") != tc.unwrapsOwn {
				t.Errorf("unwrap of %q: %q", line, got)
			}
			// Denies stay denies, with nothing added.
			if d, _ := tc.c.contain(bashEvent("s", "ls"), deny(CodeNotGranted, "no")); d.Reason != "no" {
				t.Errorf("a deny's reason became %q", d.Reason)
			}
		})
	}
}

// TestContainedDecider: gate.Contained decides with its own containment,
// the gate's own left as it was, so that one resident gate serves hooks of
// every mode at once.
func TestContainedDecider(t *testing.T) {
	ctx := context.Background()
	big := liveGrant()
	big.BudgetUJ = 1_000_000
	g, ws := storeGate(t, big, nil)
	ev := func(seq int) *Event {
		e := bashEvent(fmt.Sprint("c", seq), "go test ./...")
		e.Cwd = ws
		return e
	}
	plain := g.Decide(ctx, ev(1))
	contained := Contained{Gate: g, C: &Containment{Exe: "/j", ABI: 7}}.Decide(ctx, ev(2))
	off := Contained{Gate: g, C: &Containment{Off: "installed with --no-contain"}}.DecideNoAsk(ctx, ev(3), "host")
	again := g.Decide(ctx, ev(4))
	if g.Contain != nil || plain.Decision != Allow || again.Decision != Allow || again.Reason != plain.Reason {
		t.Errorf("the gate's own decisions changed: %+v %+v", plain, again)
	}
	if contained.Decision != Rewrite || !strings.Contains(string(contained.UpdatedInput), `'/j' exec --session 'c2'`) {
		t.Errorf("contained: %+v", contained)
	}
	if off.Decision != Allow || off.Reason != plain.Reason+"; not contained: installed with --no-contain, so analysis alone decided" {
		t.Errorf("opted out: %+v", off)
	}
}

// BenchmarkGateContained is BenchmarkGateFiveCommands' whole decision,
// sealed, with the default install's containment (the rewrite to
// joule-exec with the decision's policy, written once, content-addressed)
// beside the same decision without, interleaved in one loop:
// contained-x-plain is what containment adds to a decision.
func BenchmarkGateContained(b *testing.B) {
	g := liveGrant()
	g.Allow = testAllow
	g.Ask, g.Deny = testAsk, testDeny
	g.BudgetUJ = 1 << 60
	gt, ws := storeGate(b, g, nil)
	c := Contained{Gate: gt, C: &Containment{Exe: "/opt/joule/joule", ABI: 7, Runner: "/opt/joule/joule-exec", PolicyDir: filepath.Join(b.TempDir(), "policy")}}
	raw, _ := json.Marshal(map[string]any{"session_id": "s", "tool": "Bash", "cwd": ws,
		"input": map[string]any{"command": "go build ./... && go test ./... | grep -v ok; git status; echo done"}})
	ctx := context.Background()
	var plain, contained time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		ev, _ := ParseEvent(raw)
		if r := gt.Decide(ctx, ev); r.Decision != Allow {
			b.Fatalf("%+v", r)
		}
		mid := time.Now()
		ev, _ = ParseEvent(raw)
		if r := c.Decide(ctx, ev); r.Decision != Rewrite || !strings.Contains(string(r.UpdatedInput), "joule-exec' --policy ") {
			b.Fatalf("%+v", r)
		}
		plain, contained = plain+mid.Sub(start), contained+time.Since(mid)
	}
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N), "plain-µs/op")
	b.ReportMetric(float64(contained.Microseconds())/float64(b.N), "contained-µs/op")
	b.ReportMetric(float64(contained)/float64(plain), "contained-x-plain")
}

// TestContainBackground: a call the host runs in the background (Claude
// Code's run_in_background, Gemini CLI's and Qwen Code's is_background)
// is rewritten with --background, in both forms of the line, and comes
// back unwrapped to its line; the policy names the session's private layer.
func TestContainBackground(t *testing.T) {
	dir := t.TempDir()
	jh := filepath.Dir(dir)
	allow := Verdict{Decision: Allow, Code: CodeAllowed, Reason: "granted"}
	g := &grant.Grant{Roots: []string{t.TempDir()}, Allow: []string{"Read", "Write"}}
	p := &Policy{Chain: grant.Chain{{Grant: g}}, Home: "/home/u"}
	for _, c := range []*Containment{
		{Exe: "/opt/joule/joule", ABI: 7},
		{Exe: "/opt/joule/joule", ABI: 7, Runner: "/opt/joule/joule-exec", PolicyDir: dir},
	} {
		for _, tc := range []struct {
			input map[string]any
			bg    bool
		}{
			{map[string]any{"command": "npm run dev", "description": "d", "run_in_background": true}, true},
			{map[string]any{"command": "npm run dev", "description": "d", "is_background": true}, true},
			{map[string]any{"command": "npm run dev", "description": "d", "run_in_background": false}, false},
			{map[string]any{"command": "npm run dev", "description": "d", "run_in_background": "true"}, false},
			{map[string]any{"command": "npm run dev", "description": "d"}, false},
		} {
			in, _ := json.Marshal(tc.input)
			ev := &Event{SessionID: "s", Tool: "Bash", Input: in, Cwd: "/ws"}
			v, out := c.rewrite(ev, allow, p)
			if v.Decision != Rewrite {
				t.Fatalf("%v: %+v", tc.input, v)
			}
			var m map[string]any
			json.Unmarshal(out, &m)
			line, _ := m["command"].(string)
			if strings.Contains(line, " --background -- /bin/bash -c ") != tc.bg {
				t.Errorf("%v: %s", tc.input, line)
			}
			if back := commandOf(t, c.unwrap(bashEvent("s", line)).Input); back != "npm run dev" {
				t.Errorf("unwrap %s: %q", line, back)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("policies %v", entries)
	}
	sp, err := sandbox.ReadPolicy(filepath.Join(dir, entries[0].Name()))
	if err != nil || sp.Layer != sandbox.LayerDir(jh, "s") {
		t.Errorf("layer %q, want %q (%v)", sp.Layer, sandbox.LayerDir(jh, "s"), err)
	}
}
