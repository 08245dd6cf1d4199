package qwencode

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

func apply(t *testing.T, s hook.Scope, uninstall bool) {
	t.Helper()
	changes, err := Installer{}.Plan(s, uninstall)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

func findings(s hook.Scope) (ok, pending []string) {
	for _, f := range (Installer{}).Check(s) {
		if f.OK {
			ok = append(ok, f.Text)
		} else {
			pending = append(pending, f.Text)
		}
	}
	return ok, pending
}

// TestInstall writes the wrapped hook and the MCP server beside the user's
// own entries, writes nothing the second time, is found by Check, and is
// removed whole by an uninstall that keeps the user's entries.
func TestInstall(t *testing.T) {
	t.Setenv("QWEN_HOME", "")
	t.Setenv("QWEN_CODE_SYSTEM_SETTINGS_PATH", filepath.Join(t.TempDir(), "none.json"))
	bin := filepath.Join(t.TempDir(), "joule")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	for _, project := range []bool{false, true} {
		home, proj := t.TempDir(), t.TempDir()
		s := hook.Scope{Home: home, Joule: bin}
		if project {
			s.Project = proj
		}
		path := settingsPath(s)
		os.MkdirAll(filepath.Dir(path), 0o755)
		user := `{
  "model": {"name": "qwen3-coder-plus"},
  "hooks": {"PreToolUse": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "my-lint"}]}]},
  "mcpServers": {"mine": {"command": "mine"}}
}`
		os.WriteFile(path, []byte(user), 0o644)
		apply(t, s, false)
		b, _ := os.ReadFile(path)
		var doc struct {
			Model map[string]any `json:"model"`
			Hooks struct {
				PreToolUse []struct {
					Matcher string           `json:"matcher"`
					Hooks   []map[string]any `json:"hooks"`
				}
			} `json:"hooks"`
			MCPServers map[string]map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if doc.Model["name"] != "qwen3-coder-plus" || doc.MCPServers["mine"] == nil || len(doc.Hooks.PreToolUse) != 2 ||
			doc.Hooks.PreToolUse[0].Hooks[0]["command"] != "my-lint" {
			t.Fatalf("the user's entries were not kept:\n%s", b)
		}
		ours := doc.Hooks.PreToolUse[1]
		if ours.Matcher != "*" || ours.Hooks[0]["command"] != Wrapper(s) || ours.Hooks[0]["timeout"] != float64(Timeout) || ours.Hooks[0]["name"] != "joule" {
			t.Fatalf("joule's hook: %+v", ours)
		}
		if m := doc.MCPServers["joule"]; m["command"] != bin || m["args"].([]any)[0] != "mcp" {
			t.Fatalf("joule's MCP server: %v", m)
		}
		again, _ := Installer{}.Plan(s, false)
		for _, c := range again {
			if string(c.Before) != string(c.After) {
				t.Errorf("a second install changes %s", c.Path)
			}
		}
		if ok, pending := findings(s); len(pending) != 0 || !strings.Contains(strings.Join(ok, "\n"), "PreToolUse hook on every tool") {
			t.Fatalf("check after install: ok %q pending %q", ok, pending)
		}
		apply(t, s, true)
		b, _ = os.ReadFile(path)
		if strings.Contains(string(b), "joule") || !strings.Contains(string(b), "my-lint") || !strings.Contains(string(b), `"mine"`) {
			t.Fatalf("after uninstall:\n%s", b)
		}
		if _, pending := findings(s); len(pending) != 1 || !strings.Contains(pending[0], "no joule PreToolUse hook") {
			t.Fatalf("check after uninstall: %q", pending)
		}
	}
}

// TestCheckFindings: what turns joule's hook off is reported, wherever
// Qwen reads it from.
func TestCheckFindings(t *testing.T) {
	t.Setenv("QWEN_HOME", "")
	t.Setenv("QWEN_CODE_TRUSTED_FOLDERS_PATH", "")
	sys := filepath.Join(t.TempDir(), "system.json")
	t.Setenv("QWEN_CODE_SYSTEM_SETTINGS_PATH", sys)
	home, proj := t.TempDir(), t.TempDir()
	s := hook.Scope{Home: home, Project: proj, Joule: "/bin/sh"}
	apply(t, s, false)
	os.MkdirAll(filepath.Join(home, ".qwen"), 0o755)
	user := filepath.Join(home, ".qwen", "settings.json")

	// A bare line an older or hand-made install wrote is joule's, and
	// reported as not the wrapped one.
	bare := hook.Scope{Home: home, Project: t.TempDir(), Joule: "/bin/sh"}
	os.MkdirAll(filepath.Join(bare.Project, ".qwen"), 0o755)
	os.WriteFile(filepath.Join(bare.Project, ".qwen", "settings.json"), []byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/joule-hook qwen-code"}]}]}}`), 0o644)
	if _, pending := findings(bare); len(pending) != 1 || !strings.Contains(pending[0], "not the one this install writes") {
		t.Fatalf("bare line: %q", pending)
	}

	for _, tc := range []struct {
		name, user, system, trust string
		want                      string // a pending containing this, or "" for none
	}{
		{name: "armed"},
		{name: "all hooks off by the user", user: `{"disableAllHooks": true}`, want: user + " sets disableAllHooks: true"},
		{name: "all hooks off by the system", system: `{"disableAllHooks": true}`, want: sys + " sets disableAllHooks: true"},
		{name: "folder trust on, untrusted", user: `{"security":{"folderTrust":{"enabled":true}}}`, want: "is not a trusted folder"},
		{name: "folder trust on, trusted", user: `{"security":{"folderTrust":{"enabled":true}}}`, trust: `{"` + proj + `":"TRUST_FOLDER"}`},
		{name: "folder trust on, refused below a trusted parent", user: `{"security":{"folderTrust":{"enabled":true}}}`,
			trust: `{"` + filepath.Dir(proj) + `":"TRUST_FOLDER","` + proj + `":"DO_NOT_TRUST"}`, want: "is not a trusted folder"},
		{name: "the system turns folder trust off", user: `{"security":{"folderTrust":{"enabled":true}}}`, system: `{"security":{"folderTrust":{"enabled":false}}}`},
		{name: "unreadable user settings", user: `{"hooks":`, want: user},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for p, c := range map[string]string{user: tc.user, sys: tc.system, TrustedFoldersPath(home): tc.trust} {
				os.Remove(p)
				if c != "" {
					os.WriteFile(p, []byte(c), 0o644)
				}
			}
			_, pending := findings(s)
			switch {
			case tc.want == "" && len(pending) != 0:
				t.Fatalf("pending: %q", pending)
			case tc.want != "" && (len(pending) != 1 || !strings.Contains(pending[0], tc.want)):
				t.Fatalf("pending %q, want one with %q", pending, tc.want)
			}
		})
	}
}

// TestTrusted reads trust rules as Qwen Code 0.24's resolveTrustDecision.
func TestTrusted(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "a", "proj")
	os.MkdirAll(proj, 0o755)
	for _, tc := range []struct {
		name  string
		rules map[string]string
		want  bool
	}{
		{"none", nil, false},
		{"folder", map[string]string{proj: "TRUST_FOLDER"}, true},
		{"ancestor", map[string]string{dir: "TRUST_FOLDER"}, true},
		{"parent rule", map[string]string{filepath.Join(dir, "a", "other"): "TRUST_PARENT"}, true},
		{"sibling", map[string]string{filepath.Join(dir, "a", "pro"): "TRUST_FOLDER"}, false},
		{"refused", map[string]string{proj: "DO_NOT_TRUST"}, false},
		{"deepest wins", map[string]string{dir: "TRUST_FOLDER", proj: "DO_NOT_TRUST"}, false},
		{"deepest wins the other way", map[string]string{dir: "DO_NOT_TRUST", proj: "TRUST_FOLDER"}, true},
		{"a tie is refused", map[string]string{filepath.Join(proj, "x"): "TRUST_PARENT", proj: "DO_NOT_TRUST"}, false},
		{"not a level", map[string]string{proj: "YES"}, false},
	} {
		if got := trusted(tc.rules, proj); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUserDir follows $QWEN_HOME as Qwen resolves it.
func TestUserDir(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct{ env, want string }{
		{"", "/home/u/.qwen"},
		{"/srv/qwen", "/srv/qwen"},
		{"~/cfg/qwen", "/home/u/cfg/qwen"},
		{"rel", filepath.Join(wd, "rel")},
	} {
		t.Setenv("QWEN_HOME", tc.env)
		if got := UserDir("/home/u"); got != tc.want {
			t.Errorf("QWEN_HOME=%q: %s, want %s", tc.env, got, tc.want)
		}
	}
}

// TestWrapper runs the command joule install writes with bash, as Qwen
// Code does, in front of a joule that fails in each way Qwen would read
// as "run the tool": each becomes the wrapper's explicit deny, and a
// real answer passes unchanged.
func TestWrapper(t *testing.T) {
	sh, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash: Qwen Code runs its hooks with bash -c")
	}
	dir := t.TempDir()
	answer := string(answer("allow", "").Stdout)
	for _, tc := range []struct{ name, script, want string }{
		{"answers", "cat >/dev/null; printf '%s' '" + answer + "'", strings.TrimSuffix(answer, "\n")},
		{"exit 1", "echo boom >&2; exit 1", string(Deny(FailedReason))},
		{"garbage", "echo '{not json'", string(Deny(FailedReason))},
		{"silent", "exit 0", string(Deny(FailedReason))},
		{"another host's form", `echo '{"decision":"allow"}'`, string(Deny(FailedReason))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"), "joule")
			os.MkdirAll(filepath.Dir(bin), 0o755)
			os.WriteFile(bin, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755)
			cmd := exec.Command(sh, "-c", Wrapper(hook.Scope{Joule: bin}))
			cmd.Stdin = strings.NewReader(`{"hook_event_name":"PreToolUse"}`)
			out, err := cmd.Output()
			if err != nil || strings.TrimSpace(string(out)) != tc.want {
				t.Fatalf("%v: %q, want %q", err, out, tc.want)
			}
		})
	}
}
