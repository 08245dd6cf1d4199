package claudecode

import (
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

// Entry is Claude Code in the host registry (plugins/hosts).
var Entry = hook.Host{
	Name:      Host,
	Adapter:   func(string) hook.Adapter { return Adapter{} },
	Installer: Installer{},
	Contain:   "containment: allowed Bash commands run under joule exec (%s); Claude Code still asks as it would, its rules now matching the joule exec line",
	Resident:  true,
	Config: gate.ConfigPaths{
		// Settings (hooks, permissions, MCP servers, plugins), hook scripts,
		// and the skills, agents and commands whose frontmatter carries
		// hooks and whose bodies run shell lines [docs]; .claude-plugin
		// makes the project a plugin or marketplace [src]. Not .claude
		// whole: --worktree puts the session's work tree in
		// .claude/worktrees, and CLAUDE.md is instructions, not code.
		Project: []string{".claude/settings.json", ".claude/settings.local.json", ".claude/hooks", ".claude/skills",
			".claude/agents", ".claude/commands", ".claude-plugin", ".mcp.json"},
		// The same in ~/.claude, the installed plugins, and ~/.claude.json
		// (user and local MCP servers) [docs]. Not ~/.claude whole: the
		// agent writes its own memory below ~/.claude/projects.
		User: []string{".claude/settings.json", ".claude/hooks", ".claude/skills", ".claude/agents", ".claude/commands",
			".claude/plugins", ".claude.json"},
	},
	// [docs] Linux and macOS; managed-mcp.json beside it.
	Managed: []string{ManagedSettings, "/etc/claude-code/managed-mcp.json",
		"/Library/Application Support/ClaudeCode/managed-settings.json", "/Library/Application Support/ClaudeCode/managed-mcp.json"},
}
