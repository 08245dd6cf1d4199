package claudecode

import (
	"os"

	"github.com/joulehook/joule/plugins/hook"
)

// SystemInstaller writes joule's hook into Claude Code's managed settings
// (ManagedSettings) for joule install --system, with allowManagedHooksOnly:
// the user's, project's and local hooks then do not run, and no setting of
// theirs removes a managed hook (disableAllHooks outside the managed file
// leaves managed hooks running [bin: the hooks configuration returns the
// policySettings hooks when the merged settings disable all hooks]). Only
// the managed file's own disableAllHooks would.
type SystemInstaller struct{}

var _ hook.SystemInstaller = SystemInstaller{}

// SystemHandler is the PreToolUse handler a system install writes.
func SystemHandler(s hook.SystemScope) map[string]any {
	h := pluginHandler()
	h["command"] = hook.SystemCommand(s, Host)
	return h
}

func isOurSystem(h any) bool {
	m, _ := h.(map[string]any)
	cmd, _ := m["command"].(string)
	return hook.IsSystemLine(cmd, Host)
}

// PlanSystem implements hook.SystemInstaller.
func (SystemInstaller) PlanSystem(s hook.SystemScope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(ManagedSettings)
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	if err := hook.SetGroups(hooks, []string{PreToolUse}, "*", SystemHandler(s), isOurSystem, !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	if !uninstall {
		f.Doc["allowManagedHooksOnly"] = true
	}
	c := f.Change(uninstall)
	c.Mode = 0o644
	return []hook.Change{c}, nil
}

// CheckSystem implements hook.SystemInstaller.
func (SystemInstaller) CheckSystem(s hook.SystemScope) []hook.Finding {
	f, err := hook.ReadJSON(ManagedSettings)
	if err != nil {
		return []hook.Finding{{Text: err.Error()}}
	}
	var out []hook.Finding
	hooks, _ := f.Doc["hooks"].(map[string]any)
	armed := hook.HasHandler(hooks, PreToolUse, func(m map[string]any) bool {
		return isOurSystem(m) && m["command"] == hook.SystemCommand(s, Host) && m["onFailure"] == "block"
	})
	if armed {
		out = append(out, hook.Finding{OK: true, Text: "PreToolUse hook on every tool in " + f.Path + " (managed: no user, project or local setting removes it), onFailure: block"})
	} else {
		out = append(out, hook.Finding{Text: "no joule system hook with onFailure: block in " + f.Path + ": run sudo joule install --system claude-code again"})
	}
	if f.Doc["allowManagedHooksOnly"] == true {
		out = append(out, hook.Finding{OK: true, Text: "allowManagedHooksOnly: only managed hooks run"})
	} else {
		out = append(out, hook.Finding{Text: f.Path + " does not set allowManagedHooksOnly: the user's own hooks run beside joule's"})
	}
	if f.Doc["disableAllHooks"] == true {
		out = append(out, hook.Finding{Text: f.Path + " sets disableAllHooks: true, which turns off managed hooks too: remove it"})
	}
	if st, err := os.Stat(s.Client); err != nil || st.Mode()&0o111 == 0 {
		out = append(out, hook.Finding{Text: s.Client + " is not an executable file; every call would be blocked"})
	}
	return out
}
