package cursor

import (
	"fmt"
	"path/filepath"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Cursor's hooks.json (every gated event, failClosed) and
// registers joule's MCP server in Cursor's mcp.json.
type Installer struct{}

var _ hook.Installer = Installer{}

// guard adds only the JOULE_HOME: Cursor's failClosed already blocks the
// action when the hook fails, times out or prints no valid answer.
var guard = hook.Guard{}

func dir(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".cursor")
	}
	return filepath.Join(s.Home, ".cursor")
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(filepath.Join(dir(s), "hooks.json"))
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	entry := map[string]any{"command": guard.Line(s, Host, hook.Command(s, Host)), "failClosed": true, "timeout": 30}
	if err := hook.SetEntries(hooks, Events, entry, hook.IsJouleCommand(Host), !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	if len(f.Doc) > 0 && f.Doc["version"] == nil {
		f.Doc["version"] = 1
	}
	if _, hooked := f.Doc["hooks"]; uninstall && !hooked && fmt.Sprint(f.Doc["version"]) == "1" {
		// The version install adds goes with the last hook: it says
		// which hooks format the file holds.
		delete(f.Doc, "version")
	}
	m, err := hook.ReadJSON(filepath.Join(dir(s), "mcp.json"))
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
	out := []hook.Finding{hook.Executable(s.Joule)}
	f, err := hook.ReadJSON(filepath.Join(dir(s), "hooks.json"))
	if err != nil {
		return append(out, hook.Finding{Text: err.Error()})
	}
	hooks, _ := f.Doc["hooks"].(map[string]any)
	for _, ev := range Events {
		armed := hook.HasHandler(hooks, ev, func(m map[string]any) bool { return hook.IsJouleCommand(Host)(m) && m["failClosed"] == true })
		if armed {
			out = append(out, hook.Finding{OK: true, Text: ev + " hook armed with failClosed in " + f.Path})
		} else {
			out = append(out, hook.Finding{Text: "no joule " + ev + " hook with failClosed in " + f.Path})
		}
	}
	out = append(out, hook.HomeCheck(s, hook.Commands(hooks, Events, hook.IsJouleCommand(Host)))...)
	return append(out, hook.Finding{OK: true, Text: "Cursor reloads hooks.json on save; check Settings → Hooks shows joule (Cursor is closed source: this install is written to its documentation, not tested against it)"})
}
