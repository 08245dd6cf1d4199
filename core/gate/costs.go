package gate

import (
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core"
)

// Costs maps a tool kind to the estimated energy, in µJ, that an allowed
// call debits from every link of the grant chain. The figures are coarse
// Estimator figures: the energy of the action itself on a developer machine
// (a process start and a short run for Bash, a file system call for Read),
// not of the model that asked for it, which the meter accounts for. Keys are
// tool names; "mcp" covers every MCP tool and "*" any other tool.
type Costs map[string]uint64

// DefaultCosts are the documented defaults (docs/gate.md); config.json
// overrides any of them.
var DefaultCosts = Costs{
	"Bash":         50_000, // 50 mJ: a process start plus a short run
	"Read":         1_000,  // 1 mJ
	"Glob":         2_000,
	"Grep":         5_000,
	"Write":        2_000,
	"Edit":         2_000,
	"MultiEdit":    3_000,
	"NotebookEdit": 2_000,
	"WebFetch":     500_000,   // 0.5 J: a network round trip and parsing
	"WebSearch":    1_000_000, // 1 J
	"mcp":          20_000,
	"*":            10_000,
}

// TierCosts are the reference per-tier consultation costs of Joule Code
// §5.1: the §1.1 class markers in µJ, tagged Estimator.
var TierCosts = map[core.Tier]uint64{core.L0: 1, core.L1: 10, core.L2: 1_000, core.L3: 1_000_000, core.L4: 10_000_000}

// Of returns the cost of one call of tool.
func (c Costs) Of(tool string) uint64 {
	if v, ok := c[tool]; ok {
		return v
	}
	if strings.HasPrefix(tool, "mcp__") {
		if v, ok := c["mcp"]; ok {
			return v
		}
	}
	if v, ok := c["*"]; ok {
		return v
	}
	return DefaultCosts["*"]
}

// Merge returns c with overrides applied.
func (c Costs) Merge(overrides Costs) Costs {
	out := Costs{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range overrides {
		out[k] = v
	}
	return out
}

// ConfigPaths are the files and directories a host reads as configuration
// or runs (hooks, plugins, MCP servers, commands, settings that switch its
// own safeguards off): an agent that writes one acts past the gate the next
// time the host starts. The gate knows no host; its caller fills them in
// (cmd/joule, from the host registry in plugins/hosts, which also resolves
// the environment variables that move a host's directory).
//
// System-wide (managed) settings are not among them: only root writes
// them, and protecting /etc would make every command that names /etc a
// tamper with the gate.
type ConfigPaths struct {
	// Project paths are relative to each workspace root.
	Project []string
	// Walk paths are relative to each directory above a workspace root, up
	// to the home directory (or /): what a host reads in every directory
	// between its working directory and the repository's root, or further
	// (.codex/, opencode.json, .claude/skills, .env). Those that exist are
	// protected (AncestorPaths).
	Walk []string
	// User paths are relative to the user's home directory.
	User []string
	// Abs paths are absolute: user configuration that an environment
	// variable moved ($CODEX_HOME, $CLAUDE_CONFIG_DIR, $XDG_CONFIG_HOME),
	// resolved by the caller in the environment the hook runs in.
	Abs []string
}

// ProtectedPaths lists what no capability may write: joule's own home (keys,
// grants, the store), git's configuration in each workspace root, and the
// hosts' configuration, in each workspace root, in the user's home and
// where the host's environment put it. The paths are returned as given; the
// gate resolves them. The hosts' Walk paths above the roots are not among
// them: they depend on what exists (AncestorPaths).
func ProtectedPaths(jouleHome, home string, roots []string, hosts ConfigPaths) []string {
	perProject := []string{
		".joule",
		// git runs what these name (core.fsmonitor, core.hooksPath,
		// aliases, filters, hooks) on the next git status or commit.
		".git/config", ".git/config.worktree", ".git/hooks", ".git/info", ".git/modules", ".git/commondir",
	}
	out := []string{jouleHome}
	for _, r := range roots {
		for _, p := range perProject {
			out = append(out, filepath.Join(r, p))
		}
		for _, p := range hosts.Project {
			out = append(out, filepath.Join(r, p))
		}
	}
	if home != "" {
		for _, p := range hosts.User {
			out = append(out, filepath.Join(home, p))
		}
	}
	for _, p := range hosts.Abs {
		if p = filepath.Clean(p); filepath.IsAbs(p) && !coversAny(p, home, roots) {
			out = append(out, p)
		}
	}
	return out
}

// coversAny reports a directory that holds the home or a workspace root: a
// variable set to the home itself (CODEX_HOME=$HOME) would otherwise make
// every file below it, the workspace among them, unwritable.
func coversAny(p, home string, roots []string) bool {
	if home != "" && within(filepath.Clean(home), p) {
		return true
	}
	for _, r := range roots {
		if within(filepath.Clean(r), p) {
			return true
		}
	}
	return false
}

// AncestorPaths lists the hosts' Walk paths in each directory above each
// workspace root, up to and including the home directory when the root
// lies below it (else up to /), that exist. A host started in the root
// reads them there (Codex up to the repository's root, OpenCode up to its
// work tree's, Claude Code's skills up to the repository's root or the
// home, Gemini CLI's and Qwen Code's .env up to / or the home). An absent
// one is left out: it lies outside the workspace, where no write happens
// without a grant rule, and protecting it would make the nearest existing
// directory above it, often a temp or cache tree the sandbox keeps
// writable, uncreatable for contained commands (docs/gate.md, "Paths").
func AncestorPaths(home string, roots []string, walk []string, exists func(string) bool) []string {
	if len(walk) == 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range roots {
		r = filepath.Clean(r)
		stop := "/"
		if home != "" && r != home && within(r, home) {
			stop = home
		}
		for d := filepath.Dir(r); ; d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				for _, p := range walk {
					if abs := filepath.Join(d, p); exists(abs) {
						out = append(out, abs)
					}
				}
			}
			if d == stop || d == "/" {
				break
			}
		}
	}
	return out
}
