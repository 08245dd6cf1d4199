package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/joulehook/joule/demo"
)

// TestGrantIssueUsage: bad values are usage errors (exit 2) with an error
// that names what is wrong, and a grant without --budget gets the documented
// default, never a budget of zero.
func TestGrantIssueUsage(t *testing.T) {
	env, ws := initHome(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--template", "dev", "--budget", "50"}, "unit"},
		{[]string{"--template", "dev", "--budget", "5TJ"}, "unknown unit"},
		{[]string{"--template", "dev", "--budget", "0J"}, "no budget"},
		{[]string{"--template", "dev", "--ttl", "-1h"}, "positive duration"},
		{[]string{"--template", "dev", "--ttl", "0s", "--budget", "x"}, "--budget"},
		{[]string{"--allow", "Bash(go test:*"}, "parenthes"},
		{[]string{"--template", "dev", "--workspace", "/nonexistent/dir"}, "not a directory"},
		{[]string{"--budget", "420kJ", "--use"}, "--template"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := joule(t, nil, env, append([]string{"grant", "issue", "--workspace", ws}, tt.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d (want 2), stderr %q (want %q)", r.code, r.stderr, tt.want)
			}
		})
	}
	r := joule(t, nil, env, "grant", "issue", "--workspace", ws, "--allow", "Read")
	if r.code != 0 || !strings.Contains(r.stdout, "budget         30 MJ (30 MJ left)") || !strings.Contains(r.stdout, "valid") {
		t.Fatalf("default budget: %+v", r)
	}
	id := strings.Fields(r.stdout)[1]
	// A child without --budget gets what its parent has left, not zero.
	r = joule(t, nil, env, "grant", "issue", "--workspace", ws, "--allow", "Read", "--parent", id)
	if r.code != 0 || !strings.Contains(r.stdout, "budget         30 MJ") {
		t.Fatalf("child default budget: %+v", r)
	}
	var shown struct {
		Grant struct {
			BudgetUJ uint64 `json:"budget_uj"`
		} `json:"grant"`
	}
	r = joule(t, nil, env, "grant", "show", strings.Fields(r.stdout)[1])
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.Grant.BudgetUJ == 0 {
		t.Fatalf("show: %v %+v", err, r)
	}
}

// TestIDPrefixes: grant show/use/revoke and receipts take a unique prefix
// of an id, and grant commands take "active".
func TestIDPrefixes(t *testing.T) {
	env, ws := initHome(t)
	r := joule(t, nil, env, "grant", "show", "active")
	if r.code != 0 {
		t.Fatalf("show active: %+v", r)
	}
	var shown struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown.ID) != 43 {
		t.Fatalf("show active: %v %q", err, r.stdout)
	}
	id := shown.ID
	for _, args := range [][]string{{"grant", "show", id[:6]}, {"grant", "use", id[:6]}, {"grant", "use", "active", "--session", "s1"}} {
		if r := joule(t, nil, env, args...); r.code != 0 || !strings.Contains(r.stdout, id) {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	r = joule(t, nil, env, "grant", "issue", "--workspace", ws, "--template", "dev", "--parent", id[:8], "--budget", "1J")
	if r.code != 0 {
		t.Fatalf("--parent prefix: %+v", r)
	}
	d := gateOnce(t, env, `{"session_id":"prefix-session-0123","tool":"Read","input":{"file_path":"`+ws+`/a"},"cwd":"`+ws+`"}`)
	if d.Decision != "allow" {
		t.Fatalf("gate: %+v", d)
	}
	for _, args := range [][]string{{"receipts", "ls", "prefix-ses"}, {"receipts", "show", "prefix-ses", "1"}, {"receipts", "verify", "prefix-ses"}, {"receipts", "export", "prefix-ses", "--format", "jsonl"}} {
		if r := joule(t, nil, env, args...); r.code != 0 || !strings.Contains(r.stdout, "1") {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	if r := joule(t, nil, env, "grant", "show", "zzzzzzzz"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("unknown prefix: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "revoke", id[:5]); r.code != 0 || !strings.Contains(r.stdout, "revoked "+id) {
		t.Fatalf("revoke prefix: %+v", r)
	}
}

// TestGrantRenew: an expired grant's deny names the way out once, without
// repeating its code; the status line says "expired"; the command the
// message prints, run as printed, renews it: a new grant with the same
// rules and what was left, active where the old one was, both named in a
// receipt, the old one revoked.
//
// The grant lives 6 s: init and the first decision must fit in it on a
// loaded machine (2 s did not, at a load of 30 on two cores).
func TestGrantRenew(t *testing.T) {
	env, ws := initHome(t, "--ttl", "6s", "--budget", "5J")
	read := `{"session_id":"s-renew","tool":"Read","input":{"file_path":"` + ws + `/a"},"cwd":"` + ws + `"}`
	if d := gateOnce(t, env, read); d.Decision != "allow" {
		t.Fatalf("before expiry: %+v", d)
	}
	time.Sleep(6100 * time.Millisecond)
	d := gateOnce(t, env, read)
	if d.Code != "grant-expired" || strings.Contains(d.Reason, "grant-expired") {
		t.Fatalf("expired deny repeats its code or is not grant-expired: %+v", d)
	}
	if r := joule(t, []byte(`{"session_id":"s-renew"}`), env, "statusline"); !strings.Contains(r.stdout, "expired") || strings.Contains(r.stdout, "left") {
		t.Fatalf("status line: %+v", r)
	}
	m := regexp.MustCompile(`'joule (grant renew [^']+)'`).FindStringSubmatch(d.Reason)
	if m == nil {
		t.Fatalf("the expiry message names no renew command: %q", d.Reason)
	}
	r := joule(t, nil, env, strings.Fields(m[1])...)
	if r.code != 0 || !strings.Contains(r.stdout, "renews") {
		t.Fatalf("%s: %+v", m[1], r)
	}
	newID := strings.Fields(r.stdout)[1]
	oldID := strings.Fields(m[1])[2]
	if d := gateOnce(t, env, read); d.Decision != "allow" {
		t.Fatalf("after renew: %+v", d)
	}
	var shown struct {
		ID    string `json:"id"`
		Grant struct {
			BudgetUJ  uint64 `json:"budget_uj"`
			NotBefore int64  `json:"not_before"`
			NotAfter  int64  `json:"not_after"`
		} `json:"grant"`
	}
	r = joule(t, nil, env, "grant", "show", "active")
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.ID != newID || shown.Grant.NotAfter-shown.Grant.NotBefore != 6 || shown.Grant.BudgetUJ >= 5_000_000 || shown.Grant.BudgetUJ == 0 {
		t.Fatalf("renewed grant: %v %+v", err, shown)
	}
	r = joule(t, nil, env, "grant", "ls")
	if !regexp.MustCompile(oldID + `\s.*revoked`).MatchString(r.stdout) {
		t.Fatalf("old grant not revoked: %s", r.stdout)
	}
	r = joule(t, nil, env, "receipts", "show", "joule-grants", fmt.Sprint(initReceipts+1)) // after the grant's issue and activations
	if r.code != 0 || !strings.Contains(r.stdout, oldID) || !strings.Contains(r.stdout, newID) || !strings.Contains(r.stdout, `"verified": true`) {
		t.Fatalf("renew receipt: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "renew", newID, "--ttl", "-1h"); r.code != 2 {
		t.Fatalf("negative ttl: %+v", r)
	}
	r = joule(t, nil, env, "grant", "renew", "active", "--ttl", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, "renews         "+newID) {
		t.Fatalf("renew active: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "renew", oldID); r.code != 1 || !strings.Contains(r.stderr, "revoked") {
		t.Fatalf("renew revoked: %+v", r)
	}
}

// TestReceiptsList: energies in units, an efficiency receipt's status and
// coverage out of the DECISION and CODE columns, the filters and --json.
func TestReceiptsList(t *testing.T) {
	env, ws := initHome(t)
	ev := func(session, tool, input string) string {
		return `{"session_id":"` + session + `","tool":"` + tool + `","input":` + input + `,"cwd":"` + ws + `"}`
	}
	gateOnce(t, env, ev("ls-a", "Read", `{"file_path":"`+ws+`/a"}`))
	gateOnce(t, env, ev("ls-a", "Bash", `{"command":"sudo ls"}`))
	gateOnce(t, env, ev("ls-a", "Bash", `{"command":"go build ./..."}`))
	gateOnce(t, env, ev("ls-b", "Bash", `{"command":"go vet ./..."}`))
	r := joule(t, nil, env, "receipts", "ls", "ls-a")
	if r.code != 0 || regexp.MustCompile(`\d{4,} µJ`).MatchString(r.stdout) || !strings.Contains(r.stdout, "ENERGY") {
		t.Fatalf("raw µJ or no ENERGY column:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Fatalf("colour on a pipe:\n%q", r.stdout)
	}
	var rows []struct {
		Session, Tool, Decision, Code string
		EnergyUJ                      uint64 `json:"energy_uj"`
	}
	list := func(args ...string) int {
		t.Helper()
		r := joule(t, nil, env, append([]string{"receipts", "ls", "--json"}, args...)...)
		rows = nil
		if err := json.Unmarshal([]byte(r.stdout), &rows); r.code != 0 || err != nil {
			t.Fatalf("%v: %v %+v", args, err, r)
		}
		return len(rows)
	}
	if n := list("ls-a"); n != 3 || rows[1].Decision != "deny" || rows[0].EnergyUJ == 0 {
		t.Fatalf("ls-a: %+v", rows)
	}
	if n := list("--decision", "deny"); n != 1 || rows[0].Session != "ls-a" || rows[0].Tool != "Bash" {
		t.Fatalf("--decision deny: %+v", rows)
	}
	if n := list("--tool", "Bash"); n != 3 {
		t.Fatalf("--tool Bash: %+v", rows)
	}
	if n := list("--tool", "Bash", "-n", "1"); n != 1 || rows[0].Session != "ls-b" {
		t.Fatalf("-n 1: %+v", rows)
	}
	if n := list("--since", "1h"); n != 3 { // and joule-grants
		t.Fatalf("sessions --since 1h: %d", n)
	}
	if n := list("--since", "2099-01-01"); n != 0 {
		t.Fatalf("sessions --since the future: %d", n)
	}
	for _, args := range [][]string{{"--since", "yesterday"}, {"--decision", "maybe"}, {"-n", "-2"}} {
		if r := joule(t, nil, env, append([]string{"receipts", "ls"}, args...)...); r.code != 2 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	var grants []struct {
		ID     string `json:"id"`
		State  string `json:"state"`
		Active bool   `json:"active"`
	}
	r = joule(t, nil, env, "grant", "ls", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &grants); err != nil || len(grants) != 1 || !grants[0].Active || grants[0].State != "ok" {
		t.Fatalf("grant ls --json: %v %+v", err, r)
	}
}

// TestReceiptsListHostileText: a command, tool name or session id with a
// newline, a tab, an escape sequence, a bidi override or an invalid byte
// stays in its one row and cell, escaped, and reaches no terminal raw.
func TestReceiptsListHostileText(t *testing.T) {
	env, ws := initHome(t)
	cmds := []string{
		`printf a\nb`,                        // JSON \n: a real newline in the command
		`echo \"x\"\tdone`,                   // a tab
		`echo \u001b[2J\u001b]0;pwned\u0007`, // clear screen, set the title
		`ls \u202egnp.exe`,                   // right-to-left override
		`ls \u2028x \u0085y`,                 // line separator, NEL
	}
	// The store takes no session id with a control character: the gate
	// refuses the action rather than seal it elsewhere.
	if d := gateOnce(t, env, `{"session_id":"s\u001b[31mred\nx","tool":"Bash","input":{"command":"ls"},"cwd":"`+ws+`"}`); d.Decision != "deny" {
		t.Errorf("a session id with escapes: %+v", d)
	}
	for _, c := range cmds {
		gateOnce(t, env, `{"session_id":"hostile","tool":"Bash","input":{"command":"`+c+`"},"cwd":"`+ws+`"}`)
	}
	gateOnce(t, env, `{"session_id":"hostile","tool":"Bash\tTab\u001b[8m","input":{"command":"ls"},"cwd":"`+ws+`"}`)
	for _, args := range [][]string{{"receipts", "ls"}, {"receipts", "ls", "hostile"}, {"receipts", "ls", "--tool", "Bash\tTab\x1b[8m"}} {
		r := joule(t, nil, env, args...)
		if r.code != 0 {
			t.Fatalf("%q: %+v", args, r)
		}
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		want := map[int]int{2: 3, 3: 2 + len(cmds), 4: 2}[len(args)] // a header and the rows (joule-grants among the sessions)
		if len(lines) != want {
			t.Errorf("%q: %d lines, want %d:\n%s", args, len(lines), want, r.stdout)
		}
		for _, bad := range []string{"\x1b", "\t", "\u202e", "\u2028", "\u0085", "\a"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("%q: raw %q in the table:\n%q", args, bad, r.stdout)
			}
		}
		if len(args) == 3 && (!strings.Contains(r.stdout, `printf a\nb`) || !strings.Contains(r.stdout, `Bash\tTab\x1b[8m`) || !strings.Contains(r.stdout, `\x1b[2J`) || !strings.Contains(r.stdout, `\u202egnp.exe`)) {
			t.Errorf("the escaped text is not shown:\n%s", r.stdout)
		}
	}
}

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":         "plain text",
		"a\nb\tc":            `a\nb\tc`,
		"\x1b[31m":           `\x1b[31m`,
		"caf\u00e9 \u00a0ok": "caf\u00e9 \u00a0ok",
		"\u202eabc":          `\u202eabc`,
		"bad\xffbyte":        `bad\xffbyte`,
		"\x7f\u0085":         `\x7f\u0085`,
		"":                   "",
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestColourOnlyOnATerminal runs receipts ls on a pseudo-terminal (through
// script(1), from bsdutils, essential on Debian): coloured there, plain
// with NO_COLOR set, and plain on a pipe (TestReceiptsList).
func TestColourOnlyOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("script(1) is missing")
		}
		t.Skip("no script(1) to give joule a terminal")
	}
	env, ws := initHome(t)
	gateOnce(t, env, `{"session_id":"tty","tool":"Bash","input":{"command":"sudo ls"},"cwd":"`+ws+`"}`)
	onTTY := func(extra ...string) string {
		cmd := exec.Command(scriptBin, "-qec", jouleBin+" receipts ls tty", "/dev/null")
		cmd.Env = append(append(os.Environ(), env...), extra...)
		cmd.Env = slices.DeleteFunc(cmd.Env, func(s string) bool { return s == "NO_COLOR" || strings.HasPrefix(s, "NO_COLOR=") && len(extra) == 0 })
		cmd.Env = append(cmd.Env, "TERM=xterm")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("script: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := onTTY(); !strings.Contains(out, "\x1b[31mdeny") {
		t.Fatalf("no colour on a terminal:\n%q", out)
	}
	if out := onTTY("NO_COLOR=1"); strings.Contains(out, "\x1b[") || !strings.Contains(out, "deny") {
		t.Fatalf("colour with NO_COLOR set:\n%q", out)
	}
}

// TestProxyPrintsExports: joule proxy prints, after its address, the
// export lines that point a host at it, and they name that address. A
// shell that runs them keeps OLLAMA_HOST as it was, so 'ollama serve'
// there still listens where it should (it listens on OLLAMA_HOST); Ollama
// clients get it per command.
func TestProxyPrintsExports(t *testing.T) {
	env, _ := initHome(t)
	cmd := exec.Command(jouleBin, "proxy", "--listen", "127.0.0.1:0", "--quiet")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}()
	br := bufio.NewReader(out)
	var lines []string
	for len(lines) < 6 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", lines, err)
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	_, url, _ := strings.Cut(lines[0], "listening on ")
	want := []string{"export ANTHROPIC_BASE_URL=" + url, "export OPENAI_BASE_URL=" + url + "/v1"}
	if url == "" || !slices.Equal(lines[2:4], want) || !strings.Contains(lines[5], "OLLAMA_HOST="+url+" ollama run") || strings.Contains(strings.Join(lines, "\n"), "export OLLAMA_HOST") {
		t.Fatalf("printed %q, want %q after the address, and OLLAMA_HOST per command", lines, want)
	}
	sh := exec.Command("sh", "-c", strings.Join(lines[1:], "\n")+"\necho \"$ANTHROPIC_BASE_URL ${OLLAMA_HOST-unset}\"")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OLLAMA_HOST=") {
			sh.Env = append(sh.Env, kv)
		}
	}
	if got, err := sh.Output(); err != nil || string(got) != url+" unset\n" {
		t.Fatalf("the printed lines, run in sh: %q %v", got, err)
	}
	// The printed base URL is the proxy: the models endpoint answers there.
	resp, err := http.Get(strings.TrimPrefix(want[1], "export OPENAI_BASE_URL=") + "/models")
	if err == nil {
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode == http.StatusNotFound {
		t.Fatalf("GET the printed OPENAI_BASE_URL/models: %v %v", err, resp)
	}
}

func TestClientURL(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:7411": "http://127.0.0.1:7411", "0.0.0.0:7411": "http://127.0.0.1:7411", "[::]:7411": "http://127.0.0.1:7411", "[::1]:9": "http://[::1]:9"} {
		addr, err := net.ResolveTCPAddr("tcp", in)
		if err != nil {
			t.Fatal(err)
		}
		if got := clientURL(addr); got != want {
			t.Errorf("clientURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestStoreBackupRestore: joule store backup FILE while the store is in
// use, restore FILE going back to it, and the witness's way out, run as
// printed.
func TestStoreBackupRestore(t *testing.T) {
	env, ws := initHome(t)
	ev := `{"session_id":"bk","tool":"Bash","input":{"command":"go vet ./..."},"cwd":"` + ws + `"}`
	gateOnce(t, env, ev)
	gateOnce(t, env, ev)
	bak := filepath.Join(t.TempDir(), "joule-backup.db")
	r := joule(t, nil, env, "store", "backup", bak)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("log size %d", 2+initReceipts)) {
		t.Fatalf("backup: %+v", r)
	}
	if r := joule(t, nil, env, "store", "backup", bak); r.code != 1 || !strings.Contains(r.stderr, "exists") {
		t.Fatalf("backup over a file: %+v", r)
	}
	gateOnce(t, env, ev)
	r = joule(t, nil, env, "store", "restore", bak)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("log size %d", 2+initReceipts)) {
		t.Fatalf("restore: %+v", r)
	}
	m := regexp.MustCompile(`run '(joule [^']+)'`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("restore names no way past the witness: %s", r.stdout)
	}
	if d := gateOnce(t, env, ev); d.Decision != "deny" {
		t.Fatalf("a rolled-back store decided: %+v", d)
	}
	if r := joule(t, nil, env, strings.Fields(m[1])[1:]...); r.code != 0 {
		t.Fatalf("%s: %+v", m[1], r)
	}
	if d := gateOnce(t, env, ev); d.Decision != "allow" {
		t.Fatalf("after accept-loss: %+v", d)
	}
	if r := joule(t, nil, env, "receipts", "verify"); r.code != 0 {
		t.Fatalf("verify: %+v", r)
	}
	for _, args := range [][]string{{"store", "backup"}, {"store", "restore", "a", "b"}} {
		if r := joule(t, nil, env, args...); r.code != 2 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, []byte("junk"), 0o600)
	if r := joule(t, nil, env, "store", "restore", junk); r.code != 1 {
		t.Fatalf("restore junk: %+v", r)
	}
}

// TestReadOnlyHome: in a $JOULE_HOME nobody may write, the commands that
// only read still answer (the store opened read-only), a write says why it
// cannot, and the status line says what is so rather than "not
// initialised". As root (CI), permissions stop nobody, so the commands run
// as the user nobody over a home it owns but may not write.
func TestReadOnlyHome(t *testing.T) {
	base, err := os.MkdirTemp("", "joule-rohome-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			os.Chmod(p, 0o700)
			return nil
		})
		os.RemoveAll(base)
	})
	os.Chmod(base, 0o755)
	ws := filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	home := filepath.Join(base, "home")
	env := []string{"JOULE_HOME=" + home, "HOME=" + filepath.Join(base, "userhome")}
	if r := joule(t, nil, env, "init", "--workspace", ws); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	gateOnce(t, env, `{"session_id":"ro","tool":"Bash","input":{"command":"go vet ./..."},"cwd":"`+ws+`"}`)
	bin := jouleBin
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// nobody must reach the binary too.
		bin = filepath.Join(base, "joule")
		b, err := os.ReadFile(jouleBin)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(bin, b, 0o755)
		const nobody = 65534
		filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			return os.Lchown(p, nobody, nobody)
		})
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if d.IsDir() {
			return os.Chmod(p, 0o500)
		}
		return os.Chmod(p, 0o400)
	})
	run := func(stdin string, args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
	}
	// The write is refused: the home really is read-only for the runner.
	if r := run("", "grant", "issue", "--template", "dev", "--workspace", ws); r.code == 0 {
		t.Fatalf("a grant was issued into a read-only home: %+v", r)
	}
	for _, args := range [][]string{{"receipts", "ls"}, {"receipts", "ls", "ro"}, {"receipts", "verify"}, {"grant", "ls"}, {"grant", "show", "active"}} {
		if r := run("", args...); r.code != 0 {
			t.Errorf("%v in a read-only home: %+v", args, r)
		}
	}
	if r := run(`{"session_id":"ro"}`, "statusline"); strings.Contains(r.stdout, "not initialised") || !strings.Contains(r.stdout, "1 allowed") {
		t.Errorf("status line in a read-only home: %+v", r)
	}
}

// TestMCPWithoutInit: joule mcp in a home without joule init starts, lists
// its tools, and answers every tool call and resource read with an error
// saying to run joule init.
func TestMCPWithoutInit(t *testing.T) {
	dir := t.TempDir()
	env := []string{"JOULE_HOME=" + filepath.Join(dir, "nohome"), "HOME=" + dir}
	p := startMCP(t, env, "--workspace", dir)
	tools, err := p.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	for _, tool := range tools.Tools {
		r, text := p.call(t, tool.Name, map[string]any{"path": "x", "command": "ls", "pattern": "x"})
		if !r.IsError || !strings.Contains(text, "joule init") {
			t.Errorf("%s: %+v %q", tool.Name, r, text)
		}
	}
	for _, uri := range []string{"joule://steward", "joule://sessions", "joule://grants/abc", "joule://sessions/s/receipts/1"} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		if _, err := p.c.ReadResource(context.Background(), req); err == nil || !strings.Contains(err.Error(), "joule init") {
			t.Errorf("%s: %v", uri, err)
		}
	}
}

// TestCompletion: the bash script, loaded by a real bash, completes command
// names and subcommands, and every subcommand it offers is one joule takes.
func TestCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	r := joule(t, nil, nil, "completion", "bash")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	script := filepath.Join(t.TempDir(), "joule.bash")
	os.WriteFile(script, []byte(r.stdout), 0o600)
	complete := func(words ...string) []string {
		t.Helper()
		line := fmt.Sprintf(`source %q; COMP_WORDS=(%s); COMP_CWORD=%d; _joule; printf '%%s\n' "${COMPREPLY[@]}"`, script, strings.Join(words, " "), len(words)-1)
		out, err := exec.Command(bash, "--norc", "-c", line).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	if got := complete("joule", "gr"); !slices.Equal(got, []string{"grant"}) {
		t.Fatalf("joule gr<TAB> = %q", got)
	}
	if got := complete("joule", "grant", "re"); !slices.Equal(got, []string{"renew", "revoke"}) {
		t.Fatalf("joule grant re<TAB> = %q", got)
	}
	for cmd, subs := range subcommands {
		if cmd == "help" || cmd == "completion" {
			continue
		}
		for _, sub := range subs {
			if r := joule(t, nil, nil, cmd, sub, "-h"); r.code != 0 {
				t.Errorf("completion offers %q %q, which joule does not take: %+v", cmd, sub, r)
			}
		}
	}
	for _, sh := range []string{"zsh", "fish"} {
		r := joule(t, nil, nil, "completion", sh)
		if r.code != 0 || !strings.Contains(r.stdout, "renew") || !strings.Contains(r.stdout, "receipts") {
			t.Errorf("%s: %+v", sh, r)
		}
	}
	if r := joule(t, nil, nil, "completion", "tcsh"); r.code != 2 {
		t.Errorf("tcsh: %+v", r)
	}
}

// TestReceiptVerifySessionReceipt: joule receipt verify takes the envelope
// receipts show prints (a decision receipt), not only JCR-1, and the chain
// check it points to works as printed.
func TestReceiptVerifySessionReceipt(t *testing.T) {
	env, ws := initHome(t)
	gateOnce(t, env, `{"session_id":"rv","tool":"Bash","input":{"command":"go vet ./..."},"cwd":"`+ws+`"}`)
	var shown struct {
		EnvelopeHex string `json:"envelope_hex"`
	}
	r := joule(t, nil, env, "receipts", "show", "rv", "1")
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.EnvelopeHex == "" {
		t.Fatalf("show: %v %+v", err, r)
	}
	pub, err := os.ReadFile(filepath.Join(strings.TrimPrefix(env[0], "JOULE_HOME="), "steward.pub"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(pub))
	r = joule(t, []byte(shown.EnvelopeHex), env, "receipt", "verify", "--pubkey", key)
	if r.code != 0 || !strings.Contains(r.stdout, "verified: session receipt") || !strings.Contains(r.stdout, `"jc_receipt"`) {
		t.Fatalf("receipt verify of a decision receipt: %+v", r)
	}
	// Tampered: refused.
	bad := []byte(shown.EnvelopeHex)
	bad[len(bad)-3] ^= 1
	if r := joule(t, bad, env, "receipt", "verify", "--pubkey", key); r.code != 1 {
		t.Fatalf("tampered: %+v", r)
	}
	// An export given to receipt verify (one envelope) is named for what
	// it is, and the command the hint prints verifies it, in either format
	// and without saying which.
	gateOnce(t, env, `{"session_id":"rv","tool":"Bash","input":{"command":"go test ./..."},"cwd":"`+ws+`"}`)
	for _, format := range []string{"cbor", "jsonl"} {
		exp := joule(t, nil, env, "receipts", "export", "rv", "--format", format)
		r := joule(t, []byte(exp.stdout), env, "receipt", "verify", "--pubkey", key)
		_, hint, _ := strings.Cut(r.stderr, "hint: verify a chain with: ")
		if r.code != 1 || !strings.Contains(r.stderr, "an export of a session's chain (2 receipts)") || hint == "" {
			t.Fatalf("receipt verify of a %s export: %+v", format, r)
		}
		args := strings.Fields(strings.NewReplacer("KEY", key, "< FILE", "").Replace(hint))[1:]
		if r := joule(t, []byte(exp.stdout), env, args...); r.code != 0 || !strings.Contains(r.stdout, "2 receipts, chain intact") {
			t.Fatalf("the hint %q on a %s export: %+v", hint, format, r)
		}
	}
}

// TestEverySuggestedCommandParses finds every joule command a message in
// the source suggests ('joule …' in quotes, and the proxy's "Raise the
// budget: joule …") and runs it with -h last: the command, its subcommand
// and every flag before -h must be ones joule takes, so that what a
// message prints works when typed. (The tests above run the main ones for
// real: renew, accept-loss, store restore.)
func TestEverySuggestedCommandParses(t *testing.T) {
	quoted := regexp.MustCompile(`'(joule [^']+)'`)
	raise := regexp.MustCompile(`budget: (joule [^"(]+)`)
	found := map[string]string{}
	for _, dir := range []string{".", "../../core", "../../energy", "../../mcpserver", "../../tiers", "../../acpagent"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, re := range []*regexp.Regexp{quoted, raise} {
				for _, m := range re.FindAllStringSubmatch(string(b), -1) {
					for _, part := range strings.Split(m[1], " | ") {
						found[strings.TrimSpace(part)] = p
					}
				}
			}
			return nil
		})
	}
	if len(found) < 10 {
		t.Fatalf("found only %d suggestions: %v", len(found), found)
	}
	env, ws := initHome(t)
	// The proxy's refusal, run for real as it prints (with an amount).
	if r := jouleIn(t, ws, nil, env, "grant", "issue", "--template", "dev", "--budget", "420kJ", "--use"); r.code != 0 || !strings.Contains(r.stdout, "420 kJ") {
		t.Fatalf("the proxy's suggestion, run: %+v", r)
	}
	for line, file := range found {
		words := strings.Fields(strings.NewReplacer("%s", "x", "%d", "1", "%q", "x", `\"`, "", `"`, "").Replace(line))
		if len(words) < 2 || words[1] == "x" || strings.ContainsAny(line, "<>[]") || strings.Contains(line, `"+`) {
			continue // a template of a command ('joule %s -h', "'joule "+cmd+"'"), not one
		}
		t.Run(line, func(t *testing.T) {
			args := append(words[1:], "-h")
			if words[1] == "help" {
				args = words[1:]
			}
			r := jouleIn(t, ws, nil, env, args...)
			if r.code != 0 || words[1] != "help" && !strings.Contains(r.stdout, "usage: joule") {
				t.Errorf("%s suggests %q, which joule does not take: exit %d\n%s%s", file, line, r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestKeyModeCode: a private key others may read is denied key-unusable,
// by joule gate and joule hook alike, with the fix in the text.
func TestKeyModeCode(t *testing.T) {
	env, ws := initHome(t)
	key := filepath.Join(strings.TrimPrefix(env[0], "JOULE_HOME="), "steward.key")
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	d := gateOnce(t, env, `{"session_id":"km","tool":"Read","input":{"file_path":"`+ws+`/a"},"cwd":"`+ws+`"}`)
	if d.Code != "key-unusable" || !strings.Contains(d.Reason, "chmod 600") {
		t.Fatalf("gate: %+v", d)
	}
	r := jouleIn(t, ws, []byte(`{"session_id":"km","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"`+ws+`/a"},"cwd":"`+ws+`"}`), env, "hook", "claude-code")
	if !strings.Contains(r.stdout+r.stderr, "key-unusable") || strings.Contains(r.stdout+r.stderr, "joule init") {
		t.Fatalf("hook: %+v", r)
	}
}

// TestProxyRefusalSealed: a model call the proxy refuses is a decision and
// gets a receipt: a deny, budget-exceeded, in the call's session, in a
// chain that verifies.
func TestProxyRefusalSealed(t *testing.T) {
	env, _ := initHome(t, "--budget", "1mJ")
	upstream := httptest.NewServer(demo.AnthropicStandIn())
	defer upstream.Close()
	url, _ := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", upstream.URL, "--quiet")
	req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", "sk-ant-api03-SECRET")
	req.Header.Set("x-claude-code-session-id", "refused-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("a call over the budget was forwarded: %d", resp.StatusCode)
	}
	r := joule(t, nil, env, "receipts", "ls", "refused-1", "--json")
	var rows []struct{ Kind, Tool, Decision, Code string }
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].Decision != "deny" || rows[0].Code != "budget-exceeded" || rows[0].Tool != "model-call" {
		t.Fatalf("the refusal's receipt: %v %+v", err, r)
	}
	if r := joule(t, nil, env, "receipts", "verify"); r.code != 0 || strings.Contains(r.stdout, "SECRET") {
		t.Fatalf("verify: %+v", r)
	}
	if r := joule(t, nil, env, "receipts", "show", "refused-1", "1"); strings.Contains(r.stdout, "SECRET") {
		t.Fatalf("the credential is in the receipt: %s", r.stdout)
	}
}

// TestCompletionShells loads the zsh and fish scripts into the real shells
// (.ci/setup.d/55-completion-shells.sh installs them): fish completes
// through its own engine (complete -C); zsh runs _joule with compadd
// recording what it offers, as the completion system would call it.
func TestCompletionShells(t *testing.T) {
	for _, sh := range []string{"zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			bin, err := exec.LookPath(sh)
			if err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is missing: .ci/setup.d/55-completion-shells.sh installs it", sh)
				}
				t.Skipf("%s is missing: run .ci/setup.d/55-completion-shells.sh to test its completion", sh)
			}
			r := joule(t, nil, nil, "completion", sh)
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			dir := t.TempDir()
			script := filepath.Join(dir, "joule."+sh)
			os.WriteFile(script, []byte(r.stdout), 0o600)
			complete := func(words ...string) []string {
				t.Helper()
				var line string
				if sh == "fish" {
					line = fmt.Sprintf("source %s; complete -C %s", fishQuote(script), fishQuote(strings.Join(words, " ")))
				} else {
					q := make([]string, len(words))
					for i, w := range words {
						q[i] = fmt.Sprintf("%q", w)
					}
					line = fmt.Sprintf(`compadd() { [ "$1" = -- ] && shift; printf '%%s\n' "$@"; }; compdef() { :; }; _files() { :; }
source %q; words=(%s); CURRENT=%d; _joule`, script, strings.Join(q, " "), len(words))
				}
				cmd := exec.Command(bin, "-c", line)
				cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "XDG_CONFIG_HOME=" + dir, "XDG_DATA_HOME=" + dir}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", sh, err, out)
				}
				var got []string
				for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					got = append(got, strings.SplitN(l, "\t", 2)[0])
				}
				return got
			}
			match := func(got []string, prefix string) []string {
				var m []string
				for _, g := range got {
					if strings.HasPrefix(g, prefix) {
						m = append(m, g)
					}
				}
				return m
			}
			if got := match(complete("joule", "gr"), "gr"); !slices.Equal(got, []string{"grant"}) {
				t.Errorf("joule gr<TAB> = %q", got)
			}
			if got := match(complete("joule", "grant", "re"), "re"); !slices.Equal(got, []string{"renew", "revoke"}) {
				t.Errorf("joule grant re<TAB> = %q", got)
			}
			if got := match(complete("joule", "conformance", ""), ""); !slices.Contains(got, "gen") || !slices.Contains(got, "check") {
				t.Errorf("joule conformance <TAB> = %q", got)
			}
		})
	}
}
