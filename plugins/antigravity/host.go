package antigravity

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Antigravity in the host registry (plugins/hosts). agy sends no
// cwd for some events; the hook's own directory stands in.
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(dir string) hook.Adapter { return Adapter{Dir: dir} },
	Installer: Installer{},
	Config: gate.ConfigPaths{
		// Workspace hooks and MCP servers (the ones joule install writes;
		// .antigravitycli is the other reported place) [3p].
		Project: []string{".agents/hooks.json", ".agents/mcp_config.json", ".antigravitycli"},
		// ~/.gemini/config (hooks, MCP servers: what agy 1.0 reads [3p]),
		// the CLI's settings and plugins [docs], the IDE's older home [3p].
		User: []string{".gemini/config", ".gemini/antigravity", ".gemini/antigravity-cli"},
	},
}
