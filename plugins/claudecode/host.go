package claudecode

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Sources, each rule below citing one: [bin] is the bundled JavaScript in
// the claude binary of @anthropic-ai/claude-code 2.1.332 (the e2e suite's
// node_modules; `strings bin/claude.exe`, the quoted code found by the
// names given); [docs] is code.claude.com/docs (settings, hooks, skills,
// sub-agents, plugins). Claude Code's own Bash sandbox write-denies, in each
// writable directory, .claude/{settings.json,settings.local.json,skills,
// agents,commands,hooks,workflows,routines,launch.json,scheduled_tasks.json}
// and .mcp.json, and in its config directory the same names plus
// shell-snapshots, session-env, jobs, daemon, daemon.json and
// remote-settings.json [bin: the sandbox write-deny list built with
// `for(let B of["shell-snapshots","session-env","plugins","hooks",...])`
// and `pe(Fe(B,".claude","skills"),...)`]: the lists below are that set
// less what holds instructions or prompts the gated agent runs (CLAUDE.md,
// rules, output-styles, loop.md, routines, scheduled tasks) and less
// launch.json, which Claude Code lets its own file tools write.

// Entry is Claude Code in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	System:    SystemInstaller{},
	Contain:   "containment: allowed Bash commands run under joule exec (%s); Claude Code still asks as it would, its rules now matching the joule exec line",
	Resident:  true,
	Config: gate.ConfigPaths{
		// In the directory Claude Code starts in [bin: FQn, the
		// projectSettings and localSettings roots are the cwd; Tx:
		// ".claude/settings.json", ".claude/settings.local.json"]:
		// settings (hooks, permissions, MCP servers, plugins, the
		// statusLine command), hook scripts, the skills, agents and
		// commands whose frontmatter carries hooks ["Registered N hooks
		// from skill"] and whose bodies run shell lines, workflows
		// (.claude/workflows/NAME.js, scripts it runs [bin]),
		// .claude-plugin (the project as a plugin or marketplace [bin:
		// skill-as-plugin]) and .mcp.json [docs]. Not .claude whole:
		// --worktree puts the session's work tree in .claude/worktrees,
		// and CLAUDE.md is instructions, not code.
		Project: []string{".claude/settings.json", ".claude/settings.local.json", ".claude/hooks", ".claude/skills",
			".claude/agents", ".claude/commands", ".claude/workflows", ".claude-plugin", ".mcp.json"},
		// Skills, commands, agents and workflows load "from .claude
		// folders above the working directory (as far as the
		// repository's root; outside a repository, the home folder or
		// the disk's root)" [bin: the permissions.additionalDirectories
		// description]. And settings.local.json at the repository's root
		// when Claude Code starts below it [bin: FQn's localSettings
		// root, uW/cqs: the canonical git root].
		Walk: []string{".claude/skills", ".claude/agents", ".claude/commands", ".claude/workflows", ".claude/settings.local.json"},
	},
	UserDirs: []hook.UserDir{
		// The config directory, $CLAUDE_CONFIG_DIR or ~/.claude [bin:
		// `process.env.CLAUDE_CONFIG_DIR||...".claude"`; docs]: the same
		// settings, hooks, skills, agents, commands and workflows, the
		// installed plugins, and what Claude Code runs or acts on
		// without asking: shell-snapshots (sourced before each Bash
		// command), session-env (its hooks' environment for each Bash
		// command), jobs and daemon (background sessions), daemon.json,
		// and remote-settings.json (server-managed settings, which
		// outrank the user's) [bin: the deny messages "This path is in,
		// or leads into, the jobs folder of the Claude Code config
		// directory", …]. Not the whole directory: the agent writes its
		// own memory below projects/.
		{Env: "CLAUDE_CONFIG_DIR", Home: ".claude", Paths: []string{"settings.json", "hooks", "skills", "agents", "commands",
			"workflows", "plugins", "shell-snapshots", "session-env", "jobs", "daemon", "daemon.json", "remote-settings.json"}},
		// User and local MCP servers, the trust of each project, which
		// moves into $CLAUDE_CONFIG_DIR too [bin: `configPath:
		// v(process.env.CLAUDE_CONFIG_DIR||ae(),".claude"+RD()+".json")`].
		{Env: "CLAUDE_CONFIG_DIR", Home: ".", Paths: []string{".claude.json"}},
	},
	// /etc/claude-code on Linux, with the managed-settings.d drop-in
	// directory [bin: pr(), `K(e,"managed-settings.d")`], and macOS's;
	// managed-mcp.json beside it [docs].
	Managed: []string{ManagedSettings, "/etc/claude-code/managed-settings.d", "/etc/claude-code/managed-mcp.json",
		"/Library/Application Support/ClaudeCode/managed-settings.json", "/Library/Application Support/ClaudeCode/managed-settings.d",
		"/Library/Application Support/ClaudeCode/managed-mcp.json"},
}
