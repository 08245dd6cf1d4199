package cursor

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [docs] cursor.com/docs (agent/hooks, context/mcp, cli,
// background agents); [3p] third-party descriptions of Cursor's files.
// Cursor's source is closed and none is installed here.

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
		// Skills are instructions in Cursor (the Agent Skills standard,
		// no hooks [docs: context/skills]).
		Project: []string{".cursor/hooks.json", ".cursor/hooks", ".cursor/mcp.json", ".cursor/cli.json", ".cursor/environment.json"},
		// And the installed extensions, code the editor (a VS Code
		// fork) runs at start [3p].
		User: []string{".cursor/hooks.json", ".cursor/hooks", ".cursor/mcp.json", ".cursor/cli-config.json", ".cursor/extensions"},
	},
	// Enterprise hooks [docs, UNCONFIRMED].
	Managed: []string{"/etc/cursor/hooks.json", "/Library/Application Support/Cursor/hooks.json"},
}
