package neovim

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Neovim in the host registry (plugins/hosts): ACP through its
// plugins, an installer and no hook.
var Entry = hook.Host{
	Name:      Host,
	Installer: Installer{},
	// Neovim runs its whole configuration directory at start, the module
	// joule install writes among it.
	Config: gate.ConfigPaths{User: []string{".config/nvim"}},
}
