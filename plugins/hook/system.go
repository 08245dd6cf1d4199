package hook

import (
	"strings"
)

// SystemInstaller writes a host's managed (system-wide) settings for
// joule install --system: files only root writes, which the host reads
// above the user's own, so that no setting of the user's removes or
// overrides joule's hook (docs/hosts.md, "System mode").
type SystemInstaller interface {
	// PlanSystem computes the changes to the host's managed settings that
	// install (or, with uninstall, remove) joule's system hook, keeping
	// every entry of the administrator's.
	PlanSystem(s SystemScope, uninstall bool) ([]Change, error)
	// CheckSystem inspects the managed settings after an install.
	CheckSystem(s SystemScope) []Finding
}

// SystemScope is a system install: the thin client the hooks run, in the
// root-owned directory of the system's binaries, and how it finds the
// system gate.
type SystemScope struct {
	// Client is the absolute path of joule-hook.
	Client string
	// Config is the system configuration's path, "" for the default
	// (home.SystemConfig): the hook line names any other.
	Config string
	// Contain is the containment mode of the hook line.
	Contain ContainMode
}

// SystemFlag is the thin client's flag for system mode: it asks the system
// gate and nothing else.
const SystemFlag = "--system"

// SystemCommand is the hook command line of a system install for host:
// joule-hook --system[=CONFIG] HOST [--contain | --no-contain].
func SystemCommand(s SystemScope, host string) string {
	flag := SystemFlag
	if s.Config != "" {
		flag += "=" + ShellQuote(s.Config)
	}
	return ShellQuote(s.Client) + " " + flag + " " + host + s.Contain.Flag()
}

// IsSystemLine reports whether cmd runs joule-hook --system for host, in
// any containment mode, with or without a guard around it.
func IsSystemLine(cmd, host string) bool {
	i := strings.Index(cmd, "joule-hook")
	if i < 0 {
		return false
	}
	rest := strings.TrimLeft(cmd[i+len("joule-hook"):], `'"`)
	rest, ok := strings.CutPrefix(rest, " "+SystemFlag)
	if !ok {
		return false
	}
	if v, ok := strings.CutPrefix(rest, "="); ok {
		// A quoted configuration path: up to the space before the host.
		j := strings.Index(v, " "+host)
		if j < 0 {
			return false
		}
		rest = v[j:]
	}
	rest, ok = strings.CutPrefix(rest, " "+host)
	if !ok {
		return false
	}
	for _, m := range []ContainMode{Contained, NoContain, ""} {
		if f := m.Flag(); strings.HasPrefix(rest, f) {
			after := rest[len(f):]
			if after == "" || after[0] == ' ' || after[0] == ')' || after[0] == '\'' || after[0] == '"' {
				return true
			}
		}
	}
	return false
}
