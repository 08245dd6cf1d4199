package geminicli

import (
	"path/filepath"
	"slices"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Gemini CLI's settings.json: a BeforeTool hook on every
// tool and joule's MCP server.
type Installer struct{}

var _ hook.Installer = Installer{}

func settingsPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".gemini", "settings.json")
	}
	return filepath.Join(s.Home, ".gemini", "settings.json")
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(settingsPath(s))
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	handler := map[string]any{"type": "command", "command": hook.Command(s, Host), "name": "joule",
		"description": "joule gate: decides every tool call from the active grant", "timeout": 30000}
	if err := hook.SetGroups(hooks, []string{BeforeTool}, "*", handler, hook.IsJouleCommand(Host), !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	if err := hook.MCPServer(f, map[string]any{"command": s.Joule, "args": []any{"mcp"}}, uninstall); err != nil {
		return nil, err
	}
	return []hook.Change{f.Change(uninstall)}, nil
}

// Check implements hook.Installer: the hook is there, hooks are enabled and
// joule's is not disabled by name; project hooks need the user's approval.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	for _, p := range []string{settingsPath(s), filepath.Join(s.Home, ".gemini", "settings.json"), "/etc/gemini-cli/settings.json"} {
		f, err := hook.ReadJSON(p)
		if err != nil {
			out = append(out, hook.Finding{Text: err.Error()})
			continue
		}
		if p == settingsPath(s) {
			hooks, _ := f.Doc["hooks"].(map[string]any)
			if hook.HasHandler(hooks, BeforeTool, func(m map[string]any) bool { return hook.IsJouleCommand(Host)(m) }) {
				out = append(out, hook.Finding{OK: true, Text: "BeforeTool hook on every tool in " + p})
			} else {
				out = append(out, hook.Finding{Text: "no joule BeforeTool hook in " + p})
			}
		}
		cfg, _ := f.Doc["hooksConfig"].(map[string]any)
		if cfg["enabled"] == false {
			out = append(out, hook.Finding{Text: p + " sets hooksConfig.enabled: false; no hook runs"})
		}
		if disabled, _ := cfg["disabled"].([]any); slices.Contains(disabled, any("joule")) {
			out = append(out, hook.Finding{Text: p + " lists joule in hooksConfig.disabled"})
		}
	}
	if s.Project != "" {
		out = append(out, hook.Finding{Text: "start gemini in " + s.Project + " and approve the project hook 'joule' when asked: Gemini CLI runs a new or changed project hook only after that"})
	}
	return out
}
