package neovim

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [docs] Neovim's :help base-directories, :help $NVIM_APPNAME,
// :help 'exrc'.

// Entry is Neovim in the host registry (plugins/hosts): ACP through its
// plugins, an installer and no hook.
var Entry = hook.Host{
	Name:      Host,
	Installer: Installer{},
	Config:    gate.ConfigPaths{},
	UserDirs: []hook.UserDir{
		// Neovim runs its whole configuration directory at start, the
		// module joule install writes among it: $XDG_CONFIG_HOME/nvim or
		// ~/.config/nvim [docs: base-directories]. $NVIM_APPNAME, which
		// replaces the nvim name, is not followed.
		{Env: "XDG_CONFIG_HOME", Home: ".config", Paths: []string{"nvim"}},
		// The data directory, where plugin managers keep the plugins it
		// runs at start (site/pack, lazy/) [docs: base-directories,
		// packages].
		{Env: "XDG_DATA_HOME", Home: ".local/share", Paths: []string{"nvim"}},
	},
}
