package windsurf

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [docs] docs.windsurf.com (cascade hooks, MCP); [3p] third-party
// descriptions. Windsurf's source is closed and none is installed here.

// Entry is Windsurf in the host registry (plugins/hosts). Cascade sends no
// cwd for some events; the hook's own directory stands in.
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(dir string) hook.Adapter { return Adapter{Dir: dir} },
	Installer: Installer{},
	Config: gate.ConfigPaths{
		Project: []string{".windsurf/hooks.json"}, // [docs]
		User: []string{".codeium/windsurf/hooks.json", ".codeium/windsurf/mcp_config.json", // [docs]
			".windsurf/extensions"}, // installed extensions of the VS Code fork [3p]
	},
	Managed: []string{"/etc/windsurf/hooks.json", "/Library/Application Support/Windsurf/hooks.json"}, // [docs]
}
