package main

import (
	"github.com/joulehook/joule/plugins/jetbrains"
	"github.com/joulehook/joule/plugins/neovim"
	"github.com/joulehook/joule/plugins/zed"
)

// The ACP editors: joule install zed|jetbrains|neovim registers joule acp
// as an agent (docs/acp.md).
func init() {
	installers[zed.Host] = zed.Installer{}
	installers[jetbrains.Host] = jetbrains.Installer{}
	installers[neovim.Host] = neovim.Installer{}
}
