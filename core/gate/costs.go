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
// (cmd/joule, from the host registry in plugins/hosts).
//
// System-wide (managed) settings are not among them: only root writes
// them, and protecting /etc would make every command that names /etc a
// tamper with the gate.
type ConfigPaths struct {
	Project []string // relative to each workspace root
	User    []string // relative to the user's home
}

// ProtectedPaths lists what no capability may write: joule's own home (keys,
// grants, the store), git's configuration in each workspace root, and the
// hosts' configuration, in each workspace root and in the user's home. The paths are returned as given; the gate resolves them.
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
	return out
}
