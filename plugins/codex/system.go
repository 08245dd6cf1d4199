package codex

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/joulehook/joule/plugins/hook"
)

// RequirementsFile is Codex's system requirements on Unix [src:
// DEFAULT_REQUIREMENTS_TOML_FILE_UNIX]: what an administrator requires of
// every session, above the user's configuration, which cannot loosen it.
const RequirementsFile = "/etc/codex/requirements.toml"

// SystemInstaller writes joule's hook into RequirementsFile for joule
// install --system: as [hooks] there, a managed hook, which Codex runs
// without asking the user to trust it and which the user's [hooks.state]
// cannot turn off [src: hooks/src/engine/discovery.rs, hook_enabled and
// hook_trust_status for is_managed]; with allow_managed_hooks_only, the
// user's and projects' hooks do not run; and with [features] hooks = true
// required, the user's configuration cannot turn hooks off [src:
// ConfigRequirementsToml.feature_requirements, renamed "features"].
type SystemInstaller struct{}

var _ hook.SystemInstaller = SystemInstaller{}

// The lines around joule's part of RequirementsFile, which stands first
// in the file (its keys are top-level; after a table they would belong to
// it), in dotted and inline form so that it opens no table of its own.
const (
	systemBegin = "# joule: begin system hook (written by `sudo joule install --system codex`; `--uninstall` removes it)"
	systemEnd   = "# joule: end system hook"
)

// systemEvents are the events a system install hooks, as a user install
// does.
var systemEvents = []string{PreToolUse, PermissionRequest}

// SystemCommand is the hook line of a system install: the thin client in
// the fail-closed guard (Codex runs the tool on any failure of a hook).
func SystemCommand(s hook.SystemScope) string {
	return guard.Line(hook.Scope{}, Host, hook.SystemCommand(s, Host))
}

func systemBlock(s hook.SystemScope) string {
	handler := fmt.Sprintf(`[{ matcher = ".*", hooks = [{ type = "command", command = %s, timeout = %d, statusMessage = "joule gate" }] }]`,
		tomlQuote(SystemCommand(s)), timeout)
	var b strings.Builder
	b.WriteString(systemBegin + "\n")
	b.WriteString("allow_managed_hooks_only = true\n")
	b.WriteString("features.hooks = true\n")
	for _, ev := range systemEvents {
		b.WriteString("hooks." + ev + " = " + handler + "\n")
	}
	b.WriteString(systemEnd + "\n")
	return b.String()
}

// requirements is what CheckSystem and PlanSystem read back.
type requirements struct {
	AllowManagedHooksOnly *bool                      `toml:"allow_managed_hooks_only"`
	Features              map[string]any             `toml:"features"`
	Hooks                 map[string][]systemMatcher `toml:"hooks"`
}

type systemMatcher struct {
	Matcher string           `toml:"matcher"`
	Hooks   []map[string]any `toml:"hooks"`
}

// armed reports what of joule's system hook the requirements hold.
func (r requirements) armed(s hook.SystemScope) (managedOnly, featureOn bool, events []string) {
	managedOnly = r.AllowManagedHooksOnly != nil && *r.AllowManagedHooksOnly
	featureOn, _ = r.Features["hooks"].(bool)
	for _, ev := range systemEvents {
		for _, g := range r.Hooks[ev] {
			for _, h := range g.Hooks {
				if h["command"] == SystemCommand(s) && (g.Matcher == ".*" || g.Matcher == "") {
					events = append(events, ev)
				}
			}
		}
	}
	return
}

// PlanSystem implements hook.SystemInstaller.
func (SystemInstaller) PlanSystem(s hook.SystemScope, uninstall bool) ([]hook.Change, error) {
	path := RequirementsFile
	before, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	c := hook.Change{Path: path, Before: before, After: before, Mode: 0o644}
	if _, err := toml.Decode(string(before), new(map[string]any)); err != nil {
		return nil, fmt.Errorf("%s is not valid TOML (%v); fix it, joule will not edit it", path, err)
	}
	kept, had, err := withoutMarked(before, systemBegin, systemEnd, path)
	if err != nil {
		return nil, err
	}
	if uninstall {
		if had {
			c.After = kept
			if len(bytes.TrimSpace(kept)) == 0 {
				c.After = nil
			}
		}
		return []hook.Change{c}, nil
	}
	block := systemBlock(s)
	after := []byte(block)
	if len(bytes.TrimSpace(kept)) > 0 {
		after = append(append(after, '\n'), kept...)
	}
	var r requirements
	_, err = toml.Decode(string(after), &r)
	managedOnly, featureOn, events := r.armed(s)
	if err != nil || !managedOnly || !featureOn || len(events) != len(systemEvents) {
		why := "its own settings contradict them"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("%s: joule's lines would not hold there (%s: it already has allow_managed_hooks_only, a [features] or a [hooks] table); merge these lines into it by hand, then run the install again:\n%s", path, why, block)
	}
	c.After = after
	return []hook.Change{c}, nil
}

// CheckSystem implements hook.SystemInstaller.
func (SystemInstaller) CheckSystem(s hook.SystemScope) []hook.Finding {
	b, err := os.ReadFile(RequirementsFile)
	if err != nil {
		return []hook.Finding{{Text: "no " + RequirementsFile + ": run sudo joule install --system codex"}}
	}
	var r requirements
	if _, err := toml.Decode(string(b), &r); err != nil {
		return []hook.Finding{{Text: RequirementsFile + " does not parse (" + err.Error() + "); Codex will not start until it does"}}
	}
	managedOnly, featureOn, events := r.armed(s)
	var out []hook.Finding
	if len(events) == len(systemEvents) {
		out = append(out, hook.Finding{OK: true, Text: strings.Join(events, " and ") + " hooks on every tool in " + RequirementsFile + " (managed: trusted without asking, and no user setting turns them off)"})
	} else {
		out = append(out, hook.Finding{Text: "joule's " + strings.Join(systemEvents, " and ") + " hooks are not all in " + RequirementsFile + ": run sudo joule install --system codex again"})
	}
	if managedOnly {
		out = append(out, hook.Finding{OK: true, Text: "allow_managed_hooks_only: only managed hooks run"})
	} else {
		out = append(out, hook.Finding{Text: RequirementsFile + " does not set allow_managed_hooks_only = true: the user's own hooks run beside joule's"})
	}
	if featureOn {
		out = append(out, hook.Finding{OK: true, Text: "[features] hooks = true is required: the user's configuration cannot turn hooks off"})
	} else {
		out = append(out, hook.Finding{Text: RequirementsFile + " does not require [features] hooks = true: a user's config.toml could turn every hook off"})
	}
	if st, err := os.Stat(s.Client); err != nil || st.Mode()&0o111 == 0 {
		out = append(out, hook.Finding{Text: s.Client + " is not an executable file; every call would be blocked"})
	}
	return out
}
