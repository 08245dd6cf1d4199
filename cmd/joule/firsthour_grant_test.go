package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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

// TestInitSecondRepository: joule init in a second git repository adds it
// to the workspaces instead of taking the first one's grant away (each
// repository's reads allowed, from the project root found inside it),
// says so, and grant ls shows the workspaces; --only grants the one
// workspace, and the first is then outside it.
func TestInitSecondRepository(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	env := []string{"JOULE_HOME=" + filepath.Join(dir, "home"), "HOME=" + filepath.Join(dir, "userhome")}
	repos := []string{filepath.Join(dir, "one"), filepath.Join(dir, "two")}
	for _, r := range repos {
		os.MkdirAll(filepath.Join(r, "pkg", "sub"), 0o755)
		if out, err := exec.Command("git", "init", "-q", r).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
	}
	initIn := func(dir string, args ...string) result {
		cmd := exec.Command(jouleBin, append([]string{"init"}, args...)...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}
	read := func(repo string) decision {
		return gateOnce(t, env, `{"session_id":"s-ws","tool":"Read","input":{"file_path":"`+repo+`/pkg/a.go"},"cwd":"`+repo+`"}`)
	}
	if r := initIn(filepath.Join(repos[0], "pkg", "sub")); r.code != 0 || !strings.Contains(r.stdout, "workspace      "+repos[0]+"\n") {
		t.Fatalf("init in one: %+v", r)
	}
	r := initIn(repos[1])
	if r.code != 0 || !strings.Contains(r.stdout, "kept           "+repos[0]) {
		t.Fatalf("init in two does not say it kept one: %+v", r)
	}
	for _, repo := range repos {
		if d := read(repo); d.Decision != "allow" {
			t.Fatalf("after init in two, %s: %+v", repo, d)
		}
	}
	ls := joule(t, nil, env, "grant", "ls")
	if !strings.Contains(ls.stdout, "WORKSPACES") || !strings.Contains(ls.stdout, repos[1]+","+repos[0]) {
		t.Fatalf("grant ls shows no workspaces: %s", ls.stdout)
	}
	if r := initIn(repos[1], "--only"); r.code != 0 || strings.Contains(r.stdout, "kept") {
		t.Fatalf("init --only: %+v", r)
	}
	if d := read(repos[0]); d.Decision != "deny" || d.Code != "outside-workspace" {
		t.Fatalf("after init --only in two, one: %+v", d)
	}
	if d := read(repos[1]); d.Decision != "allow" {
		t.Fatalf("after init --only in two, two: %+v", d)
	}
}
