package geminicli

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Gemini CLI in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Contain:   "containment: allowed shell commands run under joule exec (%s); Gemini CLI still applies its own approval to the rewritten joule exec line (it asks, or with --approval-mode yolo runs it), so its allow rules for a command no longer match it",
	Trust:     "it trusts the project folder in ~/.gemini/trustedFolders.json",
	// Folder trust is per project; a user install has none to give.
	TrustProjectOnly: true,
	Config: gate.ConfigPaths{
		// settings.json (hooks, MCP servers, tool policy), extensions
		// (hooks, MCP servers), commands (TOML whose !{...} runs shell),
		// policies, agents, .env, system.md [docs][src].
		Project: []string{".gemini"},
		// The same in ~/.gemini, and the trusted folders; not ~/.gemini
		// whole: Gemini CLI keeps the session's plans and checkpoints in
		// ~/.gemini/tmp, and Antigravity has its own files there.
		User: []string{".gemini/settings.json", ".gemini/extensions", ".gemini/commands", ".gemini/policies",
			".gemini/agents", ".gemini/.env", ".gemini/trustedFolders.json"},
	},
	// System settings override every other layer, system defaults underlie
	// them, on Linux and macOS [docs: gemini-cli's configuration.md].
	Managed: []string{systemSettings, "/etc/gemini-cli/system-defaults.json",
		"/Library/Application Support/GeminiCli/settings.json", "/Library/Application Support/GeminiCli/system-defaults.json"},
}
