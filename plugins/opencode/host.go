package opencode

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is OpenCode in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Contain:   "containment: allowed bash commands run under joule exec (%s); OpenCode's own permission rules now match the joule exec line",
	Config: gate.ConfigPaths{
		// opencode.json(c) at the root (plugins, MCP servers, permissions)
		// and .opencode whole: its own config, plugin(s), tool(s),
		// command(s), agent(s) [docs].
		Project: []string{"opencode.json", "opencode.jsonc", ".opencode"},
		User:    []string{".config/opencode"},
	},
}
