package codex

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is the Codex CLI in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Contain:   "containment: allowed shell commands run under joule exec (%s), inside Codex's own sandbox and approval policy, which still apply to the rewritten line",
	Trust:     "its trust of a project and of a hook is a line in its config.toml",
	Config: gate.ConfigPaths{
		// A config layer is a .codex directory: config.toml (MCP servers,
		// [hooks], sandbox and approval policy, the trust of projects and
		// hooks), hooks.json, rules, skills [src]. With $CODEX_HOME set the
		// user layer lives there instead, which this list does not follow.
		Project: []string{".codex"},
		User:    []string{".codex"},
	},
	// requirements.toml (allowed policies, managed hooks), managed_config.toml
	// and the system config layer config.toml, on Unix [docs; 3p: the
	// literals in the 0.149 binary].
	Managed: []string{"/etc/codex/requirements.toml", "/etc/codex/managed_config.toml", "/etc/codex/config.toml"},
}
