// Package vscode is VS Code in the host registry (plugins/hosts): the files
// VS Code and its agent read as configuration. The extension itself is the
// TypeScript beside this file (docs/hosts.md, "VS Code").
package vscode

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Host is VS Code's name in the registry.
const Host = "vscode"

// Sources: [docs] code.visualstudio.com/docs (copilot/chat/mcp-servers,
// agent-customization/hooks, editor/tasks, getstarted/settings,
// editor/extension-marketplace, editor/portable); [3p] Electron's
// app.getPath("appData") ($XDG_CONFIG_HOME or ~/.config on Linux) and the
// published lists of Copilot's .github files. Not read from an installed
// VS Code: none is on this machine.

// Entry is VS Code: no hook and no installer (the extension registers
// itself), only the files the gate protects.
var Entry = hook.Host{
	Name: Host,
	Config: gate.ConfigPaths{
		// mcp.json (MCP servers) [docs]; settings.json, where
		// chat.tools.autoApprove turns the agent's prompts off [docs; the
		// CVE-2025-53773 attack wrote it]; tasks.json, whose folderOpen
		// tasks run when the folder opens [docs]. Not the agent's hook
		// files in .github/hooks [docs: agent hooks] nor custom agents in
		// .github/agents, whose frontmatter names hooks and MCP servers
		// [3p]: while absent, protecting them would make a repository's
		// whole .github read-only inside containment (a checkout that
		// changes a workflow would fail; docs/hosts.md, "What the gate
		// protects of each host"). VS Code also runs Claude Code's hooks,
		// which Claude Code's entry protects.
		Project: []string{".vscode/mcp.json", ".vscode/settings.json", ".vscode/tasks.json"},
		// macOS keeps the user directory below Library [docs].
		User: []string{"Library/Application Support/Code/User/settings.json", "Library/Application Support/Code/User/mcp.json"},
	},
	UserDirs: []hook.UserDir{
		// The user settings and MCP servers, below $XDG_CONFIG_HOME/Code
		// or ~/.config/Code on Linux [docs; 3p: Electron's appData].
		{Env: "XDG_CONFIG_HOME", Home: ".config", Paths: []string{"Code/User/settings.json", "Code/User/mcp.json"}},
		// A portable install keeps them below $VSCODE_PORTABLE/user-data
		// [docs: portable mode].
		{Env: "VSCODE_PORTABLE", Paths: []string{"user-data/User/settings.json", "user-data/User/mcp.json", "extensions"}},
		// Installed extensions, code VS Code runs at start:
		// $VSCODE_EXTENSIONS or ~/.vscode/extensions [docs: extension
		// marketplace].
		{Env: "VSCODE_EXTENSIONS", Home: ".vscode/extensions"},
	},
}
