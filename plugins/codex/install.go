package codex

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Codex's hooks.json (PreToolUse and PermissionRequest on
// every tool) and joule's MCP server in config.toml, and checks the trust
// Codex demands before it runs a hook.
type Installer struct{}

var _ hook.Installer = Installer{}

func codexHome(s hook.Scope) string {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(s.Home, ".codex")
}

func hooksPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".codex", "hooks.json")
	}
	return filepath.Join(codexHome(s), "hooks.json")
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(hooksPath(s))
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	handler := map[string]any{"type": "command", "command": hook.Command(s, Host), "timeout": 30, "statusMessage": "joule gate"}
	if err := hook.SetGroups(hooks, []string{PreToolUse, PermissionRequest}, ".*", handler, hook.IsJouleCommand(Host), !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	cfg, err := planConfig(s, uninstall)
	if err != nil {
		return nil, err
	}
	return []hook.Change{f.Change(uninstall), cfg}, nil
}

// Check implements hook.Installer: the hooks are in place, hooks are not
// turned off, and the user has trusted them (Codex silently skips an
// untrusted or changed hook).
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	f, err := hook.ReadJSON(hooksPath(s))
	if err != nil {
		return append(out, hook.Finding{Text: err.Error()})
	}
	hooks, _ := f.Doc["hooks"].(map[string]any)
	for _, ev := range []string{PreToolUse, PermissionRequest} {
		if hook.HasHandler(hooks, ev, func(m map[string]any) bool { return hook.IsJouleCommand(Host)(m) }) {
			out = append(out, hook.Finding{OK: true, Text: ev + " hook in " + f.Path})
		} else {
			out = append(out, hook.Finding{Text: "no joule " + ev + " hook in " + f.Path})
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(codexHome(s), "config.toml"))
	text := string(cfg)
	if strings.Contains(text, "hooks = false") || strings.Contains(text, "codex_hooks = false") {
		out = append(out, hook.Finding{Text: filepath.Join(codexHome(s), "config.toml") + " turns hooks off ([features] hooks = false)"})
	}
	if strings.Contains(text, f.Path) && strings.Contains(text, "trusted_hash") {
		out = append(out, hook.Finding{OK: true, Text: "config.toml records a trust hash for " + f.Path + " (re-trust after every install that changes it)"})
	} else {
		out = append(out, hook.Finding{Text: "start codex, open /hooks and trust joule's hooks: Codex skips an untrusted hook without a word"})
	}
	var doc struct {
		MCPServers map[string]mcpServer `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(text, &doc); err != nil {
		out = append(out, hook.Finding{Text: filepath.Join(codexHome(s), "config.toml") + " does not parse: " + err.Error()})
	} else if m, ok := doc.MCPServers["joule"]; ok && m.Command == s.Joule {
		out = append(out, hook.Finding{OK: true, Text: "joule's MCP server in " + configPath(s)})
	} else if p := configPath(s); p != filepath.Join(codexHome(s), "config.toml") {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), beginMarker) {
			out = append(out, hook.Finding{OK: true, Text: "joule's MCP server in " + p + " (Codex reads a project's config only once you trust the project)"})
		} else {
			out = append(out, hook.Finding{Text: "joule's MCP server is not in " + p + ": run joule install codex again"})
		}
	} else {
		out = append(out, hook.Finding{Text: "joule's MCP server is not in " + p + ": run joule install codex again"})
	}
	return out
}
