package cursor

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Cursor in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Config: gate.ConfigPaths{
		// hooks.json and the scripts it names beside it, mcp.json [docs];
		// the agent CLI's permissions, .cursor/cli.json in a project and
		// ~/.cursor/cli-config.json [docs, as quoted by 3p]; the background
		// agent's install commands, environment.json [UNCONFIRMED]. Rules
		// are instructions, not code. Cursor also runs Claude Code's
		// hooks, which Claude Code's entry protects.
		Project: []string{".cursor/hooks.json", ".cursor/hooks", ".cursor/mcp.json", ".cursor/cli.json", ".cursor/environment.json"},
		User:    []string{".cursor/hooks.json", ".cursor/hooks", ".cursor/mcp.json", ".cursor/cli-config.json"},
	},
	// Enterprise hooks [docs, UNCONFIRMED].
	Managed: []string{"/etc/cursor/hooks.json", "/Library/Application Support/Cursor/hooks.json"},
}
