package hosts

import (
	"slices"
	"testing"

	"github.com/joulehook/joule/plugins/hook"
)

// TestSystemFilesAreManaged: the file each system installer writes is one
// of its host's Managed paths, the registry's one list of them.
func TestSystemFilesAreManaged(t *testing.T) {
	t.Setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "")
	n := 0
	for _, h := range All() {
		if h.System == nil {
			continue
		}
		n++
		changes, err := h.System.PlanSystem(hook.SystemScope{Client: "/usr/local/libexec/joule/joule-hook", Contain: hook.Contained}, false)
		if err != nil {
			t.Errorf("%s: %v", h.Name, err)
			continue
		}
		for _, c := range changes {
			if !slices.Contains(h.Managed, c.Path) {
				t.Errorf("%s's system install writes %s, which is not among its Managed paths %v", h.Name, c.Path, h.Managed)
			}
			if c.After == nil || !hook.IsSystemLine(string(c.After), h.Name) {
				t.Errorf("%s's system install of %s holds no system hook line:\n%s", h.Name, c.Path, c.After)
			}
		}
	}
	if n < 3 {
		t.Errorf("only %d hosts install system-wide", n)
	}
}
