// Package hosts is the one list of the hosts joule serves. Each host's
// package describes itself in a hook.Host (its adapter, installer,
// containment, trust steps and the files it reads as configuration), and
// this list is where joule hook, joule install, the resident gate, the
// gate's protected paths and the thin client's deny table (go generate,
// below) find them. A new host is its package plus one line in all.
package hosts

//go:generate go run ./internal/gendeny ../hook/resident/deny_table.go

import (
	"slices"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/antigravity"
	"github.com/joulehook/joule/plugins/claudecode"
	"github.com/joulehook/joule/plugins/cline"
	"github.com/joulehook/joule/plugins/codex"
	"github.com/joulehook/joule/plugins/cursor"
	"github.com/joulehook/joule/plugins/geminicli"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/jetbrains"
	"github.com/joulehook/joule/plugins/neovim"
	"github.com/joulehook/joule/plugins/opencode"
	"github.com/joulehook/joule/plugins/qwencode"
	"github.com/joulehook/joule/plugins/vscode"
	"github.com/joulehook/joule/plugins/windsurf"
	"github.com/joulehook/joule/plugins/zed"
)

// all is the registry: one line per host.
var all = []hook.Host{
	antigravity.Entry,
	claudecode.Entry,
	cline.Entry,
	codex.Entry,
	cursor.Entry,
	geminicli.Entry,
	jetbrains.Entry,
	neovim.Entry,
	opencode.Entry,
	qwencode.Entry,
	vscode.Entry,
	windsurf.Entry,
	zed.Entry,
}

// All returns every host, sorted by name.
func All() []hook.Host {
	out := slices.Clone(all)
	slices.SortFunc(out, func(a, b hook.Host) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the host named name.
func Lookup(name string) (hook.Host, bool) {
	for _, h := range all {
		if h.Name == name {
			return h, true
		}
	}
	return hook.Host{}, false
}

// Names returns the sorted names of the hosts that keep reports true.
func Names(keep func(hook.Host) bool) []string {
	var out []string
	for _, h := range All() {
		if keep(h) {
			out = append(out, h.Name)
		}
	}
	return out
}

// Hooked reports a host joule hook serves.
func Hooked(h hook.Host) bool { return h.Adapter != nil }

// Installable reports a host joule install serves.
func Installable(h hook.Host) bool { return h.Installer != nil }

// Contained reports a host joule hook --contain serves.
func Contained(h hook.Host) bool { return h.Contain != "" }

// Config is every host's configuration paths in one, each path once, for
// the gate to protect (gate.Gate.Hosts): the fixed ones, each host's
// UserDirs at their default places, and, for the variables getenv sets,
// below their values (Abs; a relative value against cwd). A hook runs in
// the host's environment, so the gate follows $CODEX_HOME and the like as
// the host does.
func Config(getenv func(string) string, cwd string) gate.ConfigPaths {
	var c gate.ConfigPaths
	for _, h := range All() {
		c.Project = appendNew(c.Project, h.Config.Project)
		c.Walk = appendNew(c.Walk, h.Config.Walk)
		c.User = appendNew(c.User, h.Config.User)
		c.Abs = appendNew(c.Abs, h.Config.Abs)
		for _, d := range h.UserDirs {
			user, abs := d.Resolve(getenv, cwd)
			c.User = appendNew(c.User, user)
			c.Abs = appendNew(c.Abs, abs)
		}
	}
	return c
}

func appendNew(to, from []string) []string {
	for _, p := range from {
		if !slices.Contains(to, p) {
			to = append(to, p)
		}
	}
	return to
}
