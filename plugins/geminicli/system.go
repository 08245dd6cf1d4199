package geminicli

import (
	"os"
	"slices"

	"github.com/joulehook/joule/plugins/hook"
)

// SystemSettingsPath is Gemini CLI's system settings, which override every
// other layer: $GEMINI_CLI_SYSTEM_SETTINGS_PATH, else systemSettings [src:
// getSystemSettingsPath].
func SystemSettingsPath() string {
	if p := os.Getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH"); p != "" {
		return p
	}
	return systemSettings
}

// SystemInstaller writes joule's hook into Gemini CLI's system settings for
// joule install --system. Gemini merges hooks.BeforeTool from every layer
// (concat), so no user or project file removes it, and the system layer's
// hooksConfig.enabled overrides theirs. It also turns folder trust off in
// the system layer: Gemini runs no configured hook, the system's included,
// in a folder it does not trust [src: processHooksFromConfig], and the
// trusted folders are the user's own file. What the system layer cannot
// stop is hooksConfig.disabled, a union across layers: a user's settings
// may disable a hook by name (docs/hosts.md, "System mode").
type SystemInstaller struct{}

var _ hook.SystemInstaller = SystemInstaller{}

// SystemWrapper is the hook command of a system install: the thin client
// inside the wrapper that answers a deny itself when it gives Gemini no
// answer of its form.
func SystemWrapper(s hook.SystemScope) string {
	return guard.Line(hook.Scope{}, Host, hook.SystemCommand(s, Host))
}

func isOurSystem(v any) bool {
	m, _ := v.(map[string]any)
	cmd, _ := m["command"].(string)
	return hook.IsSystemLine(cmd, Host)
}

// PlanSystem implements hook.SystemInstaller.
func (SystemInstaller) PlanSystem(s hook.SystemScope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(SystemSettingsPath())
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	handler := map[string]any{"type": "command", "command": SystemWrapper(s), "name": "joule",
		"description": "joule gate (system): decides every tool call from the machine's grants", "timeout": Timeout}
	if err := hook.SetGroups(hooks, []string{BeforeTool}, "*", handler, isOurSystem, !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	if !uninstall {
		cfg, err := hook.Object(f.Doc, "hooksConfig", f.Path)
		if err != nil {
			return nil, err
		}
		cfg["enabled"] = true
		sec, err := hook.Object(f.Doc, "security", f.Path)
		if err != nil {
			return nil, err
		}
		ft, err := hook.Object(sec, "folderTrust", f.Path)
		if err != nil {
			return nil, err
		}
		ft["enabled"] = false
	}
	c := f.Change(uninstall)
	c.Mode = 0o644
	return []hook.Change{c}, nil
}

// CheckSystem implements hook.SystemInstaller.
func (SystemInstaller) CheckSystem(s hook.SystemScope) []hook.Finding {
	f, err := hook.ReadJSON(SystemSettingsPath())
	if err != nil {
		return []hook.Finding{{Text: err.Error()}}
	}
	var out []hook.Finding
	hooks, _ := f.Doc["hooks"].(map[string]any)
	if hook.HasHandler(hooks, BeforeTool, func(m map[string]any) bool { return isOurSystem(m) && m["command"] == SystemWrapper(s) }) {
		out = append(out, hook.Finding{OK: true, Text: "BeforeTool hook on every tool in " + f.Path + " (system settings: merged into every session), wrapped so that a failed, silent or hung client is a deny"})
	} else {
		out = append(out, hook.Finding{Text: "no joule system hook in " + f.Path + ": run sudo joule install --system gemini-cli again"})
	}
	cfg, _ := f.Doc["hooksConfig"].(map[string]any)
	if cfg["enabled"] != true {
		out = append(out, hook.Finding{Text: f.Path + " does not set hooksConfig.enabled: true, so a user's settings could turn hooks off"})
	}
	if disabled, _ := cfg["disabled"].([]any); slices.Contains(disabled, any("joule")) {
		out = append(out, hook.Finding{Text: f.Path + " lists joule in hooksConfig.disabled"})
	}
	sec, _ := f.Doc["security"].(map[string]any)
	ft, _ := sec["folderTrust"].(map[string]any)
	if ft["enabled"] == false {
		out = append(out, hook.Finding{OK: true, Text: "folder trust is off in the system settings: Gemini runs joule's hook in every folder"})
	} else {
		out = append(out, hook.Finding{Text: f.Path + " leaves folder trust on: in a folder the user does not trust, Gemini runs no hook, joule's included"})
	}
	out = append(out, hook.Finding{OK: true, Weak: true, Text: "Gemini CLI merges hooksConfig.disabled from every layer: a user's settings.json may still name joule's hook there (the gate refuses agents' writes to it; docs/hosts.md, System mode)"})
	if st, err := os.Stat(s.Client); err != nil || st.Mode()&0o111 == 0 {
		out = append(out, hook.Finding{Text: s.Client + " is not an executable file; every call would be denied"})
	}
	return out
}
