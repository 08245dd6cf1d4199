package codex

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources: [src] is github.com/openai/codex, codex-rs: config_loader/mod.rs
// (load_config_layers_state, find_project_root, load_project_layers),
// hooks/src/engine/discovery.rs (discover_handlers: hooks.json in each
// layer's folder), core-skills/src/loader.rs (skill_roots_from_layer_stack,
// repo_agents_skill_roots), utils/home-dir/src/lib.rs (find_codex_home,
// find_agents_home); [docs] developers.openai.com/codex (config, security).

// Entry is the Codex CLI in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	System:    SystemInstaller{},
	Contain:   "containment: allowed shell commands run under joule exec (%s), inside Codex's own sandbox and approval policy, which still apply to the rewritten line",
	Trust:     "its trust of a project and of a hook is a line in its config.toml",
	Config: gate.ConfigPaths{
		// A config layer is a .codex directory: config.toml (MCP servers,
		// [hooks], sandbox and approval policy, profiles), hooks.json,
		// rules, skills [src: load_project_layers, discover_handlers,
		// skill_roots_from_layer_stack]. Repository skills are
		// .agents/skills [src: repo_agents_skill_roots], whose
		// agents/openai.yaml names MCP servers to install [src:
		// resolve_dependency_tool]; a repository's plugin marketplace is
		// .agents/plugins/marketplace.json [3p: repositories shipping
		// one]. Codex's own Linux sandbox keeps .codex
		// and .agents read-only in its writable roots [docs: security].
		Project: []string{".codex", ".agents/skills", ".agents/plugins"},
		// Both are read in every directory from the working directory
		// up to the project root, the nearest ancestor holding a
		// project_root_markers entry (.git by default) [src:
		// find_project_root, load_project_layers,
		// dirs_between_project_root_and_cwd].
		Walk: []string{".codex", ".agents/skills"},
	},
	UserDirs: []hook.UserDir{
		// $CODEX_HOME (must exist; canonicalized) or ~/.codex [src:
		// find_codex_home]: the user layer, its hooks.json, skills,
		// rules, plugins, the trust of projects and hooks, and .env,
		// which Codex loads into its own environment.
		{Env: "CODEX_HOME", Home: ".codex"},
		// The user's skills and personal plugin marketplace:
		// $AGENTS_HOME or ~/.agents [src: find_agents_home,
		// skill_roots_from_layer_stack_inner; 3p: the marketplace at
		// ~/.agents/plugins/marketplace.json].
		{Env: "AGENTS_HOME", Home: ".agents", Paths: []string{"skills", "plugins"}},
	},
	// requirements.toml (allowed policies, managed hooks), the legacy
	// managed_config.toml and the system config layer, a config folder
	// whose skills/ and rules/ count too, on Unix [src:
	// DEFAULT_REQUIREMENTS_TOML_FILE_UNIX, SYSTEM_CONFIG_TOML_FILE_UNIX].
	Managed: []string{RequirementsFile, "/etc/codex/managed_config.toml", "/etc/codex/config.toml",
		"/etc/codex/hooks.json", "/etc/codex/skills", "/etc/codex/rules"},
}
