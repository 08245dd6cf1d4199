// Package zed registers joule acp with Zed as a custom external agent (an
// "agent_servers" entry of type "custom" in Zed's settings.json).
package zed

import (
	"fmt"
	"path/filepath"

	"github.com/joulehook/joule/plugins/hook"
)

// Host is the name of joule install zed.
const Host = "zed"

// Agent is the name joule appears under in Zed's agent panel.
const Agent = "joule"

// Installer writes joule's agent_servers entry.
type Installer struct{}

var _ hook.Installer = Installer{}

// SettingsPath is Zed's settings file for the scope: the project's
// .zed/settings.json, else the user's ~/.config/zed/settings.json.
func SettingsPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".zed", "settings.json")
	}
	return filepath.Join(s.Home, ".config", "zed", "settings.json")
}

// agentServer is joule's agent_servers entry; "type" is required by Zed, which
// silently drops entries without it.
func agentServer(joule string) map[string]any {
	return map[string]any{"type": "custom", "command": joule, "args": []any{"acp"}, "env": map[string]any{}}
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(SettingsPath(s))
	if err != nil {
		return nil, fmt.Errorf("%w (or add the entry from docs/acp.md by hand)", err)
	}
	servers, err := hook.Object(f.Doc, "agent_servers", f.Path)
	if err != nil {
		return nil, err
	}
	if uninstall {
		delete(servers, Agent)
	} else {
		servers[Agent] = agentServer(s.Joule)
	}
	hook.PruneEmpty(f.Doc, "agent_servers")
	return []hook.Change{f.Change(false)}, nil
}

// Check implements hook.Installer.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	f, err := hook.ReadJSON(SettingsPath(s))
	if err != nil {
		return append(out, hook.Finding{Text: err.Error()})
	}
	servers, _ := f.Doc["agent_servers"].(map[string]any)
	e, _ := servers[Agent].(map[string]any)
	args, _ := e["args"].([]any)
	if e == nil || e["type"] != "custom" || e["command"] != s.Joule || len(args) == 0 || args[0] != "acp" {
		return append(out, hook.Finding{Text: fmt.Sprintf("%s has no agent_servers.%s entry running %s acp: run 'joule install zed'", f.Path, Agent, s.Joule)})
	}
	return append(out, hook.Finding{OK: true, Text: fmt.Sprintf("%s: agent_servers.%s runs %s acp (open Zed's agent panel, New Thread → %s)", f.Path, Agent, s.Joule, Agent)})
}
