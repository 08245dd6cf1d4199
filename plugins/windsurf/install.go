package windsurf

import (
	"path/filepath"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Cascade's hooks.json for every gated pre-hook and, for
// the user scope, joule's MCP server in Windsurf's mcp_config.json.
type Installer struct{}

var _ hook.Installer = Installer{}

// guard turns every failure of joule (missing, crashed, any exit but 0 and
// 2) into Cascade's block, exit 2 with a reason on stderr: Cascade has no
// fail-closed option and runs the action on any other exit.
var guard = hook.Guard{Exit2: true}

func hooksPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".windsurf", "hooks.json")
	}
	return filepath.Join(s.Home, ".codeium", "windsurf", "hooks.json")
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
	entry := map[string]any{"command": guard.Line(s, Host, hook.Command(s, Host)), "show_output": true}
	if err := hook.SetEntries(hooks, Events, entry, hook.IsJouleCommand(Host), !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	changes := []hook.Change{f.Change(uninstall)}
	// Windsurf reads MCP servers only from the user's mcp_config.json.
	m, err := hook.ReadJSON(filepath.Join(s.Home, ".codeium", "windsurf", "mcp_config.json"))
	if err != nil {
		return nil, err
	}
	if err := hook.MCPServer(m, map[string]any{"command": s.Joule, "args": []any{"mcp"}}, uninstall); err != nil {
		return nil, err
	}
	return append(changes, m.Change(false)), nil
}

// Check implements hook.Installer.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	f, err := hook.ReadJSON(hooksPath(s))
	if err != nil {
		return append(out, hook.Finding{Text: err.Error()})
	}
	hooks, _ := f.Doc["hooks"].(map[string]any)
	for _, ev := range Events {
		if hook.HasHandler(hooks, ev, func(m map[string]any) bool { return hook.IsJouleCommand(Host)(m) }) {
			out = append(out, hook.Finding{OK: true, Text: ev + " hook in " + f.Path})
		} else {
			out = append(out, hook.Finding{Text: "no joule " + ev + " hook in " + f.Path})
		}
	}
	out = append(out, hook.HomeCheck(s, hook.Commands(hooks, Events, hook.IsJouleCommand(Host)))...)
	for _, l := range hook.Commands(hooks, Events, hook.IsJouleCommand(Host)) {
		if !guard.Guarded(Host, l) {
			return append(out, hook.Finding{Text: "joule's hook in " + f.Path + " is an older line without the fail-closed wrapper (Cascade runs the action when it cannot start): run joule install windsurf again"})
		}
	}
	return append(out, hook.Finding{OK: true, Text: "Cascade has no fail-closed option: the hook line answers Cascade's block (exit 2) when joule is missing, crashes or fails"})
}
