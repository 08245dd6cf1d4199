package hook

import (
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/gate"
)

// Host is what joule knows of one host, kept in the host's own package and
// listed once in plugins/hosts: how joule hook, joule install, the resident
// gate and the thin client serve it, and which of its files the gate keeps
// every agent from writing.
type Host struct {
	// Name is the host's name on the command line: joule hook NAME,
	// joule install NAME.
	Name string
	// Adapter returns the host's hook adapter for a hook run in dir, which
	// stands in for the working directory some hosts leave out of a
	// payload. nil for a host joule does not serve through hooks (the ACP
	// editors).
	Adapter func(dir string) Adapter
	// Installer writes and checks the host's configuration.
	Installer Installer
	// Contain, when set, says that the host's hook can replace a shell
	// command's input without approving it past the host's own prompt, so
	// joule hook --contain serves it and joule install contains by
	// default (docs/hosts.md, "Containment on the other hosts"). It is the
	// armed check's line on containment, with %s for the sandbox mode.
	Contain string
	// Resident is set for a host whose http hooks joule serve answers
	// (joule install --resident).
	Resident bool
	// Trust, when set, says what joule install --trust does for the host,
	// as its own trust dialogs would; TrustProjectOnly limits it to an
	// install with --project.
	Trust            string
	TrustProjectOnly bool
	// Config is where the host reads files it acts on (hooks, plugins,
	// MCP servers, commands, skills and agents that carry hooks, the
	// settings that switch its own safeguards off): per workspace root
	// (Project), in the directories above it that the host walks (Walk),
	// and in the user's home at places no variable moves (User; Abs stays
	// empty: UserDirs fills it). The gate
	// protects them. Each path carries its source in a comment.
	Config gate.ConfigPaths
	// UserDirs is the host's user configuration whose place an
	// environment variable moves ($CODEX_HOME, $CLAUDE_CONFIG_DIR,
	// $XDG_CONFIG_HOME): protected at the default place and, where the
	// variable is set, below its value (plugins/hosts.Config).
	UserDirs []UserDir
	// Managed are the absolute paths of the host's system-wide (managed,
	// enterprise) settings: only root writes them, so the gate does not
	// guard them, and an install reads them for policies that override it.
	Managed []string
	// System, when set, writes joule's hook into the host's managed
	// settings (one of Managed) for joule install --system.
	System SystemInstaller
}

// UserDir is user configuration that the host finds below the directory an
// environment variable names, or below a default place in the home.
type UserDir struct {
	// Env names the variable; a host reads it when it is set and not
	// empty (a relative value against its working directory).
	Env string
	// Home is the default place, relative to the home directory ("." for
	// the home itself), or empty when the host has none (OPENCODE_CONFIG:
	// only the variable names the file).
	Home string
	// Paths are the files and directories below it the host reads; none
	// when the variable names the file or directory itself.
	Paths []string
}

// Resolve returns the places u names: below the default place (relative to
// the home directory, as Config.User) and below the variable's value
// (absolute, as Config.Abs) when getenv sets it; relative values are taken
// against cwd, and dropped when cwd is empty; ~ and ~/… against the home,
// among user.
func (u UserDir) Resolve(getenv func(string) string, cwd string) (user, abs []string) {
	below := func(dir string) []string {
		if len(u.Paths) == 0 {
			return []string{filepath.Clean(dir)}
		}
		var out []string
		for _, p := range u.Paths {
			out = append(out, filepath.Join(dir, p))
		}
		return out
	}
	if u.Home != "" {
		user = below(u.Home)
	}
	v := ""
	if getenv != nil {
		v = getenv(u.Env)
	}
	switch {
	case v == "":
	case filepath.IsAbs(v):
		abs = below(v)
	case v == "~" || strings.HasPrefix(v, "~/"):
		// Qwen Code expands it; a host that does not would look for a
		// directory named ~, which nobody has.
		for _, p := range below("." + strings.TrimPrefix(v, "~")) {
			if p != "." { // the home itself: not a directory to freeze
				user = append(user, p)
			}
		}
	case cwd != "":
		abs = below(filepath.Join(cwd, v))
	}
	return user, abs
}
