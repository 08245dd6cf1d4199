package qwencode

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Qwen Code in the host registry (plugins/hosts).
//
// It has no Contain: the PreToolUse answer cannot replace a tool's input
// (measured with 0.24.4), and the PermissionRequest hook that can fires
// only where Qwen would prompt and approves past that prompt, so joule
// install --contain refuses Qwen Code and a grant's rewrite is a deny.
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Config: gate.ConfigPaths{
		// settings.json (hooks, MCP servers, tool policy) [src:
		// Storage.getWorkspaceSettingsPath]; commands (TOML whose !{...}
		// runs shell), extensions, agents and .env, as in Gemini CLI, of
		// which Qwen Code is a fork [src]. Qwen writes nothing of its own
		// below a project's .qwen, so all of it is protected.
		Project: []string{".qwen"},
		// The same in ~/.qwen, and the folder-trust rules that decide
		// whether a project's settings load at all [src: getGlobalQwenDir].
		// Not ~/.qwen whole: Qwen keeps its sessions and temporary files
		// there. $QWEN_HOME moves these (UserDir); the gate protects the
		// default place.
		User: []string{".qwen/settings.json", ".qwen/trustedFolders.json", ".qwen/extensions", ".qwen/commands",
			".qwen/agents", ".qwen/.env"},
	},
	Managed: ManagedSettings,
}
