package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDenyNamesTheAllow is issue 35's "a way forward in every deny", as a
// new user meets it: the dev grant denies npm install, jq and an MCP tool,
// each deny names the joule grant allow that allows it, and that command,
// run as printed, allows it: a successor grant with one more rule, active
// where the old one was, its receipt in the trust chain, the old grant
// revoked, and store check and receipts verify clean.
func TestDenyNamesTheAllow(t *testing.T) {
	env, ws := initHome(t)
	for _, tt := range []struct{ event, rule string }{
		{bashEvent(ws, "s-allow", "npm install left-pad"), "Bash(npm install:*)"},
		{bashEvent(ws, "s-allow", "jq . package.json"), "Bash(jq:*)"},
		{`{"session_id":"s-allow","cwd":"` + ws + `","tool":"mcp__github__get_issue","input":{}}`, "mcp__github__get_issue"},
	} {
		d := gateOnce(t, env, tt.event)
		want := "joule grant allow '" + tt.rule + "'"
		if d.Decision != "deny" || d.Code != "action-not-granted" || !strings.Contains(d.Reason, want) {
			t.Fatalf("%s: want a not-granted deny naming %s, got %+v", tt.event, want, d)
		}
		before := joule(t, nil, env, "grant", "show", "active")
		// Run as printed, through a shell, as a person pastes it.
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(d.Reason[strings.Index(d.Reason, "joule grant allow"):], "joule ", jouleBin+" "))
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "supersedes") {
			t.Fatalf("%s: %v\n%s", want, err, out)
		}
		if d := gateOnce(t, env, tt.event); d.Decision != "allow" {
			t.Fatalf("after %s: %+v", want, d)
		}
		var old struct {
			ID string `json:"id"`
		}
		json.Unmarshal([]byte(before.stdout), &old)
		if r := joule(t, nil, env, "grant", "ls"); !strings.Contains(r.stdout, old.ID[:8]) || !strings.Contains(r.stdout, "revoked") {
			t.Fatalf("the superseded grant is not listed revoked: %s", r.stdout)
		}
	}
	r := joule(t, nil, env, "receipts", "ls", "joule-grants")
	if strings.Count(r.stdout, "joule grant allow") != 3 || strings.Count(r.stdout, "grant-renewed") != 3 {
		t.Fatalf("the trust chain does not hold three receipts of joule grant allow:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"store", "check"}, {"receipts", "verify", "joule-grants"}} {
		if r := joule(t, nil, env, args...); r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	// A rule the grant has, a bad rule: refused, nothing sealed.
	if r := joule(t, nil, env, "grant", "allow", "Bash(jq:*)"); r.code == 0 || !strings.Contains(r.stderr, "already") {
		t.Fatalf("a rule the grant has: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "allow", "Bash(jq"); r.code == 0 {
		t.Fatalf("a bad rule: %+v", r)
	}
	if r := joule(t, nil, env, "receipts", "ls", "joule-grants"); strings.Count(r.stdout, "grant-renewed") != 3 {
		t.Fatalf("a refused allow sealed a receipt:\n%s", r.stdout)
	}
}

// TestUnmatchedAsk: --unmatched ask makes what no rule settles go to the
// host's prompt, while what the grant allows stays allowed (an ask rule
// naming all of Bash ranked above allow rules once, so --ask Bash made
// even go test ask), and a deny rule still wins.
func TestUnmatchedAsk(t *testing.T) {
	env, ws := initHome(t, "--unmatched", "ask")
	for line, want := range map[string]string{
		"go test ./...":        "allow",
		"npm install left-pad": "ask",
		"rm -rf build":         "ask",
		"sudo ls":              "deny",
	} {
		if d := gateOnce(t, env, bashEvent(ws, "s-unmatched", line)); d.Decision != want {
			t.Errorf("%s: %+v, want %s", line, d, want)
		}
	}
	env2, ws2 := initHome(t, "--ask", "Bash")
	if d := gateOnce(t, env2, bashEvent(ws2, "s-askbash", "go test ./...")); d.Decision != "allow" {
		t.Errorf("--ask Bash holds back go test: %+v", d)
	}
	if r := joule(t, nil, env, "init", "--unmatched", "maybe", "--workspace", ws); r.code != 2 || !strings.Contains(r.stderr, "deny or ask") {
		t.Errorf("--unmatched maybe: %+v", r)
	}
}

// TestInitSaysBudgetAndExpiry: the flags a new user types get answers
// that show the form: 100kj is 100 kJ, 30mj is refused as milli or mega,
// --ttl 8 shows the form, a budget below one action is refused and one
// below a model call warned, each with its figure; init says when the
// grant expires and how to renew it.
func TestInitSaysBudgetAndExpiry(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	env := []string{"JOULE_HOME=" + filepath.Join(dir, "home"), "HOME=" + filepath.Join(dir, "userhome")}
	for _, tt := range []struct {
		args       []string
		code       int
		out, errs  string
		notErrText string
	}{
		{[]string{"--ttl", "8"}, 2, "", "want a number with its unit: 8h, 90m, 2h30m or 1d", ""},
		{[]string{"--budget", "30mj"}, 2, "", "m is milli in mJ and mega in MJ", ""},
		{[]string{"--budget", "500uJ"}, 2, "", "less than the cheapest action costs (1 mJ", ""},
		{[]string{"--budget", "30mJ"}, 0, "budget         30 mJ", "less than one shell command costs (50 mJ", ""},
		{[]string{"--budget", "50J"}, 0, "budget         50 J", "less than one model call through joule proxy holds (3.072 kJ", "shell command"},
		{[]string{"--budget", "100kj"}, 0, "budget         100 kJ", "", "shell command"},
		{[]string{"--ttl", "1d"}, 0, "expires        in 24h, at ", "", "warning"},
		{nil, 0, "expires        in 8h, at ", "", "warning"},
	} {
		r := joule(t, nil, env, append([]string{"init", "--workspace", ws}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stdout, tt.out) || !strings.Contains(r.stderr, tt.errs) || tt.notErrText != "" && strings.Contains(r.stderr, tt.notErrText) {
			t.Errorf("init %v: %+v", tt.args, r)
		}
	}
	if r := joule(t, nil, env, "grant", "renew", "active", "--ttl", "8"); r.code != 2 || !strings.Contains(r.stderr, "8h, 90m, 2h30m or 1d") {
		t.Errorf("renew --ttl 8: %+v", r)
	}
}

// TestGrantPerWorkspace is issue 35's "grants per workspace", as a user
// meets it with two git repositories: joule init in each makes its own
// grant active for that repository's root (the first also the default),
// and an action is decided by the grant of the repository its cwd is in,
// through joule gate and the Claude Code hook alike; a cwd in neither is
// decided by the default, whose deny names joule init. grant ls shows
// where each grant is active, 'active' is the grant of the current
// directory, grant use --workspace and --session choose, trust status and
// store check verify the choices, and a choice edited in the store
// (re-pointing one repository's receipt at the other) is refused as any
// edited trust state is.
func TestGrantPerWorkspace(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(dir, "home")
	env := []string{"JOULE_HOME=" + home, "HOME=" + filepath.Join(dir, "userhome")}
	one, two, outside := filepath.Join(dir, "one"), filepath.Join(dir, "two"), filepath.Join(dir, "outside")
	for _, r := range []string{one, two} {
		os.MkdirAll(filepath.Join(r, "pkg", "sub"), 0o755)
		if out, err := exec.Command("git", "init", "-q", r).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
	}
	os.MkdirAll(outside, 0o755)
	grantOf := func(out string) string {
		m := regexp.MustCompile(`(?m)^grant +(\S+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no grant in %q", out)
		}
		return m[1]
	}
	r := jouleIn(t, filepath.Join(one, "pkg", "sub"), nil, env, "init")
	if r.code != 0 || !strings.Contains(r.stdout, "workspace      "+one+"\n") || !strings.Contains(r.stdout, "active         for "+one+":") || !strings.Contains(r.stdout, "default        yes") {
		t.Fatalf("init in one: %+v", r)
	}
	gOne := grantOf(r.stdout)
	r = jouleIn(t, two, nil, env, "init")
	if r.code != 0 || !strings.Contains(r.stdout, "workspace      "+two+"\n") || !strings.Contains(r.stdout, "active         for "+two+":") || !strings.Contains(r.stdout, "default        "+gOne+" stays") {
		t.Fatalf("init in two: %+v", r)
	}
	gTwo := grantOf(r.stdout)

	type decided struct {
		Decision, Code, Reason string
		Grants                 []string
	}
	gate := func(session, cwd, tool, input string) decided {
		t.Helper()
		r := joule(t, []byte(`{"session_id":"`+session+`","tool":"`+tool+`","input":`+input+`,"cwd":"`+cwd+`"}`), env, "gate")
		var d decided
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("joule gate: %+v", r)
		}
		return d
	}
	read := func(session, cwd string) decided {
		return gate(session, cwd, "Read", `{"file_path":"`+filepath.Join(cwd, "pkg", "a.go")+`"}`)
	}
	by := func(d decided) string {
		if len(d.Grants) == 0 {
			return ""
		}
		return d.Grants[len(d.Grants)-1]
	}
	for _, tt := range []struct {
		cwd, decision, grant string
	}{
		{one, "allow", gOne},
		{filepath.Join(one, "pkg", "sub"), "allow", gOne},
		{two, "allow", gTwo},
		{filepath.Join(two, "pkg"), "allow", gTwo},
		{outside, "deny", gOne}, // the default, whose workspace is one
	} {
		d := read("s-ws", tt.cwd)
		if d.Decision != tt.decision || by(d) != tt.grant {
			t.Errorf("a read in %s: %+v, want %s by %s", tt.cwd, d, tt.decision, tt.grant)
		}
		if tt.decision == "deny" && (d.Code != "outside-workspace" || !strings.Contains(d.Reason, "joule init")) {
			t.Errorf("the deny in %s does not name joule init: %+v", tt.cwd, d)
		}
	}
	// A file of one, read from two: two's grant does not open it.
	if d := gate("s-ws", two, "Read", `{"file_path":"`+filepath.Join(one, "pkg", "a.go")+`"}`); d.Decision == "allow" || by(d) != gTwo {
		t.Errorf("one's file read from two: %+v", d)
	}

	// The hook path: Claude Code's PreToolUse in each repository.
	hook := func(cwd, cmd string) result {
		payload := fmt.Sprintf(`{"session_id":"hook-s","transcript_path":"/tmp/t.jsonl","cwd":%q,"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":"toolu_1"}`, cwd, cmd)
		return jouleIn(t, cwd, []byte(payload), env, "hook", "claude-code")
	}
	claude := hostCases[0]
	for i, tt := range []struct {
		cwd, grant string
		allowed    bool
	}{{one, gOne, true}, {two, gTwo, true}, {outside, gOne, false}} {
		h := hook(tt.cwd, "go test ./...")
		if tt.allowed && !claude.allowed(h) || !tt.allowed && !claude.denied(h) {
			t.Errorf("hook in %s: %+v, want allowed %t", tt.cwd, h, tt.allowed)
		}
		if got := gateGrants(t, env, "hook-s", uint64(i+1)); len(got) == 0 || got[len(got)-1] != tt.grant {
			t.Errorf("hook in %s decided by %q, want %s", tt.cwd, got, tt.grant)
		}
	}

	// grant ls: each grant's workspaces and where it is active.
	ls := joule(t, nil, env, "grant", "ls")
	if !strings.Contains(ls.stdout, "ACTIVE FOR") ||
		!regexp.MustCompile(gOne+`\s.*\s`+regexp.QuoteMeta(one)+`\s+default,`+regexp.QuoteMeta(one)+`\n`).MatchString(ls.stdout) ||
		!regexp.MustCompile(gTwo+`\s.*\s`+regexp.QuoteMeta(two)+`\s+`+regexp.QuoteMeta(two)+`\n`).MatchString(ls.stdout) {
		t.Fatalf("grant ls does not show where each grant is active:\n%s", ls.stdout)
	}
	// A deny by a workspace's grant names it in the command that allows
	// it, which extends that grant wherever it is run.
	jq := func(cwd string) decided { return gate("s-jq", cwd, "Bash", `{"command":"jq . package.json"}`) }
	d := jq(two)
	if d.Decision != "deny" || !strings.HasSuffix(d.Reason, "joule grant allow 'Bash(jq:*)' --grant "+gTwo) {
		t.Fatalf("jq in two: %+v", d)
	}
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(d.Reason[strings.Index(d.Reason, "joule grant allow"):], "joule ", jouleBin+" "))
	cmd.Dir, cmd.Env = outside, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), gTwo) {
		t.Fatalf("the printed grant allow, run outside: %v %s", err, out)
	}
	if d := jq(two); d.Decision != "allow" || by(d) == gTwo {
		t.Errorf("jq in two after grant allow: %+v", d)
	}
	if d := jq(one); d.Decision != "deny" || by(d) != gOne || strings.Contains(d.Reason, "--grant") {
		t.Errorf("jq in one (the default's deny names no --grant) after grant allow for two: %+v", d)
	}
	// 'active' is the grant of the current directory: grant allow in two
	// extends two's (successor) grant, not the default.
	if r := jouleIn(t, filepath.Join(two, "pkg"), nil, env, "grant", "allow", "Bash(gh:*)"); r.code != 0 {
		t.Fatalf("grant allow in two: %+v", r)
	}
	gh := func(cwd string) decided { return gate("s-jq", cwd, "Bash", `{"command":"gh issue list"}`) }
	if d := gh(two); d.Decision != "allow" {
		t.Errorf("gh in two after grant allow there: %+v", d)
	}
	if d := gh(one); d.Decision != "deny" || by(d) != gOne {
		t.Errorf("gh in one after grant allow in two: %+v", d)
	}
	ts := joule(t, nil, env, "trust", "status")
	if ts.code != 0 || !strings.Contains(ts.stdout, "2 workspace(s)") || !strings.Contains(ts.stdout, "workspace "+one+": grant "+gOne) {
		t.Fatalf("trust status: %+v", ts)
	}
	if c := joule(t, nil, env, "store", "check"); c.code != 0 {
		t.Fatalf("store check: %+v", c)
	}
	if r := jouleIn(t, one, nil, env, "grant", "show", "active"); !strings.Contains(r.stdout, `"id": "`+gOne+`"`) || !regexp.MustCompile(`"active_for": \[\s*"default",\s*"`+regexp.QuoteMeta(one)+`"\s*\]`).MatchString(r.stdout) {
		t.Errorf("grant show active in one: %+v", r)
	}
	// A user-wide hook serves both, and install says with which grants.
	userHome := filepath.Join(dir, "userhome")
	os.MkdirAll(filepath.Join(userHome, ".claude"), 0o755)
	os.WriteFile(filepath.Join(userHome, ".claude.json"), []byte(`{"projects":{}}`), 0o600)
	r = jouleIn(t, outside, nil, env, "install", "claude-code", "--user")
	if r.code != 0 || !strings.Contains(r.stdout, "serve every repository: "+one+" (grant "+gOne[:12]) || !strings.Contains(r.stdout, two+" (grant ") || !strings.Contains(r.stdout, "elsewhere the default grant "+gOne[:12]) {
		t.Fatalf("install --user does not say which repositories have a grant: %+v", r)
	}
	// A session's own grant wins over its workspace's; grant use
	// --workspace chooses one for a root, warning when the grant does not
	// open it.
	mustJoule(t, env, "grant", "use", gOne, "--session", "pinned")
	if d := read("pinned", two); by(d) != gOne || d.Decision != "deny" {
		t.Errorf("a pinned session in two: %+v", d)
	}
	r = joule(t, nil, env, "grant", "use", gOne, "--workspace", filepath.Join(two, "pkg"))
	if r.code != 0 || !strings.Contains(r.stderr, "outside-workspace") {
		t.Fatalf("grant use --workspace two/pkg: %+v", r)
	}
	if d := read("s-ws", filepath.Join(two, "pkg")); by(d) != gOne || d.Decision != "deny" {
		t.Errorf("two/pkg after grant use --workspace: %+v", d)
	}
	if r := joule(t, nil, env, "grant", "use", gOne, "--workspace", filepath.Join(dir, "missing")); r.code != 2 {
		t.Errorf("grant use --workspace of no directory: %+v", r)
	}

	// The choice edited in the store: two's receipt re-pointed at one
	// (the same length), without the key. Every decision is refused, and
	// store check names the receipt.
	db := openSQL(t, filepath.Join(home, StoreFile))
	var seq int
	var envelope []byte
	rows, err := db.Query(`SELECT seq, envelope FROM entries WHERE session = 'joule-grants' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sq int
		var b []byte
		if err := rows.Scan(&sq, &b); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("workspace "+two)) {
			seq, envelope = sq, b
		}
	}
	rows.Close()
	if seq == 0 {
		t.Fatal("no receipt of two's choice in the trust chain")
	}
	edited := bytes.ReplaceAll(envelope, []byte("workspace "+two), []byte("workspace "+one))
	if _, err := db.Exec(`UPDATE entries SET envelope = ? WHERE session = 'joule-grants' AND seq = ?`, edited, seq); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{one, two} {
		if d := read("s-ws", cwd); d.Decision != "deny" || d.Code != "trust-corrupt" {
			t.Errorf("a read in %s after the edit: %+v", cwd, d)
		}
	}
	if c := joule(t, nil, env, "store", "check"); c.code == 0 || !strings.Contains(c.stdout+c.stderr, fmt.Sprintf("joule-grants seq %d", seq)) {
		t.Errorf("store check after the edit: %+v", c)
	}
	if ts := joule(t, nil, env, "trust", "status"); ts.code == 0 {
		t.Errorf("trust status after the edit: %+v", ts)
	}
}
