package systeme2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/plugins/hook/hosttest"
	"github.com/joulehook/joule/plugins/hook/resident"
)

// helperEnv makes the test binary, run as a person, do one thing an
// attacker would with a socket: "bind:PATH" listens there and exits 0 (3
// when refused); "serve:PATH" listens there and answers every request
// "allow" until killed.
const helperEnv = "JOULE_SYSTEME2E_HELPER"

func helperMain() bool {
	op, arg, ok := strings.Cut(os.Getenv(helperEnv), ":")
	if !ok {
		return false
	}
	ln, err := net.Listen("unix", arg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Chmod(arg, 0o666)
	if op == "bind" {
		ln.Close()
		os.Exit(0)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			defer c.Close()
			resident.ReadRequest(c)
			resident.WriteResponse(c, &resident.Response{Kind: resident.Answer,
				Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`)})
		}()
	}
}

const systemJoule = "/usr/local/libexec/joule/joule"

// machine is a machine set up by joule install --system, with two people:
// alice, whose agent is gated, and bob, of the admin group.
type machine struct {
	t          *testing.T
	base       string
	sys        *home.System
	alice, bob hosttest.Account
	ws         string // alice's workspace
	helper     string // the test binary, where the people may run it
}

func suffix() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// newMachine runs joule install --system (with a system user and an admin
// group of unique names) and adds the people.
func newMachine(t *testing.T, hosts ...string) *machine {
	t.Helper()
	base := hosttest.Machine(t)
	m := &machine{t: t, base: base}
	sysUser, admin := "jsys"+suffix(), "jadm"+suffix()
	args := append([]string{"install", "--system", "--system-user", sysUser, "--admin-group", admin, "--proxy", freePort(t)}, hosts...)
	out, err := m.root(filepath.Join(hosttest.Bin, "joule"), args...)
	if err != nil {
		t.Fatalf("joule install --system: %v\n%s", err, out)
	}
	t.Logf("joule install --system:\n%s", out)
	t.Cleanup(func() {
		if out, err := m.root(systemJoule, "install", "--system", "--uninstall"); err != nil {
			t.Errorf("joule install --system --uninstall: %v\n%s", err, out)
		}
		exec.Command("userdel", sysUser).Run()
		exec.Command("groupdel", admin).Run()
	})
	if m.sys, err = home.LoadSystem(""); err != nil {
		t.Fatal(err)
	}
	m.alice = hosttest.User(t, base, "jalice")
	m.bob = hosttest.User(t, base, "jbob", admin)
	m.ws = filepath.Join(m.alice.Home, "ws")
	os.MkdirAll(filepath.Join(m.ws, "src"), 0o755)
	os.Chown(m.ws, m.alice.UID, m.alice.GID)
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	m.helper = filepath.Join(base, "helper")
	os.WriteFile(m.helper, b, 0o755)
	return m
}

// root runs name as root in /, with sudo's kind of environment.
func (m *machine) root(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=/root", "PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

type result struct {
	code           int
	stdout, stderr string
}

// as runs name as a in dir with a's environment and env.
func (m *machine) as(a hosttest.Account, dir string, stdin []byte, env []string, name string, args ...string) result {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := a.Credential(exec.CommandContext(ctx, name, args...))
	cmd.Dir, cmd.Env = dir, a.Env(env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		m.t.Fatalf("%s %v as %s: %v", name, args, a.Name, err)
	}
	return r
}

// sh runs a shell line as a in their home.
func (m *machine) sh(a hosttest.Account, line string, env ...string) result {
	return m.as(a, a.Home, nil, env, "/bin/sh", "-c", line)
}

// joule runs the system's joule as a in alice's workspace.
func (m *machine) joule(a hosttest.Account, env []string, args ...string) result {
	return m.as(a, m.ws, nil, env, systemJoule, args...)
}

// decision is what the host is told for one Bash command: the system hook
// line as Claude Code runs it, as alice in her workspace.
func (m *machine) decision(session, command string, env ...string) string {
	m.t.Helper()
	payload := fmt.Appendf(nil, `{"session_id":%q,"transcript_path":"/tmp/t.jsonl","cwd":%q,"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":"toolu_1"}`, session, m.ws, command)
	r := m.as(m.alice, m.ws, payload, env, filepath.Join(m.sys.Bin, "joule-hook"), "--system", "claude-code", "--contain")
	var out struct {
		Hook struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	json.Unmarshal([]byte(r.stdout), &out)
	switch {
	case r.code == 0 && strings.Contains(r.stdout, `"updatedInput"`) && strings.Contains(r.stdout, "joule-exec"):
		return "rewrite"
	case r.code == 0 && out.Hook.Decision == "":
		return "allow"
	case out.Hook.Decision != "":
		code := ""
		if i := strings.Index(out.Hook.Reason, "joule deny ("); i >= 0 {
			code, _, _ = strings.Cut(out.Hook.Reason[i+len("joule deny ("):], ")")
		}
		return out.Hook.Decision + " " + code
	}
	return fmt.Sprintf("exit %d: %s %s", r.code, r.stdout, r.stderr)
}

// issueAsRoot issues a grant for alice's workspace as an administrator
// would, with sudo, and returns its id.
func (m *machine) issueAsRoot(template string) string {
	m.t.Helper()
	out, err := m.root(systemJoule, "grant", "issue", "--template", template, "--workspace", m.ws, "--use")
	if err != nil {
		m.t.Fatalf("grant issue as root: %v\n%s", err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "grant" {
			return f[1]
		}
	}
	m.t.Fatalf("no grant id in:\n%s", out)
	return ""
}

type grantRow struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Active bool   `json:"active"`
}

// grants lists the system's grants, as alice may.
func (m *machine) grants() []grantRow {
	m.t.Helper()
	r := m.joule(m.alice, nil, "grant", "ls", "--json")
	var rows []grantRow
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rows) != nil {
		m.t.Fatalf("grant ls as alice: %+v", r)
	}
	return rows
}

// asSystemUser runs the system's joule as the system user on its home.
func (m *machine) asSystemUser(args ...string) result {
	m.t.Helper()
	a := hosttest.Account{Name: m.sys.User, UID: m.sys.UID, GID: m.sys.GID, Home: m.sys.Home}
	return m.as(a, m.sys.Home, nil, []string{"JOULE_HOME=" + m.sys.Home}, systemJoule, args...)
}

// TestInstallSystem: the install makes what the system configuration
// names, each file the system user's with the modes system mode rests on,
// and a second run changes nothing.
func TestInstallSystem(t *testing.T) {
	m := newMachine(t, "claude-code")
	for _, c := range []struct {
		path  string
		uid   int
		mode  os.FileMode
		isDir bool
	}{
		{home.SystemConfig, 0, 0o644, false},
		{m.sys.Bin, 0, 0o755, true},
		{filepath.Join(m.sys.Bin, "joule-hook"), 0, 0o755, false},
		{m.sys.Home, m.sys.UID, 0o700, true},
		{filepath.Join(m.sys.Home, "steward.key"), m.sys.UID, 0o600, false},
		{m.sys.Run, m.sys.UID, 0o755, true},
		{m.sys.Socket(), m.sys.UID, 0o666, false},
		{filepath.Join(m.sys.Run, "policy"), m.sys.UID, 0o711, true},
	} {
		st, err := os.Lstat(c.path)
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if uid := int(st.Sys().(*syscall.Stat_t).Uid); uid != c.uid || st.Mode().Perm() != c.mode || st.IsDir() != c.isDir {
			t.Errorf("%s: uid %d mode %v; want uid %d mode %v", c.path, uid, st.Mode(), c.uid, c.mode)
		}
	}
	if st, err := os.Stat(filepath.Join(m.sys.Home, "joule.db")); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Errorf("the store: %v %v", st, err)
	}
	out, err := m.root(systemJoule, "install", "--system", "--system-user", m.sys.User, "--admin-group", m.sys.AdminGroup, "--proxy", m.sys.Proxy, "claude-code")
	if err != nil || strings.Contains(out, "wrote ") || strings.Contains(out, "created ") || strings.Contains(out, "installed ") || strings.Contains(out, "started ") {
		t.Fatalf("the second install changed something (%v):\n%s", err, out)
	}
	if !strings.Contains(out, "unchanged /etc/claude-code/managed-settings.json") {
		t.Errorf("the second install did not see the managed settings as they were:\n%s", out)
	}
	// joule doctor, as a person, says which mode and that the gate is the
	// system user's.
	if r := m.joule(m.alice, nil, "doctor"); r.code != 0 || !strings.Contains(r.stdout, "system mode: the gate runs as "+m.sys.User) {
		t.Errorf("joule doctor as alice: %+v", r)
	}
	// An upgrade: a new binary in place (what a later install copies), and
	// the gate executes itself again (the same pid, a new start), with no
	// service manager here.
	uptime := func() time.Duration {
		r := m.joule(m.alice, nil, "gate", "status")
		for _, l := range strings.Split(r.stdout, "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "uptime" {
				d, _ := time.ParseDuration(f[1])
				return d
			}
		}
		return -1
	}
	time.Sleep(3 * time.Second)
	before := uptime()
	b, _ := os.ReadFile(systemJoule)
	os.WriteFile(systemJoule+".new", append(b, '\n'), 0o755)
	os.Rename(systemJoule+".new", systemJoule)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if u := uptime(); u >= 0 && u < before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gate did not start again after its binary changed (uptime %v, was %v)", uptime(), before)
		}
	}
	if d := m.decision("up", "sudo rm -rf /"); !strings.HasPrefix(d, "deny ") {
		t.Fatalf("after the upgrade: %s", d)
	}
	// The proxy runs as the system user and answers.
	if c, err := net.DialTimeout("tcp", m.sys.Proxy, 2*time.Second); err != nil {
		t.Errorf("the system proxy on %s: %v", m.sys.Proxy, err)
	} else {
		c.Close()
	}
}

// TestSystemGrants: root (as after sudo) and a member of the admin group
// change grants; a person who is neither cannot, whatever they set, and
// may still list them.
func TestSystemGrants(t *testing.T) {
	m := newMachine(t)
	id := m.issueAsRoot("dev")
	if d := m.decision("g1", "go test ./..."); d != "rewrite" {
		t.Fatalf("go test under the root-issued grant: %s", d)
	}
	before := m.grants()
	for _, args := range [][]string{
		{"grant", "issue", "--template", "dev", "--budget", "1GJ", "--use"},
		{"grant", "use", id, "--session", "g1"},
		{"grant", "revoke", id},
		{"grant", "renew", id},
		{"init"},
	} {
		for _, env := range [][]string{nil, {"JOULE_HOME=" + m.sys.Home}, {"JOULE_HOME=" + filepath.Join(m.alice.Home, "jh")}} {
			r := m.joule(m.alice, env, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "needs root or the "+m.sys.AdminGroup+" group") {
				t.Errorf("alice %v with %v: %+v", args, env, r)
			}
		}
	}
	if after := m.grants(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("alice changed the grants:\n%v\n%v", before, after)
	}
	r := m.joule(m.bob, nil, "grant", "issue", "--template", "readonly", "--workspace", m.ws)
	if r.code != 0 {
		t.Fatalf("bob, of the admin group: %+v", r)
	}
	if n := len(m.grants()); n != len(before)+1 {
		t.Fatalf("bob's grant: %d grants, want %d", n, len(before)+1)
	}
	// A workspace the system user cannot reach is refused with the way
	// to let it in.
	closed := filepath.Join(m.bob.Home, "private")
	os.MkdirAll(filepath.Join(closed, "ws"), 0o755)
	os.Chmod(closed, 0o700)
	if out, err := m.root(systemJoule, "grant", "issue", "--template", "dev", "--workspace", filepath.Join(closed, "ws")); err == nil || !strings.Contains(out, "cannot reach") || !strings.Contains(out, "setfacl -m u:"+m.sys.User+":x") {
		t.Errorf("a workspace the system user cannot reach: %v\n%s", err, out)
	}
	// The gate's own stop is the administrators' too.
	if r := m.joule(m.alice, nil, "gate", "stop"); r.code == 0 {
		t.Fatalf("alice stopped the system gate: %+v", r)
	}
	if r := m.joule(m.alice, nil, "gate", "status"); r.code != 0 || !strings.Contains(r.stdout, "not an administrator") {
		t.Fatalf("gate status as alice: %+v", r)
	}
}

// TestSystemAttacks: issue 34's attacks on a home the agent's own user can
// write, run as alice, the person whose agent is gated, against a machine
// in system mode. None changes a decision; every one is refused by the
// kernel or the gate; the store still checks, with every decision's
// receipt in it.
func TestSystemAttacks(t *testing.T) {
	m := newMachine(t, "claude-code")
	m.issueAsRoot("dev")
	commands := []string{"go test ./...", "sudo rm -rf /", "cat " + filepath.Join(m.sys.Home, "steward.key"),
		"echo '{}' > " + filepath.Join(m.alice.Home, ".claude", "settings.json")}
	decisions := 0
	snapshot := func(env ...string) []string {
		var out []string
		for _, c := range commands {
			out = append(out, m.decision("attack", c, env...))
			decisions++
		}
		return out
	}
	want := snapshot()
	if want[0] != "rewrite" || !strings.HasPrefix(want[1], "deny ") || !strings.HasPrefix(want[2], "deny ") || !strings.HasPrefix(want[3], "deny ") {
		t.Fatalf("the decisions before any attack: %q", want)
	}
	unchanged := func(t *testing.T, env ...string) {
		t.Helper()
		if got := snapshot(env...); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the decisions changed: %q, were %q", got, want)
		}
	}
	refused := func(t *testing.T, r result) {
		t.Helper()
		if r.code == 0 {
			t.Fatalf("not refused: %+v", r)
		}
	}
	key := filepath.Join(m.sys.Home, "steward.key")
	keyBefore, _ := os.ReadFile(key)
	store := filepath.Join(m.sys.Home, "joule.db")
	sock := m.sys.Socket()

	t.Run("read the key", func(t *testing.T) {
		r := m.sh(m.alice, "cat "+key)
		refused(t, r)
		if strings.Contains(r.stdout, string(keyBefore[:8])) {
			t.Fatal("the key was read")
		}
		refused(t, m.sh(m.alice, "cp "+key+" /tmp/stolen.key"))
	})
	t.Run("edit, replace or delete the store", func(t *testing.T) {
		refused(t, m.sh(m.alice, "printf x >> "+store))
		refused(t, m.sh(m.alice, "rm -f "+store))
		refused(t, m.sh(m.alice, "mv "+store+" "+store+".old"))
		refused(t, m.sh(m.alice, "rm -rf "+m.sys.Home))
		refused(t, m.sh(m.alice, "ls "+m.sys.Home))
		// The store's location, and the keys the gate trusts.
		refused(t, m.sh(m.alice, `printf '{"store":"/tmp/x.db"}' > `+filepath.Join(m.sys.Home, "config.json")))
		refused(t, m.sh(m.alice, "echo 'alice+1+key' >> "+filepath.Join(m.sys.Home, "issuers")))
		unchanged(t)
	})
	t.Run("edit or delete the witness state", func(t *testing.T) {
		refused(t, m.sh(m.alice, "rm -rf "+filepath.Join(m.sys.Home, "witness")))
		refused(t, m.sh(m.alice, "ln -s /tmp "+filepath.Join(m.sys.Home, "witness")))
		unchanged(t)
	})
	t.Run("impersonate the gate's socket", func(t *testing.T) {
		refused(t, m.sh(m.alice, "rm -f "+sock))
		// Nor can the real gate be killed, to take its place.
		st := m.joule(m.alice, nil, "gate", "status")
		pid := ""
		for _, l := range strings.Split(st.stdout, "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "pid" {
				pid = f[1]
			}
		}
		if pid == "" {
			t.Fatalf("gate status: %+v", st)
		}
		refused(t, m.sh(m.alice, "kill -9 "+pid))
		bind := m.as(m.alice, m.alice.Home, nil, []string{helperEnv + "=bind:" + filepath.Join(m.sys.Run, "impostor.sock")}, m.helper)
		if bind.code != 3 {
			t.Fatalf("alice bound a socket in the gate's directory: %+v", bind)
		}
		// An impostor of alice's own, named by every variable she sets.
		own := filepath.Join(m.alice.Home, "gate")
		os.Mkdir(own, 0o700)
		os.Chown(own, m.alice.UID, m.alice.GID)
		imp := m.alice.Credential(exec.Command(m.helper))
		imp.Env = []string{helperEnv + "=serve:" + filepath.Join(own, resident.SocketName)}
		if err := imp.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { imp.Process.Kill(); imp.Wait() }()
		time.Sleep(200 * time.Millisecond)
		unchanged(t, "JOULE_HOME="+filepath.Dir(own), "XDG_RUNTIME_DIR="+own, "JOULE_STORE="+own)
		// The managed settings that name the hook line are root's.
		refused(t, m.sh(m.alice, "printf x >> /etc/claude-code/managed-settings.json"))
		refused(t, m.sh(m.alice, "printf 'user x\n' >> "+home.SystemConfig))
	})
	t.Run("issue or activate a grant", func(t *testing.T) {
		for _, args := range [][]string{{"grant", "issue", "--template", "dev", "--budget", "1GJ", "--use"}, {"init"}} {
			refused(t, m.joule(m.alice, nil, args...))
		}
		// Serving the system home herself: refused, and it could not read it.
		refused(t, m.joule(m.alice, nil, "gate", "serve", "--system"))
		unchanged(t)
	})
	t.Run("point JOULE_HOME elsewhere", func(t *testing.T) {
		jh := filepath.Join(m.alice.Home, "jh")
		if r := m.joule(m.alice, []string{"JOULE_HOME=" + jh}, "keygen", "--steward", "alice.example"); r.code != 0 {
			t.Fatalf("keygen in alice's own home: %+v", r)
		}
		unchanged(t, "JOULE_HOME="+jh)
	})
	t.Run("nothing lost", func(t *testing.T) {
		if r := m.asSystemUser("store", "check"); r.code != 0 {
			t.Fatalf("store check as the system user: %+v", r)
		}
		if after, _ := os.ReadFile(key); !bytes.Equal(after, keyBefore) {
			t.Fatal("the key changed")
		}
		r := m.asSystemUser("receipts", "ls", "attack", "--json")
		var rows []json.RawMessage
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rows) != nil {
			t.Fatalf("receipts ls: %+v", r)
		}
		if len(rows) != decisions {
			t.Fatalf("%d receipts in the session, %d decisions made", len(rows), decisions)
		}
	})
}

// TestUninstallSystem: the install keeps what an administrator had in each
// host's managed settings; the uninstall gives every file back as it was,
// stops the gate, and leaves the machine in user mode, where the system
// hook line (had anything kept it) denies.
func TestUninstallSystem(t *testing.T) {
	base := hosttest.Machine(t)
	m := &machine{t: t, base: base}
	admin := map[string]string{
		"/etc/claude-code/managed-settings.json": "{\n  // the administrator's\n  \"permissions\": {\"deny\": [\"WebFetch\"]}\n}\n",
		"/etc/codex/requirements.toml":           "# the administrator's\nallowed_sandbox_modes = [\"read-only\", \"workspace-write\"]\n\n[mcp_servers.docs]\nidentifier = \"docs\"\n",
		"/etc/gemini-cli/settings.json":          "{\"privacy\": {\"usageStatisticsEnabled\": false}}\n",
	}
	for p, body := range admin {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	sysUser, group := "jsys"+suffix(), "jadm"+suffix()
	t.Cleanup(func() { exec.Command("userdel", sysUser).Run(); exec.Command("groupdel", group).Run() })
	out, err := m.root(filepath.Join(hosttest.Bin, "joule"), "install", "--system", "--system-user", sysUser, "--admin-group", group, "--proxy", "off", "claude-code", "codex", "gemini-cli")
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	kept := map[string]string{"/etc/claude-code/managed-settings.json": `"deny": ["WebFetch"]`,
		"/etc/codex/requirements.toml": "[mcp_servers.docs]", "/etc/gemini-cli/settings.json": `"usageStatisticsEnabled": false`}
	for p, marker := range kept {
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), "joule-hook") || !strings.Contains(string(b), marker) {
			t.Errorf("%s after the install:\n%s", p, b)
		}
	}
	sys, err := home.LoadSystem("")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := m.root(systemJoule, "install", "--system", "--uninstall"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	for p, body := range admin {
		if b, _ := os.ReadFile(p); string(b) != body {
			t.Errorf("%s after the uninstall:\n%s\nwant:\n%s", p, b, body)
		}
	}
	if _, err := os.Stat(home.SystemConfig); err == nil {
		t.Error("the system configuration is still there")
	}
	if _, err := os.Stat(sys.Socket()); err == nil {
		if _, err := resident.AskSystem(sys, &resident.Request{Op: resident.OpStatus}, time.Now().Add(time.Second), 0); err == nil {
			t.Error("the system gate still answers")
		}
	}
	if _, err := os.Stat(filepath.Join(sys.Home, "steward.key")); err != nil {
		t.Errorf("the uninstall did not keep the system home: %v", err)
	}
}
