package qwencode

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [src] is the bundle of @qwen-code/qwen-code 0.24.4 (the e2e
// suite's node_modules): chunks/chunk-EL2S73QY.js (class Storage:
// getGlobalQwenDir, getWorkspaceSettingsPath, getUserSkillsDirs,
// getUserWorkflowsDir, SKILL_PROVIDER_CONFIG_DIRS), chunks/chunk-DYLGEL4Y.js
// (findEnvFiles, getHomeEnvFallbackVars), chunks/chunk-DPEB6S2R.js (the
// skill manager's getSkillsBaseDirs and parseHookMatcher: skills carry
// hooks; the subagent manager's AGENT_CONFIG_DIR), chunks/chunk-OQMLQJEX.js
// (the MCP approvals path), chunks/chunk-HS5OZTQF.js (the trusted folders
// path), chunks/chunk-CCGFXABG.js (PROJECT_ENV_HARDCODED_EXCLUSIONS).

// Entry is Qwen Code in the host registry (plugins/hosts).
//
// It has no Contain: the PreToolUse answer cannot replace a tool's input
// (measured with 0.24.4), and the PermissionRequest hook that can fires
// only where Qwen would prompt and approves past that prompt, so joule
// install judges its commands by analysis alone and says so, refuses
// --contain and --no-contain, and a grant's rewrite is a deny.
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Config: gate.ConfigPaths{
		// In the directory it starts in (targetDir, the cwd): .qwen whole,
		// settings.json (hooks, MCP servers, tool policy), commands
		// (TOML whose !{...} runs shell), skills (their frontmatter
		// carries hooks), agents, workflows, extensions, .env [src:
		// getWorkspaceSettingsPath, getProjectCommandsDir,
		// getSkillsBaseDirs, getProjectWorkflowsDir, getExtensionsDir];
		// Qwen writes nothing of its own below a project's .qwen. Skills
		// in .agents/skills too [src: SKILL_PROVIDER_CONFIG_DIRS]. Not
		// the project's .env: Qwen Code keeps from it every name that
		// moves its home, its settings layers, its updates, TLS trust
		// and the loaders of the programs it starts [src:
		// PROJECT_ENV_HARDCODED_EXCLUSIONS].
		Project: []string{".qwen", ".agents/skills"},
		// The .env search walks from the working directory up to the
		// home, .qwen/.env before .env in each directory [src:
		// findEnvFiles].
		Walk: []string{".qwen/.env", ".env"},
		// The user's skills in the home's .agents, and the home's .env,
		// which Qwen reads in every project [src: getUserSkillsDirs,
		// findEnvFiles' home candidates].
		User: []string{".agents/skills", ".env"},
	},
	UserDirs: []hook.UserDir{
		// $QWEN_HOME (~ expanded, relative to the working directory) or
		// ~/.qwen [src: getGlobalQwenDir, resolvePath]: settings.json,
		// the folder-trust rules that decide whether a project's
		// settings load at all, the approvals of project MCP servers,
		// extensions and the extension store, commands, skills, agents,
		// workflows, its bin directory, and .env [src:
		// getGlobalSettingsPath, TRUSTED_FOLDERS_FILENAME,
		// MCP_APPROVALS_FILENAME, getUserExtensionsDir,
		// "extension-store", getUserCommandsDir, getUserSkillsDirs,
		// AGENT_CONFIG_DIR, getUserWorkflowsDir, getGlobalBinDir,
		// findEnvFiles]. Not ~/.qwen whole: Qwen keeps its sessions and
		// temporary files there. The default place stays protected when
		// $QWEN_HOME moves it: Qwen still reads ~/.qwen/.env then [src:
		// findEnvFiles, legacyQwenDir].
		{Env: "QWEN_HOME", Home: ".qwen", Paths: []string{"settings.json", "trustedFolders.json", "mcpApprovals.json",
			"extensions", "extension-store", "commands", "skills", "agents", "workflows", "bin", ".env"}},
		// Files the environment names instead [src: the MCP approvals
		// and trusted folders paths; ManagedSettings]: a system settings
		// file so named outranks the user's and the project's.
		{Env: "QWEN_CODE_MCP_APPROVALS_PATH"},
		{Env: "QWEN_CODE_TRUSTED_FOLDERS_PATH"},
		{Env: "QWEN_CODE_SYSTEM_SETTINGS_PATH"},
		{Env: "QWEN_CODE_SYSTEM_DEFAULTS_PATH"},
	},
	Managed: ManagedSettings,
}
