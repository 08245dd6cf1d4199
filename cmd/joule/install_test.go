package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/plugins/hosts"
)

// TestInstallEveryHost installs into a project that already has the user's
// own configuration, for every host: the user's entries survive, a second
// install writes nothing, a dry run writes nothing, and uninstall takes
// joule's entries out again, leaving the user's.
func TestInstallEveryHost(t *testing.T) {
	env, ws := initHome(t)
	// The user's own configuration, one file per host.
	own := map[string]string{
		".claude/settings.json": `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"my-lint"}]}]},"model":"opus"}`,
		".mcp.json":             `{"mcpServers":{"mine":{"command":"my-mcp"}}}`,
		".cursor/hooks.json":    `{"version":1,"hooks":{"beforeShellExecution":[{"command":"my-lint"}]}}`,
		".windsurf/hooks.json":  `{"hooks":{"pre_run_command":[{"command":"my-lint"}]}}`,
		".gemini/settings.json": `{"theme":"dark","hooks":{"BeforeTool":[{"matcher":"write_file","hooks":[{"type":"command","command":"my-lint"}]}]}}`,
		".codex/hooks.json":     `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"my-lint"}]}]}}`,
		".agents/hooks.json":    `{"hooks":{"PostToolUse":[{"hooks":[{"type":"command","command":"my-lint"}]}]}}`,
		"opencode.json":         `{"$schema":"https://opencode.ai/config.json","mcp":{"mine":{"type":"local","command":["my-mcp"]}}}`,
	}
	for p, c := range own {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755)
		os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644)
	}
	snapshot := func() map[string]string {
		m := map[string]string{}
		filepath.Walk(ws, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && !strings.Contains(p, ".bak") {
				b, _ := os.ReadFile(p)
				m[p] = string(b)
			}
			return nil
		})
		return m
	}
	for _, host := range hosts.Names(hosts.Installable) {
		t.Run(host, func(t *testing.T) {
			start := snapshot()
			r := jouleIn(t, ws, nil, env, "install", host, "--project", "--dry-run")
			if r.code != 0 || !strings.Contains(r.stdout, "would write") {
				t.Fatalf("dry run: %+v", r)
			}
			for _, l := range strings.Split(r.stdout, "\n") {
				if p, ok := strings.CutPrefix(l, "unchanged "); ok {
					if _, err := os.Stat(p); err != nil {
						t.Errorf("--dry-run says %q for a file that does not exist", l)
					}
				}
			}
			if got := snapshot(); !equalMaps(got, start) {
				t.Fatal("--dry-run wrote files")
			}
			r = jouleIn(t, ws, nil, env, "install", host, "--project")
			if r.code != 0 || !strings.Contains(r.stdout, "wrote ") || !strings.Contains(r.stdout, "ok   ") {
				t.Fatalf("install: %+v", r)
			}
			installed := snapshot()
			for p, c := range installed {
				if strings.Contains(c, "my-lint") != strings.Contains(start[p], "my-lint") || strings.Contains(c, "my-mcp") != strings.Contains(start[p], "my-mcp") {
					t.Errorf("%s lost the user's entries:\n%s", p, c)
				}
			}
			if r := jouleIn(t, ws, nil, env, "install", host, "--project"); strings.Contains(r.stdout, "wrote ") || r.code != 0 {
				t.Fatalf("second install changed files: %+v", r)
			}
			// A file of the user's that the install changed must have been
			// backed up first; a file the install created needs none.
			changedOwn := false
			for p, c := range start {
				if installed[p] != c {
					changedOwn = true
				}
			}
			// Backups go to $JOULE_HOME/backups, never into the project,
			// where they would show in git status.
			backups, _ := filepath.Glob(filepath.Join(filepath.Dir(ws), "home", "backups", "*.bak"))
			if changedOwn && len(backups) == 0 {
				t.Errorf("changed the user's files without a backup in $JOULE_HOME/backups")
			}
			inProject, _ := filepath.Glob(filepath.Join(ws, "*", "*.bak"))
			atRoot, _ := filepath.Glob(filepath.Join(ws, "*.bak"))
			if len(inProject)+len(atRoot) > 0 {
				t.Errorf("backups left in the project: %v %v", inProject, atRoot)
			}
			if r := jouleIn(t, ws, nil, env, "install", host, "--project", "--uninstall"); r.code != 0 {
				t.Fatalf("uninstall: %+v", r)
			}
			after := snapshot()
			for p, c := range after {
				if strings.Contains(c, jouleBin) {
					t.Errorf("%s still names joule after uninstall:\n%s", p, c)
				}
				if strings.Contains(start[p], "my-lint") && !strings.Contains(c, "my-lint") {
					t.Errorf("%s lost the user's entry on uninstall", p)
				}
			}
		})
	}
	// Bad usage and a file joule must not overwrite.
	if r := jouleIn(t, ws, nil, env, "install", "claude-code"); r.code != 2 {
		t.Errorf("no scope: %+v", r)
	}
	if r := jouleIn(t, ws, nil, env, "install", "emacs", "--user"); r.code != 2 {
		t.Errorf("unknown host: %+v", r)
	}
	os.WriteFile(filepath.Join(ws, ".cursor", "hooks.json"), []byte("{not json"), 0o644)
	if r := jouleIn(t, ws, nil, env, "install", "cursor", "--project"); r.code != 1 || !strings.Contains(r.stderr, "not a JSON object") {
		t.Errorf("corrupt file: %+v", r)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestInstallUserScope installs every host into a fresh user home and takes
// it out again: the user's files end up as joule found them, byte for byte
// (empty ones gone), apart from backups.
func TestInstallUserScope(t *testing.T) {
	env, ws := initHome(t)
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"numStartups":3,"projects":{}}`), 0o600)
	for _, host := range hosts.Names(hosts.Installable) {
		r := jouleIn(t, ws, nil, append(env, "CODEX_HOME="+filepath.Join(home, ".codex")), "install", host, "--user")
		if r.code != 0 || !strings.Contains(r.stdout, "wrote "+home) {
			t.Errorf("%s --user: %+v", host, r)
			continue
		}
		if r := jouleIn(t, ws, nil, append(env, "CODEX_HOME="+filepath.Join(home, ".codex")), "install", host, "--user", "--uninstall"); r.code != 0 {
			t.Errorf("%s --user --uninstall: %+v", host, r)
		}
	}
	filepath.Walk(home, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasSuffix(p, ".bak") {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), jouleBin) {
				t.Errorf("%s still names joule:\n%s", p, b)
			}
		}
		return nil
	})
	b, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	if st, err := os.Stat(filepath.Join(home, ".claude.json")); err != nil || string(b) != `{"numStartups":3,"projects":{}}` || st.Mode().Perm() != 0o600 {
		t.Errorf("~/.claude.json is not given back as it was: %s (%v)", b, st.Mode())
	}
}
