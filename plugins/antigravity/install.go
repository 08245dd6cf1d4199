package antigravity

import (
	"path/filepath"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Antigravity's hooks.json (the Claude-Code-like shape agy
// reads) and joule's MCP server in its mcp_config.json. The paths are the
// ones reported to work with agy 1.0.x; the host is closed source.
type Installer struct{}

var _ hook.Installer = Installer{}

// guard adds only the JOULE_HOME: what agy does when a hook fails is not
// documented, and joule itself answers an explicit deny on every failure
// it survives.
var guard = hook.Guard{}

func paths(s hook.Scope) (hooks, mcp string) {
	if s.Project != "" {
		return filepath.Join(s.Project, ".agents", "hooks.json"), filepath.Join(s.Project, ".agents", "mcp_config.json")
	}
	return filepath.Join(s.Home, ".gemini", "config", "hooks.json"), filepath.Join(s.Home, ".gemini", "config", "mcp_config.json")
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	hp, mp := paths(s)
	f, err := hook.ReadJSON(hp)
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	handler := map[string]any{"type": "command", "command": guard.Line(s, Host, hook.Command(s, Host))}
	if err := hook.SetGroups(hooks, []string{PreToolUse}, "", handler, hook.IsJouleCommand(Host), !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	m, err := hook.ReadJSON(mp)
	if err != nil {
		return nil, err
	}
	if err := hook.MCPServer(m, map[string]any{"command": s.Joule, "args": []any{"mcp"}}, uninstall); err != nil {
		return nil, err
	}
	return []hook.Change{f.Change(uninstall), m.Change(uninstall)}, nil
}

// Check implements hook.Installer.
func (Installer) Check(s hook.Scope) []hook.Finding {
	hp, _ := paths(s)
	out := []hook.Finding{hook.Executable(s.Joule)}
	f, err := hook.ReadJSON(hp)
	if err != nil {
		return append(out, hook.Finding{Text: err.Error()})
	}
	hooks, _ := f.Doc["hooks"].(map[string]any)
	if hook.HasHandler(hooks, PreToolUse, func(m map[string]any) bool { return hook.IsJouleCommand(Host)(m) }) {
		out = append(out, hook.Finding{OK: true, Text: "PreToolUse hook in " + hp})
	} else {
		out = append(out, hook.Finding{Text: "no joule PreToolUse hook in " + hp})
	}
	out = append(out, hook.HomeCheck(s, hook.Commands(hooks, []string{PreToolUse}, hook.IsJouleCommand(Host)))...)
	return append(out, hook.Finding{Text: "run /hooks in agy and check that joule is listed: Antigravity's hook locations and contract are not documented enough to verify from here"})
}
