package neovim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

func TestInstall(t *testing.T) {
	home := t.TempDir()
	s := hook.Scope{Home: home, Joule: `/opt/my "tools"/joule`}
	changes, err := Installer{}.Plan(s, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ModulePath(s))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`M.command = "/opt/my \"tools\"/joule"`, `commands = { default = { M.command, "acp" } }`, `M.avante = { command = M.command, args = { "acp" }`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("module lacks %q:\n%s", want, b)
		}
	}
	if f := (Installer{}).Check(s); !f[1].OK {
		t.Errorf("check: %s", f[1].Text)
	}
	// A file of the user's own is never overwritten.
	other := hook.Scope{Home: t.TempDir(), Joule: s.Joule}
	os.MkdirAll(filepath.Dir(ModulePath(other)), 0o755)
	os.WriteFile(ModulePath(other), []byte("return {}\n"), 0o644)
	if _, err := (Installer{}).Plan(other, false); err == nil {
		t.Error("planned over the user's own joule_acp.lua")
	}
	changes, _ = Installer{}.Plan(s, true)
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ModulePath(s)); !os.IsNotExist(err) {
		t.Error("uninstall left the module")
	}
}
