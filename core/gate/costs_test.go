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

// TestProtectedAbs: a moved configuration directory (Abs) is protected as
// given, unless it holds the home or a workspace root (a variable set to
// the home would freeze the workspace).
func TestProtectedAbs(t *testing.T) {
	for _, tt := range []struct {
		abs  string
		want bool
	}{
		{"/srv/codex", true},
		{"/srv/codex/", true}, // cleaned
		{"/home/u/.config/x/opencode", true},
		{"relative/dir", false},
		{"/home/u", false},
		{"/home", false},
		{"/", false},
		{"/ws", false},
		{"/ws/tools/codex-home", true}, // inside a root, not above it
	} {
		got := ProtectedPaths("/jh", "/home/u", []string{"/ws"}, ConfigPaths{Abs: []string{tt.abs}})
		clean := filepath.Clean(tt.abs)
		if slices.Contains(got, clean) != tt.want {
			t.Errorf("Abs %q: protected %v, want %v (%q)", tt.abs, !tt.want, tt.want, got)
		}
	}
}

// TestAncestorPaths: the Walk names in each directory above a root, up to
// the home (or /), where they exist.
func TestAncestorPaths(t *testing.T) {
	have := map[string]bool{
		"/home/u/src/.codex": true, "/home/u/.env": true, "/home/.env": true, "/home/u/src/proj/.codex": true,
		"/srv/.env": true, "/.env": true, "/home/u/src/opencode.json": true,
	}
	exists := func(p string) bool { return have[p] }
	walk := []string{".codex", ".env", "opencode.json"}
	got := AncestorPaths("/home/u", []string{"/home/u/src/proj", "/srv/ws"}, walk, exists)
	want := []string{"/home/u/src/.codex", "/home/u/src/opencode.json", "/home/u/.env", "/srv/.env", "/.env"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// Not the root's own (ProtectedPaths has those), nor above the home.
	for _, p := range got {
		if p == "/home/u/src/proj/.codex" || p == "/home/.env" {
			t.Errorf("%s is among them", p)
		}
	}
	if got := AncestorPaths("/home/u", []string{"/home/u"}, walk, exists); !slices.Equal(got, []string{"/home/.env", "/.env"}) {
		t.Errorf("root at the home: %q", got)
	}
	if got := AncestorPaths("/home/u", []string{"/ws"}, nil, exists); got != nil {
		t.Errorf("no walk: %q", got)
	}
}

// TestPolicyProtectsAncestors: the gate's policy holds the Walk paths that
// exist above the root, and a write to one is a tamper.
func TestPolicyProtectsAncestors(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(dir, ".env"), nil, 0o644)
	got := protectedFor(filepath.Join(dir, "home"), ws, ConfigPaths{Walk: []string{".env", ".codex"}})
	if !slices.Contains(got, filepath.Join(dir, ".env")) {
		t.Errorf("%s/.env is not protected: %q", dir, got)
	}
	if slices.Contains(got, filepath.Join(dir, ".codex")) {
		t.Errorf("the absent %s/.codex is protected", dir)
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
		{dir + "/**/*.go", dir + "/opencode.json", false, false}, // globstar: any depth, the same last name
		{dir + "/**/*.json", dir + "/opencode.json", false, true},
		{dir + "/**", dir + "/opencode.json", false, true},
		{dir + "/**/settings.json", dir + "/.claude/settings.json", false, false}, // ** skips dot directories
		{dir + "/**/settings.json", dir + "/.claude/settings.json", true, true},
		{dir + "/**/.claude/s*", dir + "/.claude/settings.json", false, false}, // absent
		{dir + "/**/.c*", dir + "/.claude/settings.json", false, true},
		{dir + "/**/.claude/*", dir + "/.claude", false, true},
		{dir + "/**/x/*.json", dir + "/opencode.json", false, false}, // nothing below a file
		{dir + "/*/x", dir + "/opencode.json", false, false},
		{dir + "/a**b", dir + "/opencode.json", false, false},
	} {
		if got := globReaches(tt.pattern, tt.target, tt.dotglob); got != tt.want {
			t.Errorf("globReaches(%s, %s, dotglob %v) = %v, want %v", tt.pattern, tt.target, tt.dotglob, got, tt.want)
		}
	}
}
