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

	"github.com/joulehook/joule/plugins/geminicli"
	"github.com/joulehook/joule/plugins/hook/hosttest"
)

// TestGeminiSystem installs joule system-wide (joule install --system
// gemini-cli: its hook in /etc/gemini-cli/settings.json, the real path, on
// a machine of the test's own) and runs the real CLI as a person whose own
// files try to take the hook away. Gemini merges BeforeTool hooks from
// every layer and lets the system layer win hooksConfig.enabled and folder
// trust, so turning hooks off, emptying BeforeTool, distrusting the
// folder, or moving the system settings with the variable Gemini reads,
// leaves joule's deny binding. One setting does win, and the test holds
// it as the documented gap: hooksConfig.disabled is a union across layers,
// so a user's settings may disable the hook by its name.
func TestGeminiSystem(t *testing.T) {
	js := geminiJS(t)
	base := hosttest.Machine(t)
	api := &fakeGemini{}
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
	out := root(filepath.Join(hosttest.Bin, "joule"), "install", "--system", "--system-user", sysUser, "--admin-group", admin, "--proxy", "off", "gemini-cli")
	if !strings.Contains(out, "ok   gemini-cli: BeforeTool hook on every tool in /etc/gemini-cli/settings.json") {
		t.Fatalf("install --system gemini-cli:\n%s", out)
	}
	alice := hosttest.User(t, base, "jalice")
	ws := filepath.Join(alice.Home, "ws")
	os.MkdirAll(filepath.Join(ws, ".gemini"), 0o755)
	os.MkdirAll(filepath.Join(alice.Home, ".gemini"), 0o755)
	os.MkdirAll(filepath.Join(alice.Home, "tmp"), 0o755)
	root("/usr/local/libexec/joule/joule", "grant", "issue", "--template", "dev", "--workspace", ws, "--use")
	userSettings := func(extra string) {
		os.WriteFile(filepath.Join(alice.Home, ".gemini", "settings.json"), []byte(`{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "telemetry": {"enabled": false}`+extra+`
}
`), 0o644)
		exec.Command("chown", "-R", alice.Name+":", alice.Home).Run()
	}
	run := func(t *testing.T, file string, extraEnv ...string) (ran bool, text string) {
		t.Helper()
		api.play(call{"run_shell_command", map[string]any{"command": "dd if=/dev/null of=" + file}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		env := append([]string{"GEMINI_API_KEY=test-dummy-key", "GOOGLE_GEMINI_BASE_URL=http://" + ln.Addr().String(),
			"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1", "TMPDIR=" + filepath.Join(alice.Home, "tmp")}, extraEnv...)
		out, _ := alice.Run(ctx, ws, env, "node", js, "--model", "gemini-2.5-flash", "--output-format", "json", "-p", "make the file", "--approval-mode", "yolo")
		_, err := os.Stat(filepath.Join(ws, file))
		for _, r := range api.got() {
			text += r.text()
		}
		if err != nil && !strings.Contains(text, "joule deny") {
			t.Fatalf("the call neither ran nor got joule's deny:\n%s\n%s", text, out)
		}
		return err == nil, text
	}
	denied := func(t *testing.T, file string, extraEnv ...string) {
		t.Helper()
		if ran, text := run(t, file, extraEnv...); ran || !strings.Contains(text, "joule deny (action-not-granted)") {
			t.Fatalf("the system hook did not bind (ran: %v): %s", ran, text)
		}
	}
	t.Run("hooks turned off in the user's settings", func(t *testing.T) {
		userSettings(`,
  "hooksConfig": {"enabled": false}`)
		denied(t, "off.txt")
	})
	t.Run("BeforeTool emptied in the user's and the project's settings", func(t *testing.T) {
		userSettings(`,
  "hooks": {"BeforeTool": []}`)
		os.WriteFile(filepath.Join(ws, ".gemini", "settings.json"), []byte(`{"hooks": {"BeforeTool": []}, "hooksConfig": {"enabled": false}}`), 0o644)
		defer os.Remove(filepath.Join(ws, ".gemini", "settings.json"))
		denied(t, "emptied.txt")
	})
	t.Run("the folder distrusted in the user's trusted folders", func(t *testing.T) {
		userSettings(`,
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": true}}`)
		os.WriteFile(filepath.Join(alice.Home, ".gemini", "trustedFolders.json"), []byte(`{"`+ws+`": "DO_NOT_TRUST"}`), 0o644)
		defer os.Remove(filepath.Join(alice.Home, ".gemini", "trustedFolders.json"))
		denied(t, "distrusted.txt")
	})
	t.Run("the system settings moved by GEMINI_CLI_SYSTEM_SETTINGS_PATH", func(t *testing.T) {
		userSettings("")
		moved := "/etc/joule-gemini-moved/settings.json"
		os.MkdirAll(filepath.Dir(moved), 0o755)
		b, _ := os.ReadFile(geminicli.SystemSettingsPath())
		os.WriteFile(moved, b, 0o644)
		os.Rename(geminicli.SystemSettingsPath(), geminicli.SystemSettingsPath()+".away")
		defer os.Rename(geminicli.SystemSettingsPath()+".away", geminicli.SystemSettingsPath())
		denied(t, "moved.txt", "GEMINI_CLI_SYSTEM_SETTINGS_PATH="+moved)
	})
	t.Run("the known gap: hooksConfig.disabled names joule", func(t *testing.T) {
		userSettings(`,
  "hooksConfig": {"disabled": ["joule"]}`)
		if ran, text := run(t, "disabled.txt"); !ran {
			t.Fatalf("Gemini CLI no longer lets a user's hooksConfig.disabled turn a system hook off (%s): update docs/hosts.md, System mode, and this test", text)
		}
	})
}
