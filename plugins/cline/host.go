package cline

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [src] is github.com/cline/cline at 21cb8d2525 (SDK 0.0.78, which
// the CLI 3.0.65 is built on), sdk/packages/shared/src/storage/paths.ts:
// resolveClineDir, resolveClineDataDir, resolveMcpSettingsPath,
// resolveGlobalSettingsPath, resolveProviderSettingsPath,
// resolveHooksConfigSearchPaths, resolvePluginConfigSearchPaths,
// resolveDocumentsExtensionPath, resolveSkillsConfigSearchPaths. Cline reads
// each project list in the workspace path it is given, not above it.

// Entry is Cline in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Contain:   "containment: allowed run_commands calls run under joule exec (%s), as one command; Cline's own approval (--auto-approve false) still applies, to the rewritten joule exec line (a shell call of the VS Code extension's shape takes no replacement: analysis alone decides it, and its receipt says so)",
	Config: gate.ConfigPaths{
		// .clinerules whole (rules, workflows, skills and the hooks it
		// searches), the hooks in .cline/hooks, and plugins, .js/.ts
		// modules Cline imports, in .cline/plugins [src:
		// resolveHooksConfigSearchPaths, resolvePluginConfigSearchPaths].
		// Agents carry no hooks in Cline (name, description, tools,
		// skills, provider and model [src: extensions/tools/team/
		// configured-agent-config.ts]); skills are prompts.
		Project: []string{".clinerules", ".cline/hooks", ".cline/plugins"},
		// Hooks and plugins in the Documents folder [src:
		// resolveDocumentsExtensionPath("Hooks"|"Plugins")].
		User: []string{"Documents/Cline/Hooks", "Documents/Cline/Plugins"},
	},
	UserDirs: []hook.UserDir{
		// $CLINE_DIR or ~/.cline [src: resolveClineDir]: hooks,
		// plugins, and below the data directory (data/, unless
		// $CLINE_DATA_DIR names another) the settings: MCP servers
		// (cline_mcp_settings.json), global settings, providers
		// [src: resolveClineDataDir, resolve*SettingsPath].
		{Env: "CLINE_DIR", Home: ".cline", Paths: []string{"hooks", "plugins", "data/settings"}},
		{Env: "CLINE_DATA_DIR", Paths: []string{"settings"}},
		// Files the environment names instead [src:
		// resolveMcpSettingsPath, resolveGlobalSettingsPath,
		// resolveProviderSettingsPath].
		{Env: "CLINE_MCP_SETTINGS_PATH"},
		{Env: "CLINE_GLOBAL_SETTINGS_PATH"},
		{Env: "CLINE_PROVIDER_SETTINGS_PATH"},
	},
}
