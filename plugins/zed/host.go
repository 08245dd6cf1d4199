package zed

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Zed in the host registry (plugins/hosts): an ACP editor, with an
// installer and no hook.
var Entry = hook.Host{
	Name:      Host,
	Installer: Installer{},
	Config: gate.ConfigPaths{
		// settings.json (agent servers, context servers), tasks.json [docs].
		Project: []string{".zed"},
		User:    []string{".config/zed/settings.json", ".config/zed/tasks.json"},
	},
}
