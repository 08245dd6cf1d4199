package codex

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// TestCheckTrust walks the armed check through Codex's two trusts: a
// fresh install lacks both, --trust records both (and the check says
// so), and a hook line from before the fail-closed wrapper is flagged.
func TestCheckTrust(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CODEX_HOME", filepath.Join(dir, "codexhome"))
	os.MkdirAll(filepath.Join(dir, "codexhome"), 0o755)
	proj := filepath.Join(dir, "p")
	os.MkdirAll(proj, 0o755)
	joule := filepath.Join(dir, "joule")
	os.WriteFile(joule, []byte("#!/bin/sh\n"), 0o755)
	s := hook.Scope{Project: proj, Home: dir, Joule: joule, Contain: hook.NoContain}
	todos := func() []string {
		var out []string
		for _, f := range (Installer{}).Check(s) {
			if !f.OK {
				out = append(out, f.Text)
			}
		}
		return out
	}
	apply := func(s hook.Scope, uninstall bool) {
		t.Helper()
		changes, err := Installer{}.Plan(s, uninstall)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	apply(s, false)
	got := strings.Join(todos(), "\n")
	if !strings.Contains(got, "until the project is trusted") || strings.Count(got, "has not trusted joule's") != 2 {
		t.Fatalf("a fresh install should lack both trusts:\n%s", got)
	}
	s.Trust = true
	apply(s, false)
	if got := todos(); len(got) != 0 {
		t.Fatalf("after --trust: %q", got)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "codexhome", "config.toml"))
	if !strings.Contains(string(cfg), `[projects."`+proj+`"]`) || strings.Count(string(cfg), "trusted_hash") != 2 {
		t.Fatalf("config.toml:\n%s", cfg)
	}
	// Switching containment on changes the command, so the hash: the old
	// trust is stale until --trust runs again.
	s.Trust, s.Contain = false, hook.Contained
	apply(s, false)
	if got := strings.Join(todos(), "\n"); strings.Count(got, "for an older command") != 2 {
		t.Fatalf("a changed command should make the trust stale:\n%s", got)
	}
	s.Trust = true
	apply(s, false)
	if got := todos(); len(got) != 0 {
		t.Fatalf("after a contained --trust: %q", got)
	}
	// A handler written before the wrapper is found, replaced on install,
	// and flagged until then.
	old := `{"hooks":{"PreToolUse":[{"matcher":".*","hooks":[{"type":"command","command":"` + joule + ` hook codex","timeout":30}]}]}}`
	os.WriteFile(filepath.Join(proj, ".codex", "hooks.json"), []byte(old), 0o644)
	if got := strings.Join(todos(), "\n"); !strings.Contains(got, "without the fail-closed wrapper") {
		t.Fatalf("an unwrapped hook is not flagged:\n%s", got)
	}
	apply(s, false)
	b, _ := os.ReadFile(filepath.Join(proj, ".codex", "hooks.json"))
	if strings.Count(string(b), "hook codex") != 2 || !strings.Contains(string(b), "/bin/sh -c") {
		t.Fatalf("reinstall did not replace the old line:\n%s", b)
	}
	// Uninstall takes joule's trust block out and leaves the file valid.
	apply(s, true)
	cfg, _ = os.ReadFile(filepath.Join(dir, "codexhome", "config.toml"))
	if strings.Contains(string(cfg), "trusted_hash") || strings.Contains(string(cfg), proj) {
		t.Fatalf("uninstall left trust behind:\n%s", cfg)
	}
}

// TestHungJouleIsABlock runs the line an install writes, with no joule-hook
// beside joule (so joule hook itself runs), around a joule that hangs:
// Codex runs the tool when a hook outlives its timeout, so the line must
// give up first and answer Codex's block (exit 2 with a reason).
func TestHungJouleIsABlock(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no timeout(1) here")
	}
	dir := t.TempDir()
	joule := filepath.Join(dir, "joule")
	os.WriteFile(joule, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755)
	for _, s := range []hook.Scope{{Joule: joule}, {Joule: joule, Contain: hook.Contained}, {Joule: joule, Contain: hook.NoContain}} {
		line := Command(s)
		bound := " -k 2 " + limit + " "
		if !strings.Contains(line, bound) || !guard.Guarded(Host, line) {
			t.Fatalf("the line does not bound joule below Codex's %d s timeout:\n%s", timeout, line)
		}
		// The same line with a one-second bound, to keep the test short.
		cmd := exec.Command("/bin/sh", "-c", strings.Replace(line, bound, " -k 2 1 ", 1))
		cmd.Stdin = strings.NewReader(`{"hook_event_name":"PreToolUse"}`)
		start := time.Now()
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "joule deny (hook-failed)") {
			t.Errorf("contain=%q: a hung joule gave (%d) %q, not Codex's block", s.Contain, code, out)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the line took %v to give up", d)
		}
	}
}
