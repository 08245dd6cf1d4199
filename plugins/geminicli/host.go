package geminicli

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [src] is the bundle of @google/gemini-cli 0.61.0 (the e2e suite's
// node_modules, bundle/): chunk-5FZXKDXH.js packages/core/src/config/
// storage.ts (class Storage) and utils/paths.ts (homedir), chunk-2YTYPKEZ.js
// packages/cli/src/config/settings.ts (_doLoadSettings, findEnvFile,
// loadEnvironment, DEFAULT_EXCLUDED_ENV_VARS), chunk-4GP6HFBO.js
// packages/cli/src/config/extensions/storage.ts; [docs] gemini-cli's
// docs/get-started/configuration.md.

// Entry is Gemini CLI in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	System:    SystemInstaller{},
	Contain:   "containment: allowed shell commands run under joule exec (%s); Gemini CLI still applies its own approval to the rewritten joule exec line (it asks, or with --approval-mode yolo runs it), so its allow rules for a command no longer match it",
	Trust:     "it trusts the project folder in ~/.gemini/trustedFolders.json",
	// Folder trust is per project; a user install has none to give.
	TrustProjectOnly: true,
	Config: gate.ConfigPaths{
		// In the directory it starts in [src: loadSettings(cwd),
		// new Storage(workspaceDir)]: .gemini whole, settings.json
		// (hooks, MCP servers, tool policy), commands (TOML whose !{...}
		// runs shell), skills, agents, policies, extensions, .env,
		// system.md [src: getWorkspaceSettingsPath, getProject*Dir,
		// getWorkspacePoliciesDir]; skills in .agents/skills [src:
		// getProjectAgentSkillsDir]. And .env: in a trusted folder
		// Gemini CLI loads the first .env it finds from the working
		// directory up into its own environment, all but four names
		// (DEBUG, DEBUG_MODE and the IDE server's command) [src:
		// findEnvFile, loadEnvironment], and passes that environment to
		// every stdio MCP server it starts, NODE_OPTIONS included [src:
		// sanitizeEnvironment], outside any containment.
		Project: []string{".gemini", ".agents/skills", ".env"},
		// The .env search walks every directory up to /, .gemini/.env
		// first in a trusted folder [src: findEnvFile].
		Walk: []string{".gemini/.env", ".env"},
	},
	UserDirs: []hook.UserDir{
		// The home is $GEMINI_CLI_HOME when set [src: homedir()]; in its
		// .gemini: settings.json, extensions (hooks, MCP servers; their
		// enablement), commands, skills, agents, policies, .env, the
		// trusted folders, the acknowledgments of project agents and the
		// accepted hashes of project policies, whose changes Gemini CLI
		// otherwise asks about [src: getGlobalSettingsPath,
		// getUserExtensionsDir, getUserCommandsDir, getUserSkillsDir,
		// getUserAgentsDir, getUserPoliciesDir, getTrustedFoldersPath,
		// getAcknowledgedAgentsPath, getPolicyIntegrityStoragePath]; the
		// user's agent skills and the home's .env, the last place the
		// .env search looks [src: getUserAgentSkillsDir, findEnvFile].
		// Not ~/.gemini whole: Gemini CLI keeps the session's plans and
		// checkpoints in ~/.gemini/tmp, and Antigravity has its own files
		// there.
		{Env: "GEMINI_CLI_HOME", Home: ".", Paths: []string{".gemini/settings.json", ".gemini/extensions", ".gemini/commands",
			".gemini/skills", ".gemini/agents", ".gemini/policies", ".gemini/.env", ".gemini/trustedFolders.json",
			".gemini/acknowledgments", ".gemini/policy_integrity.json", ".agents/skills", ".env"}},
		// Files the environment names instead [src:
		// getTrustedFoldersPath, getSystemSettingsPath,
		// getSystemDefaultsPath]: a system settings file so named
		// outranks every other layer, and may be the user's own.
		{Env: "GEMINI_CLI_TRUSTED_FOLDERS_PATH"},
		{Env: "GEMINI_CLI_SYSTEM_SETTINGS_PATH"},
		{Env: "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"},
	},
	// System settings override every other layer, system defaults underlie
	// them, system policies beside them, on Linux and macOS [src:
	// getSystemConfigDir, getSystemPoliciesDir].
	Managed: []string{systemSettings, "/etc/gemini-cli/system-defaults.json", "/etc/gemini-cli/policies",
		"/Library/Application Support/GeminiCli/settings.json", "/Library/Application Support/GeminiCli/system-defaults.json",
		"/Library/Application Support/GeminiCli/policies"},
}
