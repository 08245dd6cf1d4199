package hook

import "github.com/joulehook/joule/core/gate"

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
	// joule hook --contain serves it (docs/hosts.md, "Containment on the
	// other hosts"). It is what joule install --contain tells the user,
	// with %s for the sandbox mode.
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
	// MCP servers, commands, the settings that switch its own safeguards
	// off), per workspace root and per user home; the gate protects them.
	Config gate.ConfigPaths
	// Managed are the absolute paths of the host's system-wide (managed,
	// enterprise) settings: only root writes them, so the gate does not
	// guard them, and an install reads them for policies that override it.
	Managed []string
}
