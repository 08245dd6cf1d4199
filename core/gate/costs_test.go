package gate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// testHosts stands in for the host registry (plugins/hosts), which the
// gate may not import: part of what cmd/joule hands the gate as data.
var testHosts = ConfigPaths{
	Project: []string{".claude/settings.json", ".claude/settings.local.json", ".claude/hooks", ".mcp.json",
		".cursor/hooks.json", ".gemini", ".codex", ".clinerules", ".opencode", "opencode.json", "opencode.jsonc"},
	User: []string{".claude/settings.json", ".claude.json", ".codex", ".gemini/settings.json", "Documents/Cline/Hooks"},
}

func TestProtectedPaths(t *testing.T) {
	got := ProtectedPaths("/jh", "/home/u", []string{"/ws", "/ws2"}, testHosts)
	if got[0] != "/jh" {
		t.Errorf("first is %q, want joule's home /jh", got[0])
	}
	want := []string{
		"/ws/.joule", "/ws/.git/config", "/ws/.git/hooks", "/ws2/.git/config", // joule's and git's, per root
		"/ws/.claude/settings.json", "/ws2/opencode.json", // hosts' per root
		"/home/u/.claude.json", "/home/u/Documents/Cline/Hooks", // hosts' per user
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("ProtectedPaths lacks %s; got %q", w, got)
		}
	}
	for _, p := range got {
		if !filepath.IsAbs(p) {
			t.Errorf("%q is not absolute", p)
		}
	}
	if n := len(got); n != 1+2*(7+len(testHosts.Project))+len(testHosts.User) {
		t.Errorf("%d paths: %q", n, got)
	}
	// Without a home, no per-user path; without hosts, joule's and git's only.
	noHome := ProtectedPaths("/jh", "", []string{"/ws"}, testHosts)
	if slices.Contains(noHome, "/.claude.json") || slices.Contains(noHome, ".claude.json") || len(noHome) != 1+7+len(testHosts.Project) {
		t.Errorf("no home: %q", noHome)
	}
	if bare := ProtectedPaths("/jh", "/home/u", []string{"/ws"}, ConfigPaths{}); len(bare) != 8 || slices.Contains(bare, "/ws/.mcp.json") {
		t.Errorf("no hosts: %q", bare)
	}
}

// TestPolicyProtectsHosts: the gate's Hosts reach the policy, and the
// policy cache tells gates with different hosts apart.
func TestPolicyProtectsHosts(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	with := protectedFor(home, ws, testHosts)
	without := protectedFor(home, ws, ConfigPaths{}) // same home and roots: within the cache's lifetime
	mcp := filepath.Join(ws, ".mcp.json")
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		mcp = filepath.Join(r, ".mcp.json")
	}
	if !slices.Contains(with, mcp) {
		t.Errorf("with hosts, %s is not protected: %q", mcp, with)
	}
	if slices.Contains(without, mcp) {
		t.Errorf("without hosts, %s is protected: %q", mcp, without)
	}
}

func protectedFor(home, ws string, hosts ConfigPaths) []string {
	_, _, p := resolvedPaths(home, "/jh", []string{ws}, hosts, testNow)
	return p
}

// TestRootLevelHostFiles: a host file at the workspace root without a
// leading dot (OpenCode's opencode.json) is protected by its bare name and
// by globs that can expand onto it, and only by those: *.go cannot, and *
// can only once the file exists.
func TestRootLevelHostFiles(t *testing.T) {
	f := newFixture(t, append([]string{"Write", "Bash(sed:*)", "Bash(touch:*)", "Bash(rm:*)"}, testAllow...), nil, testDeny)
	decide := func(line string) Verdict {
		return Decide(f.event("Bash", map[string]any{"command": line}), f.policy)
	}
	for _, line := range []string{"grep -n func *.go", "cat *", "echo src/*", "rm -f opencode.js"} {
		if v := decide(line); v.Decision != Allow {
			t.Errorf("%s, no opencode.json: %s %s (%s), want allow", line, v.Decision, v.Code, v.Reason)
		}
	}
	for _, line := range []string{"sed -i s/a/b/ opencode.json", "rm opencode.jsonc", "touch .opencode/plugins/*.ts", "echo '{}' > opencode.json"} {
		if v := decide(line); v.Decision != Deny || v.Code != CodeSelfTamper {
			t.Errorf("%s: %s %s (%s), want deny self-tamper", line, v.Decision, v.Code, v.Reason)
		}
	}
	if err := os.WriteFile(filepath.Join(f.ws, "opencode.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"cat *", "rm *.json", "rm open*", "rm ?pencode.js*"} {
		if v := decide(line); v.Decision != Deny || v.Code != CodeSelfTamper {
			t.Errorf("%s, opencode.json there: %s %s (%s), want deny self-tamper", line, v.Decision, v.Code, v.Reason)
		}
	}
	if v := decide("grep -n func *.go"); v.Decision != Allow {
		t.Errorf("*.go beside opencode.json: %s %s (%s), want allow", v.Decision, v.Code, v.Reason)
	}
}

func TestGlobReaches(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "opencode.json"), nil, 0o644)
	os.Mkdir(filepath.Join(dir, ".claude"), 0o755)
	for _, tt := range []struct {
		pattern, target string
		dotglob, want   bool
	}{
		{dir + "/*.go", dir + "/opencode.json", false, false},
		{dir + "/*.json", dir + "/opencode.json", false, true},
		{dir + "/*.json", dir + "/opencode.jsonc", false, false},
		{dir + "/*", dir + "/missing.json", false, false},          // a glob finds only what exists
		{dir + "/*", dir + "/.claude/settings.json", false, false}, // * skips dotfiles
		{dir + "/*", dir + "/.claude/settings.json", true, true},
		{dir + "/.c*/settings.json", dir + "/.claude/settings.json", false, true},
		{dir + "/.c*/x", dir + "/.claude/settings.json", false, false},
		{dir + "/.claude/*", dir + "/.claude", false, true},
		{dir + "/.opencode/p*/*.ts", dir + "/.opencode", false, true}, // as written, inside it
		{dir + "/?pencode.json", dir + "/opencode.json", false, true},
	} {
		if got := globReaches(tt.pattern, tt.target, tt.dotglob); got != tt.want {
			t.Errorf("globReaches(%s, %s, dotglob %v) = %v, want %v", tt.pattern, tt.target, tt.dotglob, got, tt.want)
		}
	}
}
