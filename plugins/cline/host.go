package cline

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Cline in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Contain:   "containment: allowed run_commands calls run under joule exec (%s), as one command; Cline's own approval (--auto-approve false) still applies, to the rewritten joule exec line",
	Config: gate.ConfigPaths{
		// The hook directories it searches [src], and .clinerules whole
		// (a file or a directory of rules, workflows and hooks).
		Project: []string{".clinerules", ".cline/hooks"},
		// Hooks, and the CLI's settings with cline_mcp_settings.json [src].
		User: []string{".cline/hooks", ".cline/data/settings", "Documents/Cline/Hooks"},
	},
}
