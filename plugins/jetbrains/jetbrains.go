// Package jetbrains registers joule acp with JetBrains IDEs (AI Assistant
// and Air) as a custom ACP agent in ~/.jetbrains/acp.json.
package jetbrains

import (
	"fmt"
	"path/filepath"

	"github.com/joulehook/joule/plugins/hook"
)

// Host is the name of joule install jetbrains.
const Host = "jetbrains"

// Agent is the name joule appears under in the IDE's agent list.
const Agent = "joule"

// Installer writes joule's agent_servers entry.
type Installer struct{}

var _ hook.Installer = Installer{}

// ConfigPath is the IDEs' ACP agent list; it is per user only.
func ConfigPath(s hook.Scope) string { return filepath.Join(s.Home, ".jetbrains", "acp.json") }

// Plan implements hook.Installer. The file is per user whatever the scope.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(ConfigPath(s))
	if err != nil {
		return nil, err
	}
	servers, err := hook.Object(f.Doc, "agent_servers", f.Path)
	if err != nil {
		return nil, err
	}
	if uninstall {
		delete(servers, Agent)
	} else {
		servers[Agent] = map[string]any{"command": s.Joule, "args": []any{"acp"}, "env": map[string]any{}}
	}
	hook.PruneEmpty(f.Doc, "agent_servers")
	return []hook.Change{f.Change(uninstall)}, nil
}

// Check implements hook.Installer.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	f, err := hook.ReadJSON(ConfigPath(s))
	if err != nil {
		return append(out, hook.Finding{Text: err.Error()})
	}
	servers, _ := f.Doc["agent_servers"].(map[string]any)
	e, _ := servers[Agent].(map[string]any)
	args, _ := e["args"].([]any)
	if e == nil || e["command"] != s.Joule || len(args) == 0 || args[0] != "acp" {
		return append(out, hook.Finding{Text: fmt.Sprintf("%s has no agent_servers.%s entry running %s acp: run 'joule install jetbrains'", f.Path, Agent, s.Joule)})
	}
	return append(out, hook.Finding{OK: true, Text: fmt.Sprintf("%s: agent_servers.%s runs %s acp (AI Assistant → agent list → %s)", f.Path, Agent, s.Joule, Agent)})
}
