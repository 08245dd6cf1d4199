package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/claudecode"
	"github.com/joulehook/joule/plugins/hook/hosttest"
)

// TestClaudeSystem installs joule system-wide (joule install --system
// claude-code: its hook in /etc/claude-code/managed-settings.json with
// allowManagedHooksOnly, the real path, on a machine of the test's own)
// and runs the real CLI as a person whose user, project, local and
// command-line settings disable all hooks and bring an allowing hook of
// their own: joule's managed hook still runs, and its deny binds. The
// control: the same disableAllHooks in the managed file itself, which only
// root writes, does turn it off.
func TestClaudeSystem(t *testing.T) {
	claude := claudeBin(t)
	base := hosttest.Machine(t)
	api := &fakeAnthropic{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	var sfx [3]byte
	rand.Read(sfx[:])
	sysUser, admin := "jsys"+hex.EncodeToString(sfx[:]), "jadm"+hex.EncodeToString(sfx[:])
	root := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = "/", []string{"HOME=/root", "PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		exec.Command("/usr/local/libexec/joule/joule", "install", "--system", "--uninstall").Run()
		exec.Command("userdel", sysUser).Run()
		exec.Command("groupdel", admin).Run()
	})
	out := root(filepath.Join(hosttest.Bin, "joule"), "install", "--system", "--system-user", sysUser, "--admin-group", admin, "--proxy", "off", "claude-code")
	if !strings.Contains(out, "ok   claude-code: PreToolUse hook on every tool in "+claudecode.ManagedSettings) {
		t.Fatalf("install --system claude-code:\n%s", out)
	}
	alice := hosttest.User(t, base, "jalice")
	ws := filepath.Join(alice.Home, "ws")
	for _, d := range []string{filepath.Join(ws, ".claude"), filepath.Join(alice.Home, ".claude"), filepath.Join(alice.Home, "tmp")} {
		os.MkdirAll(d, 0o755)
	}
	root("/usr/local/libexec/joule/joule", "grant", "issue", "--template", "dev", "--workspace", ws, "--use")
	// An allowing hook of alice's own, and every setting of hers that
	// turns hooks off.
	allow := `{"disableAllHooks": true, "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}'"}]}]}}`
	for _, p := range []string{filepath.Join(alice.Home, ".claude", "settings.json"), filepath.Join(ws, ".claude", "settings.json"), filepath.Join(ws, ".claude", "settings.local.json")} {
		os.WriteFile(p, []byte(allow), 0o644)
	}
	os.WriteFile(filepath.Join(alice.Home, ".claude.json"), []byte(`{"projects": {"`+ws+`": {"hasTrustDialogAccepted": true}}}`), 0o600)
	exec.Command("chown", "-R", alice.Name+":", alice.Home).Run()
	env := []string{"TMPDIR=" + filepath.Join(alice.Home, "tmp"),
		"ANTHROPIC_BASE_URL=http://" + ln.Addr().String(), "ANTHROPIC_API_KEY=sk-ant-test-dummy-key-0000000000",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1"}
	run := func(t *testing.T, file string) (ran bool, result string) {
		t.Helper()
		api.script("dd if=/dev/null of=" + file)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, _ := alice.Run(ctx, ws, env, claude, "-p", "--output-format", "json", "--allowedTools", "Bash",
			"--settings", `{"disableAllHooks": true}`, "make the file")
		_, err := os.Stat(filepath.Join(ws, file))
		res := api.got()
		if len(res) == 0 {
			t.Fatalf("no tool result reached the model:\n%s", out)
		}
		return err == nil, res[0].Content
	}
	t.Run("denied despite every setting of the person's", func(t *testing.T) {
		if ran, text := run(t, "denied.txt"); ran || !strings.Contains(text, "joule deny (action-not-granted)") {
			t.Fatalf("the managed hook did not bind (ran: %v): %s", ran, text)
		}
	})
	t.Run("control: disableAllHooks in the managed file", func(t *testing.T) {
		b, _ := os.ReadFile(claudecode.ManagedSettings)
		defer os.WriteFile(claudecode.ManagedSettings, b, 0o644)
		os.WriteFile(claudecode.ManagedSettings, []byte(strings.Replace(string(b), `"allowManagedHooksOnly": true`, `"allowManagedHooksOnly": true, "disableAllHooks": true`, 1)), 0o644)
		if ran, text := run(t, "control.txt"); !ran {
			t.Fatalf("the managed file's own disableAllHooks did not turn the hook off: the test no longer shows what holds (%s)", text)
		}
	})
}
