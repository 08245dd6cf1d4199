package cline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes the PreToolUse file hook Cline runs: a two-line script
// that execs joule hook cline.
type Installer struct{}

var _ hook.Installer = Installer{}

func hookPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".cline", "hooks", HookFile)
	}
	return filepath.Join(s.Home, ".cline", "hooks", HookFile)
}

// guard is what the script does when joule fails: Cline reads only its
// stdout and takes an empty one as no objection, so the script answers a
// deny itself when joule is missing, crashes or prints no JSON.
var guard = hook.Guard{Pass: `'{'*'}'`,
	Deny: `{"cancel":true,"errorMessage":"joule gave no decision (exit status %s); the task is stopped"}`}

// script is the hook Cline runs. Cline may run it from its hub daemon, a
// process that outlives the CLI and keeps another environment, so the
// script carries the JOULE_HOME it was installed with (Scope.JouleHome).
func script(s hook.Scope) []byte {
	return guard.Script(s, Host, hook.Command(s, Host), "joule gate: decides every Cline tool call from the active grant (joule install cline)")
}

func isOurs(b []byte) bool {
	return bytes.Contains(b, []byte("joule")) && (bytes.Contains(b, []byte(" hook "+Host)) || bytes.Contains(b, []byte("joule-hook "+Host)) || bytes.Contains(b, []byte("joule-hook' "+Host)))
}

// Plan implements hook.Installer. A PreToolUse hook of the user's own is
// never replaced.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	path := hookPath(s)
	before, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if before != nil && !isOurs(before) {
		if uninstall {
			return nil, nil
		}
		return nil, fmt.Errorf("%s is a PreToolUse hook that is not joule's; merge 'exec %s' into it yourself or move it", path, hook.Command(s, Host))
	}
	c := hook.Change{Path: path, Before: before, Mode: 0o755}
	if !uninstall {
		c.After = script(s)
	}
	return []hook.Change{c}, nil
}

// Check implements hook.Installer: the hook on disk must be the script this
// install writes (this binary, this JOULE_HOME) and executable.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	path := hookPath(s)
	b, err := os.ReadFile(path)
	st, serr := os.Stat(path)
	switch {
	case err == nil && serr == nil && bytes.Equal(b, script(s)) && st.Mode()&0o111 != 0:
		out = append(out, hook.Finding{OK: true, Text: "executable PreToolUse hook " + path})
	case err == nil && isOurs(b):
		out = append(out, hook.Finding{Text: "the PreToolUse hook at " + path + " is not the one this install writes (another joule or JOULE_HOME, or not executable): run joule install again"})
	default:
		out = append(out, hook.Finding{Text: "no executable joule PreToolUse hook at " + path})
	}
	return append(out, hook.Finding{OK: true, Text: "Cline ignores a hook's exit code and takes empty output as no objection: the hook answers a deny itself when joule fails"})
}
