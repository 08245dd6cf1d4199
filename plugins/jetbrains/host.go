package jetbrains

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is the JetBrains IDEs in the host registry (plugins/hosts): ACP, an
// installer and no hook.
var Entry = hook.Host{
	Name:      Host,
	Installer: Installer{},
	Config:    gate.ConfigPaths{User: []string{".jetbrains/acp.json"}}, // [docs]
}
