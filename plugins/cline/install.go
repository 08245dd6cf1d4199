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

func script(s hook.Scope) []byte {
	return []byte("#!/bin/sh\n# joule gate: decides every Cline tool call from the active grant (joule install cline)\nexec " + hook.Command(s, Host) + "\n")
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

// Check implements hook.Installer.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	path := hookPath(s)
	b, err := os.ReadFile(path)
	st, serr := os.Stat(path)
	if err == nil && serr == nil && isOurs(b) && st.Mode()&0o111 != 0 {
		out = append(out, hook.Finding{OK: true, Text: "executable PreToolUse hook " + path})
	} else {
		out = append(out, hook.Finding{Text: "no executable joule PreToolUse hook at " + path})
	}
	return append(out, hook.Finding{OK: true, Text: "hooks do not run under cline --yolo, and Cline ignores exit codes: joule answers with {\"cancel\":true} on every failure"})
}
