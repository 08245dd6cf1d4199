package cline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// TestScriptFailsClosed runs the installed hook script with a joule that
// fails in each way Cline would take as no objection, and one that
// answers: the script must print a deny for the first and pass the answer
// through, with the JOULE_HOME of the install, for the second.
func TestScriptFailsClosed(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CLINE_MCP_SETTINGS_PATH", filepath.Join(dir, "mcp.json"))
	home := filepath.Join(dir, "joule's home")
	t.Setenv("JOULE_HOME", home)
	n := 0
	fake := func(body string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("joule-%d", n))
		os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		return p
	}
	for _, tt := range []struct{ name, joule, want string }{
		{"missing", filepath.Join(dir, "nonexistent"), `{"cancel":true,"errorMessage":"joule gave no decision (exit status 127); the task is stopped"}`},
		{"crash", fake(`cat >/dev/null; kill -SEGV $$`), `{"cancel":true,"errorMessage":"joule gave no decision (exit status 139); the task is stopped"}`},
		{"empty", fake(`exit 0`), `"cancel":true`},
		{"garbage", fake(`echo nope`), `"cancel":true`},
		{"answers", fake(`cat >/dev/null; echo '{"cancel":false}' ; echo "$JOULE_HOME" >&2`), `{"cancel":false}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proj := t.TempDir()
			s := hook.Scope{Project: proj, Home: dir, Joule: tt.joule, JouleHome: home}
			changes, err := Installer{}.Plan(s, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(hookPath(s))
			cmd.Env = []string{"PATH=/usr/bin:/bin", "JOULE_HOME=/somewhere/else"}
			cmd.Stdin = strings.NewReader(`{"hookName":"tool_call"}`)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			if !strings.Contains(string(out), tt.want) {
				t.Fatalf("the script printed %q, want %q", out, tt.want)
			}
			if tt.name == "answers" && strings.TrimSpace(stderr.String()) != home {
				t.Fatalf("joule ran with JOULE_HOME %q, not the install's %q", stderr.String(), home)
			}
			if f := (Installer{}).Check(s); !f[1].OK {
				t.Fatalf("check after install: %+v", f)
			}
		})
	}
}

// TestScriptTimesOut: a joule that hangs is killed by the script's
// timeout, and the script answers a deny, well before Cline's own timeout
// (past which Cline runs the tool).
func TestScriptTimesOut(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("timeout(1) (coreutils) is missing: the script would run joule unbounded")
		}
		t.Skip("no timeout(1) here: the script runs joule unbounded")
	}
	old := scriptLimit
	scriptLimit = "1"
	t.Cleanup(func() { scriptLimit = old })
	dir := t.TempDir()
	t.Setenv("JOULE_HOME", filepath.Join(dir, "home"))
	hang := filepath.Join(dir, "joule")
	os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755)
	s := hook.Scope{Project: t.TempDir(), Home: dir, Joule: hang}
	changes, err := Installer{}.Plan(s, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hookPath(s))
	cmd.Stdin = strings.NewReader(`{"hookName":"tool_call"}`)
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `{"cancel":true,"errorMessage":"joule gave no decision (exit status 124`) {
		t.Fatalf("the script printed %q", out)
	}
	if took > 10*time.Second {
		t.Fatalf("the script answered after %v", took)
	}
}

// TestInstallMCP: joule's server goes into Cline's MCP settings beside the
// user's own, with the install's JOULE_HOME; the check reports it, a
// disabled or foreign entry, and its absence; uninstall removes only it.
func TestInstallMCP(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"CLINE_MCP_SETTINGS_PATH", "CLINE_DATA_DIR", "CLINE_DIR"} {
		t.Setenv(k, "")
	}
	home := filepath.Join(dir, "joule home")
	t.Setenv("JOULE_HOME", home)
	settings := filepath.Join(dir, ".cline", "data", "settings", "cline_mcp_settings.json")
	if got := MCPSettingsPath(dir); got != settings {
		t.Fatalf("MCPSettingsPath = %s", got)
	}
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"mcpServers":{"mine":{"command":"mine-server","env":{"TOKEN":"x"}}}}`), 0o600)
	joule := filepath.Join(dir, "joule")
	os.WriteFile(joule, []byte("#!/bin/sh\n"), 0o755)
	s := hook.Scope{Project: t.TempDir(), Home: dir, Joule: joule}
	apply := func(uninstall bool) {
		t.Helper()
		changes, err := Installer{}.Plan(s, uninstall)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	finding := func() hook.Finding {
		t.Helper()
		for _, f := range (Installer{}).Check(s) {
			if strings.Contains(f.Text, "MCP server") {
				return f
			}
		}
		t.Fatal("no MCP finding")
		return hook.Finding{}
	}
	if f := finding(); f.OK || !strings.Contains(f.Text, "is not in "+settings) {
		t.Fatalf("before install: %+v", f)
	}
	apply(false)
	var doc struct {
		MCPServers map[string]struct {
			Command  string            `json:"command"`
			Args     []string          `json:"args"`
			Env      map[string]string `json:"env"`
			Disabled bool              `json:"disabled"`
		} `json:"mcpServers"`
	}
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	j := doc.MCPServers["joule"]
	if j.Command != joule || strings.Join(j.Args, " ") != "mcp" || j.Env["JOULE_HOME"] != home {
		t.Fatalf("joule's entry: %+v", j)
	}
	if doc.MCPServers["mine"].Env["TOKEN"] != "x" {
		t.Fatalf("the user's server was changed: %s", b)
	}
	if st, _ := os.Stat(settings); st.Mode().Perm() != 0o600 {
		t.Fatalf("settings mode %v", st.Mode())
	}
	if f := finding(); !f.OK {
		t.Fatalf("after install: %+v", f)
	}
	t.Setenv("JOULE_HOME", filepath.Join(dir, "another"))
	if f := finding(); f.OK || !strings.Contains(f.Text, "not the one this install writes") {
		t.Fatalf("another JOULE_HOME: %+v", f)
	}
	t.Setenv("JOULE_HOME", home)
	os.WriteFile(settings, bytes.Replace(b, []byte(`"mcp"`), []byte(`"mcp"],"disabled":true,"x":[`), 1), 0o600)
	if f := finding(); f.OK || !strings.Contains(f.Text, "disabled") {
		t.Fatalf("disabled: %+v", f)
	}
	apply(true)
	b, _ = os.ReadFile(settings)
	if strings.Contains(string(b), "joule") || !strings.Contains(string(b), "mine-server") {
		t.Fatalf("after uninstall: %s", b)
	}
	t.Setenv("CLINE_DIR", filepath.Join(dir, "cline-dir"))
	if got := MCPSettingsPath(dir); got != filepath.Join(dir, "cline-dir", "data", "settings", "cline_mcp_settings.json") {
		t.Fatalf("with CLINE_DIR: %s", got)
	}
}
