package hosts

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
)

// discovered are files each host loads as configuration or runs, as its
// source reads them (the citations are beside each rule in
// plugins/<host>/host.go): WS/ is a workspace root, UP/ the directory
// above it, HOME/ the home directory. Each must fall in the protected set
// with no environment variable set (the moved places have TestEnvMoved).
var discovered = map[string][]string{
	"claude-code": {
		"WS/.claude/settings.json", "WS/.claude/settings.local.json", "WS/.claude/hooks/pre.sh",
		"WS/.claude/skills/deploy/SKILL.md", "WS/.claude/skills/deploy/.claude-plugin/plugin.json",
		"WS/.claude/agents/reviewer.md", "WS/.claude/commands/ship.md", "WS/.claude/workflows/nightly.js",
		"WS/.claude-plugin/marketplace.json", "WS/.mcp.json",
		"UP/.claude/skills/x/SKILL.md", "UP/.claude/agents/a.md", "UP/.claude/commands/c.md", "UP/.claude/workflows/w.js",
		"UP/.claude/settings.local.json",
		"HOME/.claude/settings.json", "HOME/.claude/hooks/h.sh", "HOME/.claude/skills/s/SKILL.md",
		"HOME/.claude/agents/a.md", "HOME/.claude/commands/c.md", "HOME/.claude/workflows/w.js",
		"HOME/.claude/plugins/cache/m/p/hooks/hooks.json", "HOME/.claude/shell-snapshots/snapshot-bash-1.sh",
		"HOME/.claude/session-env/s1/hook-0.sh", "HOME/.claude/jobs/j1/state.json", "HOME/.claude/daemon/x",
		"HOME/.claude/daemon.json", "HOME/.claude/remote-settings.json", "HOME/.claude.json",
	},
	"codex": {
		"WS/.codex/config.toml", "WS/.codex/hooks.json", "WS/.codex/rules/default.rules", "WS/.codex/skills/s/SKILL.md",
		"WS/.agents/skills/s/SKILL.md", "WS/.agents/skills/s/agents/openai.yaml", "WS/.agents/plugins/marketplace.json",
		"UP/.codex/config.toml", "UP/.codex/hooks.json", "UP/.agents/skills/s/SKILL.md",
		"HOME/.codex/config.toml", "HOME/.codex/hooks.json", "HOME/.codex/.env", "HOME/.codex/rules/default.rules",
		"HOME/.agents/skills/s/SKILL.md", "HOME/.agents/plugins/marketplace.json",
	},
	"gemini-cli": {
		"WS/.gemini/settings.json", "WS/.gemini/commands/c.toml", "WS/.gemini/skills/s/SKILL.md",
		"WS/.gemini/agents/a.md", "WS/.gemini/policies/p.toml", "WS/.gemini/.env", "WS/.gemini/system.md",
		"WS/.gemini/extensions/e/gemini-extension.json", "WS/.agents/skills/s/SKILL.md", "WS/.env",
		"UP/.gemini/.env", "UP/.env",
		"HOME/.gemini/settings.json", "HOME/.gemini/extensions/e/hooks/hooks.json",
		"HOME/.gemini/extensions/extension-enablement.json", "HOME/.gemini/commands/c.toml",
		"HOME/.gemini/skills/s/SKILL.md", "HOME/.gemini/agents/a.md", "HOME/.gemini/policies/p.toml",
		"HOME/.gemini/.env", "HOME/.gemini/trustedFolders.json", "HOME/.gemini/acknowledgments/agents.json",
		"HOME/.gemini/policy_integrity.json", "HOME/.agents/skills/s/SKILL.md", "HOME/.env",
	},
	"qwen-code": {
		"WS/.qwen/settings.json", "WS/.qwen/commands/c.toml", "WS/.qwen/skills/s/SKILL.md", "WS/.qwen/agents/a.md",
		"WS/.qwen/workflows/w.js", "WS/.qwen/extensions/e/qwen-extension.json", "WS/.qwen/.env",
		"WS/.agents/skills/s/SKILL.md", "UP/.qwen/.env", "UP/.env",
		"HOME/.qwen/settings.json", "HOME/.qwen/trustedFolders.json", "HOME/.qwen/mcpApprovals.json",
		"HOME/.qwen/extensions/e/qwen-extension.json", "HOME/.qwen/extension-store/state.json",
		"HOME/.qwen/commands/c.toml", "HOME/.qwen/skills/s/SKILL.md", "HOME/.qwen/agents/a.md",
		"HOME/.qwen/workflows/w.js", "HOME/.qwen/bin/rg", "HOME/.qwen/.env", "HOME/.agents/skills/s/SKILL.md", "HOME/.env",
	},
	"opencode": {
		"WS/opencode.json", "WS/opencode.jsonc", "WS/.opencode/opencode.json", "WS/.opencode/plugin/p.ts",
		"WS/.opencode/plugins/p.js", "WS/.opencode/tool/t.ts", "WS/.opencode/command/c.md", "WS/.opencode/agent/a.md",
		"WS/.opencode/mode/m.md", "WS/.opencode/package.json", "WS/.opencode/node_modules/dep/index.js",
		"UP/opencode.json", "UP/opencode.jsonc", "UP/.opencode/plugin/p.ts",
		"HOME/.config/opencode/opencode.json", "HOME/.config/opencode/config.json", "HOME/.config/opencode/plugin/p.ts",
		"HOME/.opencode/plugins/p.ts",
	},
	"cline": {
		"WS/.clinerules/hooks/PreToolUse", "WS/.clinerules/workflows/w.md", "WS/.cline/hooks/PreToolUse",
		"WS/.cline/plugins/p/index.ts", "HOME/.cline/hooks/PreToolUse", "HOME/.cline/plugins/p.js",
		"HOME/.cline/data/settings/cline_mcp_settings.json", "HOME/.cline/data/settings/global-settings.json",
		"HOME/.cline/data/settings/providers.json", "HOME/Documents/Cline/Hooks/PreToolUse",
		"HOME/Documents/Cline/Plugins/p.ts",
	},
	"cursor": {
		"WS/.cursor/hooks.json", "WS/.cursor/hooks/h.sh", "WS/.cursor/mcp.json", "WS/.cursor/cli.json",
		"WS/.cursor/environment.json", "HOME/.cursor/hooks.json", "HOME/.cursor/mcp.json",
		"HOME/.cursor/cli-config.json", "HOME/.cursor/extensions/x/package.json",
	},
	"windsurf": {
		"WS/.windsurf/hooks.json", "HOME/.codeium/windsurf/hooks.json", "HOME/.codeium/windsurf/mcp_config.json",
		"HOME/.windsurf/extensions/x/package.json",
	},
	"antigravity": {
		"WS/.agents/hooks.json", "WS/.agents/mcp_config.json", "WS/.agents/skills/s/SKILL.md", "WS/.antigravitycli/x",
		"HOME/.gemini/config/hooks.json", "HOME/.gemini/antigravity/mcp_config.json", "HOME/.gemini/antigravity-cli/x",
	},
	"vscode": {
		"WS/.vscode/mcp.json", "WS/.vscode/settings.json", "WS/.vscode/tasks.json", "HOME/.config/Code/User/settings.json", "HOME/.config/Code/User/mcp.json",
		"HOME/.vscode/extensions/x/package.json",
	},
	"zed": {
		"WS/.zed/settings.json", "WS/.zed/tasks.json", "HOME/.config/zed/settings.json", "HOME/.config/zed/tasks.json",
		"HOME/.local/share/zed/extensions/installed/x/extension.toml",
	},
	"neovim":    {"HOME/.config/nvim/init.lua", "HOME/.config/nvim/lua/joule.lua", "HOME/.local/share/nvim/lazy/x/plugin/x.lua"},
	"jetbrains": {"HOME/.jetbrains/acp.json"},
}

// TestDiscoveredPaths: the protected set, as the gate builds it from the
// registry, holds each file each host loads. Every registered host has
// its table; a path of the table that the host's entry stops listing
// fails here.
func TestDiscoveredPaths(t *testing.T) {
	for _, h := range All() {
		if len(discovered[h.Name]) == 0 {
			t.Errorf("host %q has no table of discovered paths", h.Name)
		}
	}
	for name, paths := range discovered {
		t.Run(name, func(t *testing.T) {
			h, ok := Lookup(name)
			if !ok {
				t.Fatalf("no host %q", name)
			}
			dir := t.TempDir()
			ws, home := filepath.Join(dir, "up", "ws"), filepath.Join(dir, "home")
			one := Config(nil, "")
			// This host's paths alone: another host's must not be what
			// covers them.
			mine := gate.ConfigPaths{Project: h.Config.Project, Walk: h.Config.Walk, User: h.Config.User}
			for _, d := range h.UserDirs {
				user, _ := d.Resolve(nil, "")
				mine.User = append(mine.User, user...)
			}
			for _, p := range paths {
				abs := expand(p, ws, home)
				if strings.HasPrefix(p, "UP/") {
					// Above the root, the gate protects what exists.
					if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
						t.Fatal(err)
					}
					os.WriteFile(abs, nil, 0o644)
				}
				for _, c := range []gate.ConfigPaths{mine, one} {
					protected := append(gate.ProtectedPaths(filepath.Join(dir, "jh"), home, []string{ws}, c),
						gate.AncestorPaths(home, []string{ws}, c.Walk, exists)...)
					if !underAny(abs, protected) {
						t.Errorf("%s: %s is not protected", name, p)
						break
					}
				}
			}
		})
	}
}

func expand(p, ws, home string) string {
	switch {
	case strings.HasPrefix(p, "WS/"):
		return filepath.Join(ws, p[3:])
	case strings.HasPrefix(p, "UP/"):
		return filepath.Join(filepath.Dir(ws), p[3:])
	case strings.HasPrefix(p, "HOME/"):
		return filepath.Join(home, p[5:])
	}
	panic("discovered path without WS/, UP/ or HOME/: " + p)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestEnvMoved: a variable that moves a host's directory moves the
// protected set with it, as the host resolves it, and the default place
// stays protected; a variable naming the home itself protects nothing
// wholesale.
func TestEnvMoved(t *testing.T) {
	dir := t.TempDir()
	home, ws, cwd := filepath.Join(dir, "home"), filepath.Join(dir, "ws"), filepath.Join(dir, "cwd")
	for _, tt := range []struct {
		name, env, value string
		want             []string // protected
		notWant          []string
	}{
		{"codex home", "CODEX_HOME", "/srv/codex", []string{"/srv/codex/config.toml", "/srv/codex/hooks.json", "HOME/.codex/config.toml"}, nil},
		{"codex home relative to the working directory", "CODEX_HOME", "conf/codex", []string{"CWD/conf/codex/hooks.json"}, nil},
		{"agents home", "AGENTS_HOME", "/srv/agents", []string{"/srv/agents/skills/s/SKILL.md"}, []string{"/srv/agents/AGENTS.md"}},
		{"claude config dir", "CLAUDE_CONFIG_DIR", "/srv/claude", []string{"/srv/claude/settings.json", "/srv/claude/.claude.json",
			"/srv/claude/skills/s/SKILL.md", "/srv/claude/shell-snapshots/s.sh", "HOME/.claude/settings.json", "HOME/.claude.json"},
			[]string{"/srv/claude/projects/p/memory.md", "/srv/claude/CLAUDE.md"}},
		{"gemini home", "GEMINI_CLI_HOME", "/srv/g", []string{"/srv/g/.gemini/settings.json", "/srv/g/.gemini/extensions/e/x",
			"/srv/g/.agents/skills/s/SKILL.md", "/srv/g/.env"}, []string{"/srv/g/.gemini/tmp/x"}},
		{"gemini system settings", "GEMINI_CLI_SYSTEM_SETTINGS_PATH", "/srv/sys.json", []string{"/srv/sys.json"}, nil},
		{"gemini trusted folders", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "/srv/trusted.json", []string{"/srv/trusted.json"}, nil},
		{"qwen home", "QWEN_HOME", "/srv/q", []string{"/srv/q/settings.json", "/srv/q/mcpApprovals.json", "/srv/q/.env", "HOME/.qwen/.env"},
			[]string{"/srv/q/tmp/x"}},
		{"qwen home with ~", "QWEN_HOME", "~/qh", []string{"HOME/qh/settings.json"}, nil},
		{"qwen approvals", "QWEN_CODE_MCP_APPROVALS_PATH", "/srv/a.json", []string{"/srv/a.json"}, nil},
		{"opencode XDG", "XDG_CONFIG_HOME", "/srv/xdg", []string{"/srv/xdg/opencode/plugin/p.ts", "/srv/xdg/nvim/init.lua",
			"/srv/xdg/zed/settings.json", "/srv/xdg/Code/User/mcp.json", "HOME/.config/opencode/opencode.json"}, []string{"/srv/xdg/git/config"}},
		{"opencode config dir", "OPENCODE_CONFIG_DIR", "/srv/oc", []string{"/srv/oc/plugins/p.ts"}, nil},
		{"opencode config file", "OPENCODE_CONFIG", "/srv/oc.json", []string{"/srv/oc.json"}, nil},
		{"cline dir", "CLINE_DIR", "/srv/cl", []string{"/srv/cl/hooks/PreToolUse", "/srv/cl/data/settings/cline_mcp_settings.json"}, nil},
		{"cline data dir", "CLINE_DATA_DIR", "/srv/cd", []string{"/srv/cd/settings/providers.json"}, nil},
		{"zed flatpak", "FLATPAK_XDG_CONFIG_HOME", "/srv/fp", []string{"/srv/fp/zed/settings.json"}, nil},
		{"vscode extensions", "VSCODE_EXTENSIONS", "/srv/ext", []string{"/srv/ext/x/package.json"}, nil},
		{"data home", "XDG_DATA_HOME", "/srv/data", []string{"/srv/data/nvim/site/pack/x/start/y/plugin/y.lua",
			"/srv/data/zed/extensions/x"}, nil},
		{"a variable set to the home", "CODEX_HOME", "HOME", nil, []string{"HOME/src/main.go", "WS/main.go"}},
		{"a variable set to a workspace's parent", "OPENCODE_CONFIG_DIR", dir, nil, []string{"WS/main.go"}},
		{"empty is unset", "CODEX_HOME", "", []string{"HOME/.codex/config.toml"}, []string{"CWD/config.toml"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			value := strings.NewReplacer("HOME", home).Replace(tt.value)
			getenv := func(k string) string {
				if k == tt.env {
					return value
				}
				return ""
			}
			protected := gate.ProtectedPaths(filepath.Join(dir, "jh"), home, []string{ws}, Config(getenv, cwd))
			at := func(p string) string {
				return strings.NewReplacer("HOME/", home+"/", "CWD/", cwd+"/", "WS/", ws+"/").Replace(p)
			}
			for _, p := range tt.want {
				if !underAny(at(p), protected) {
					t.Errorf("%s=%s: %s is not protected", tt.env, value, p)
				}
			}
			for _, p := range tt.notWant {
				if underAny(at(p), protected) {
					t.Errorf("%s=%s: %s is protected", tt.env, value, p)
				}
			}
		})
	}
}

// TestGateDeniesHostConfig: the gate, as it is given the registry, denies a
// Write, an Edit and a shell redirect to every configuration path of
// every host, in the workspace, in the directory above it, in the home
// and where a variable moved it, as a tamper; and not a file beside them.
func TestGateDeniesHostConfig(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home, moved := filepath.Join(dir, "up", "ws"), filepath.Join(dir, "home"), filepath.Join(dir, "moved-codex-home")
	for _, d := range []string{ws, home, moved} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"CODEX_HOME": moved}
	c := Config(func(k string) string { return env[k] }, ws)
	var targets []string
	for _, p := range c.Project {
		targets = append(targets, filepath.Join(ws, p))
	}
	for _, p := range c.Walk {
		// The gate protects those that exist above the root.
		above := filepath.Join(filepath.Dir(ws), p)
		os.MkdirAll(filepath.Dir(above), 0o755)
		os.WriteFile(above, nil, 0o644)
		targets = append(targets, above)
	}
	for _, p := range c.User {
		targets = append(targets, filepath.Join(home, p))
	}
	targets = append(targets, c.Abs...)
	if !slices.Contains(c.Abs, moved) {
		t.Fatalf("$CODEX_HOME=%s is not among the moved paths %q", moved, c.Abs)
	}

	g := &gate.Gate{Home: home, JouleHome: filepath.Join(home, ".local", "share", "joule"), Hosts: c}
	seed := core.Sum([]byte("hosts test issuer"))
	is, err := grant.NewIssuer("hosts-test", ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s, err := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{ws},
		Allow: []string{"Write", "Edit", "Bash", "Write(~/**)", "Edit(~/**)", "Write(//**)", "Edit(//**)"},
		Tiers: []string{"l0"}, BudgetUJ: 1 << 40, NotBefore: now.Add(-time.Hour).Unix(), NotAfter: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := g.Policy(grant.Chain{s})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(tool string, input map[string]any) gate.Verdict {
		b, _ := json.Marshal(input)
		return gate.Decide(&gate.Event{SessionID: "s", Tool: tool, Input: b, Cwd: ws}, policy)
	}
	n := 0
	for _, p := range targets {
		for _, target := range []string{p, filepath.Join(p, "joule-test")} {
			for _, tt := range []struct {
				tool  string
				input map[string]any
			}{
				{"Write", map[string]any{"file_path": target, "content": "{}\n"}},
				{"Edit", map[string]any{"file_path": target, "old_string": "a", "new_string": "b"}},
				{"Bash", map[string]any{"command": "echo '{}' > " + shellQuote(target)}},
			} {
				n++
				if v := decide(tt.tool, tt.input); v.Decision != gate.Deny || v.Code != gate.CodeSelfTamper {
					t.Errorf("%s %s: %s %s (%s), want deny self-tamper", tt.tool, target, v.Decision, v.Code, v.Reason)
				}
			}
		}
	}
	if n < 600 {
		t.Errorf("only %d denials tried", n)
	}
	// Files beside them stay writable: the protected set is no wider than
	// the hosts read.
	for _, p := range []string{
		filepath.Join(ws, "src", "main.go"), filepath.Join(ws, "CLAUDE.md"), filepath.Join(ws, ".claude", "CLAUDE.md"),
		filepath.Join(ws, ".claude", "worktrees", "w", "main.go"), filepath.Join(ws, ".github", "workflows", "ci.yml"),
		filepath.Join(ws, ".agents", "AGENTS.md"), filepath.Join(home, ".claude", "projects", "p", "memory.md"),
		filepath.Join(home, ".gemini", "tmp", "plan.md"), filepath.Join(filepath.Dir(ws), "notes.txt"),
	} {
		if v := decide("Write", map[string]any{"file_path": p, "content": "x"}); v.Code == gate.CodeSelfTamper {
			t.Errorf("Write %s: %s %s (%s), want no tamper", p, v.Decision, v.Code, v.Reason)
		}
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
