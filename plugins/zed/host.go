package zed

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [src] github.com/zed-industries/zed crates/paths/src/paths.rs
// (config_dir: $FLATPAK_XDG_CONFIG_HOME, else dirs::config_dir(), i.e.
// $XDG_CONFIG_HOME or ~/.config, joined with zed on Linux; data_dir:
// $FLATPAK_XDG_DATA_HOME, else $XDG_DATA_HOME or ~/.local/share);
// [docs] zed.dev/docs (configuring-zed, tasks, extensions, agent servers).

// Entry is Zed in the host registry (plugins/hosts): an ACP editor, with an
// installer and no hook.
var Entry = hook.Host{
	Name:      Host,
	Installer: Installer{},
	Config: gate.ConfigPaths{
		// settings.json (agent servers, context servers), tasks.json,
		// debug.json [docs].
		Project: []string{".zed"},
	},
	UserDirs: []hook.UserDir{
		// settings.json and tasks.json in the config directory [src:
		// config_dir; docs].
		{Env: "XDG_CONFIG_HOME", Home: ".config", Paths: []string{"zed/settings.json", "zed/tasks.json"}},
		{Env: "FLATPAK_XDG_CONFIG_HOME", Paths: []string{"zed/settings.json", "zed/tasks.json"}},
		// Installed extensions, which start language servers [src:
		// data_dir; docs: extensions].
		{Env: "XDG_DATA_HOME", Home: ".local/share", Paths: []string{"zed/extensions"}},
		{Env: "FLATPAK_XDG_DATA_HOME", Paths: []string{"zed/extensions"}},
	},
}
