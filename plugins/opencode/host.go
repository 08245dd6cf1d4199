package opencode

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [src] is github.com/sst/opencode (now anomalyco/opencode),
// packages/opencode/src: config/config.ts (Config.state: the layers, the
// directories it loads, installDependencies, loadCommand, loadAgent,
// loadMode, loadPlugin), config/paths.ts (ConfigPaths.files,
// ConfigPaths.directories), global/index.ts (Global.Path, from
// xdg-basedir), config/managed.ts (systemManagedConfigDir); [docs]
// opencode.ai/docs (config, plugins, custom tools).

// Entry is OpenCode in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Contain:   "containment: allowed bash commands run under joule exec (%s); OpenCode's own permission rules now match the joule exec line",
	Config: gate.ConfigPaths{
		// opencode.json(c) (plugins, MCP servers, permissions) and
		// .opencode whole: its own opencode.json(c), plugin(s)/*.ts|js,
		// tool(s), command(s), agent(s), mode(s), and the package.json
		// whose dependencies OpenCode installs there (their install
		// scripts run) [src: Config.state, installDependencies,
		// load*].
		// .opencode/opencode.json(c), inside .opencode and so protected
		// with it, are named too: OpenCode reads them during a turn, and
		// a path protected below a name tells the sandbox that the
		// stand-in it makes where .opencode is absent is a directory,
		// through which the read finds nothing (ENOENT); through a node
		// that is not a directory it fails (ENOTDIR), and OpenCode fails
		// the turn (core/sandbox makeStandIn).
		Project: []string{"opencode.json", "opencode.jsonc", ".opencode", ".opencode/opencode.json", ".opencode/opencode.jsonc"},
		// Both are read in every directory from the working directory
		// up to the work tree's root [src: ConfigPaths.files,
		// ConfigPaths.directories: afs.up({start: directory, stop:
		// worktree})].
		Walk: []string{"opencode.json", "opencode.jsonc", ".opencode"},
		// ~/.opencode, a config directory like a project's [src:
		// ConfigPaths.directories: afs.up({start: home, stop: home})].
		User: []string{".opencode"},
	},
	UserDirs: []hook.UserDir{
		// The global config directory, $XDG_CONFIG_HOME/opencode or
		// ~/.config/opencode [src: Global.Path.config]: config.json,
		// opencode.json(c) and the same plugin, tool, command and agent
		// directories.
		{Env: "XDG_CONFIG_HOME", Home: ".config", Paths: []string{"opencode"}},
		// A directory and a file the environment adds [src: Flag.
		// OPENCODE_CONFIG_DIR, Flag.OPENCODE_CONFIG].
		{Env: "OPENCODE_CONFIG_DIR"},
		{Env: "OPENCODE_CONFIG"},
	},
	// The managed config directory [src: systemManagedConfigDir].
	Managed: []string{"/etc/opencode", "/Library/Application Support/opencode"},
}
