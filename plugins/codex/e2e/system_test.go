package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/codex"
	"github.com/joulehook/joule/plugins/hook/hosttest"
)

func suffix() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestCodexSystem installs joule system-wide (joule install --system
// codex: its hook in /etc/codex/requirements.toml) on a machine of the
// test's own and runs the real CLI as a person whose own config.toml
// turns hooks off and disables joule's hook by its key: the managed hook
// still runs, trusted without a word from them, and its deny binds; and,
// as a control, the same person's hooks = false does switch it off where
// the requirements do not pin the feature.
func TestCodexSystem(t *testing.T) {
	base := hosttest.Machine(t)
	codexPath := codexBin(t)
	fake := newFake(t)
	sysUser, admin := "jsys"+suffix(), "jadm"+suffix()
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
	out := root(filepath.Join(binDir, "joule"), "install", "--system", "--system-user", sysUser, "--admin-group", admin, "--proxy", "off", "codex")
	if !strings.Contains(out, "ok   codex: PreToolUse and PermissionRequest hooks on every tool in "+codex.RequirementsFile) {
		t.Fatalf("install --system codex:\n%s", out)
	}
	alice := hosttest.User(t, base, "jalice")
	ws := filepath.Join(alice.Home, "ws")
	chome := filepath.Join(alice.Home, ".codex")
	for _, d := range []string{filepath.Join(ws, "src"), chome, filepath.Join(alice.Home, "tmp")} {
		os.MkdirAll(d, 0o755)
	}
	root("/usr/local/libexec/joule/joule", "grant", "issue", "--template", "dev", "--workspace", ws, "--use")
	// alice's own configuration: the fake provider, hooks turned off, and
	// joule's managed hook disabled by its key, as /hooks would record it.
	r := &rig{fake: fake}
	// (providerConfig ends in its [features] table.)
	userConfig := r.providerConfig() + `hooks = false

[hooks.state."` + codex.RequirementsFile + `:pre_tool_use:0:0"]
enabled = false

[hooks.state."` + codex.RequirementsFile + `:permission_request:0:0"]
enabled = false
`
	os.WriteFile(filepath.Join(chome, "config.toml"), []byte(userConfig), 0o600)
	exec.Command("chown", "-R", alice.Name+":", alice.Home).Run()
	env := []string{"CODEX_HOME=" + chome, "FAKE_OPENAI_KEY=sk-test-dummy", "RUST_LOG=error", "NO_COLOR=1", "TMPDIR=" + filepath.Join(alice.Home, "tmp")}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(ws, name))
		return err == nil
	}
	codexExec := func(calls ...call) string {
		t.Helper()
		fake.play(calls...)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, _ := alice.Run(ctx, ws, env, codexPath, "exec", "--skip-git-repo-check", "--json", "do it")
		return string(out)
	}
	t.Run("denied despite the user's config", func(t *testing.T) {
		out := codexExec(call{Name: "exec_command", Args: `{"cmd":"dd if=/dev/null of=denied.txt"}`})
		if exists("denied.txt") {
			t.Fatalf("denied.txt exists: the managed hook did not bind\n%s", out)
		}
		outs := fake.outputs()
		if len(outs) != 1 || !strings.Contains(outs[0].Text, "joule deny (action-not-granted)") {
			t.Fatalf("the model should see joule's reason; got %+v\n%s", outs, out)
		}
	})
	// The control: without [features] hooks = true among the
	// requirements, the person's hooks = false turns the managed hook off
	// too, and the call runs: the requirement is what holds.
	t.Run("control: without the required feature", func(t *testing.T) {
		b, _ := os.ReadFile(codex.RequirementsFile)
		defer os.WriteFile(codex.RequirementsFile, b, 0o644)
		os.WriteFile(codex.RequirementsFile, []byte(strings.Replace(string(b), "features.hooks = true\n", "", 1)), 0o644)
		out := codexExec(call{Name: "exec_command", Args: `{"cmd":"dd if=/dev/null of=control.txt"}`})
		if !exists("control.txt") {
			t.Fatalf("the person's hooks = false did not turn the unpinned managed hook off: the test no longer shows what the requirement stops\n%s", out)
		}
	})
	t.Run("allowed, contained", func(t *testing.T) {
		out := codexExec(call{Name: "exec_command", Args: `{"cmd":"touch src/allowed.txt"}`})
		if !exists("src/allowed.txt") {
			t.Fatalf("src/allowed.txt was not made under the managed hook's allow\n%s\n%+v", out, fake.outputs())
		}
	})
}
