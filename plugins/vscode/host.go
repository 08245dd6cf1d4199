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

// Entry is VS Code: no hook and no installer (the extension registers
// itself), only the files the gate protects.
var Entry = hook.Host{
	Name: Host,
	Config: gate.ConfigPaths{
		// mcp.json (MCP servers) [docs]; settings.json, where
		// chat.tools.autoApprove turns the agent's prompts off [docs; the
		// CVE-2025-53773 attack wrote it]; tasks.json, whose folderOpen
		// tasks run when the folder opens [docs].
		Project: []string{".vscode/mcp.json", ".vscode/settings.json", ".vscode/tasks.json"},
		User: []string{".config/Code/User/settings.json", ".config/Code/User/mcp.json",
			"Library/Application Support/Code/User/settings.json", "Library/Application Support/Code/User/mcp.json"},
	},
}
