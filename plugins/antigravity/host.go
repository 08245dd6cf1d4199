package antigravity

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [docs] antigravity.google/docs; [3p] third-party measurements
// of the agy CLI. Antigravity's source is closed and none is installed here.

// Entry is Antigravity in the host registry (plugins/hosts). agy sends no
// cwd for some events; the hook's own directory stands in.
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(dir string) hook.Adapter { return Adapter{Dir: dir} },
	Installer: Installer{},
	Config: gate.ConfigPaths{
		// Workspace hooks and MCP servers (the ones joule install writes;
		// .antigravitycli is the other reported place) [3p].
		// Skills in .agents/skills in a project-bound session [3p: a
		// measurement with agy 1.1.13].
		Project: []string{".agents/hooks.json", ".agents/mcp_config.json", ".agents/skills", ".antigravitycli"},
		// ~/.gemini/config (hooks, MCP servers: what agy 1.0 reads [3p]),
		// the CLI's settings and plugins [docs], the IDE's older home [3p].
		User: []string{".gemini/config", ".gemini/antigravity", ".gemini/antigravity-cli"},
	},
}
