//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnoredInstallIsTheSessions runs, through joule-exec, what a package
// install does to a workspace whose node_modules is ignored and absent:
// the first command makes it (the sweep moves it to the session's layer
// and leaves it empty in the workspace), the session's next command sees
// the install through the overlay and adds to it, and the person's
// programs, unconfined, see neither; an existing ignored .npmrc cannot be
// written, and a new local.mk is taken out.
func TestIgnoredInstallIsTheSessions(t *testing.T) {
	needNamespaces(t)
	b := newBox(t, nil, false)
	os.WriteFile(filepath.Join(b.ws, ".gitignore"), []byte("node_modules/\n.npmrc\nlocal.mk\n"), 0o644)
	os.WriteFile(filepath.Join(b.ws, ".npmrc"), []byte("fund=false\n"), 0o644)
	if out, err := exec.Command("git", "-C", b.ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	out, code := b.run(t, "mkdir -p node_modules/.bin && echo first > node_modules/.bin/tool && echo x > local.mk")
	if code != 0 || !strings.Contains(out, "moved to its private layer") || !strings.Contains(out, "local.mk") {
		t.Fatalf("first command: exit %d:\n%s", code, out)
	}
	if ents, err := os.ReadDir(filepath.Join(b.ws, "node_modules")); err != nil || len(ents) != 0 {
		t.Errorf("the person's node_modules is not empty: %v %v", ents, err)
	}
	if _, err := os.Lstat(filepath.Join(b.ws, "local.mk")); err == nil {
		t.Errorf("local.mk is still in the workspace")
	}
	out, code = b.run(t, "cat node_modules/.bin/tool && echo second >> node_modules/.bin/tool && cat node_modules/.bin/tool; echo evil >> .npmrc")
	if !strings.Contains(out, "first\nfirst\nsecond") {
		t.Errorf("the session's next command does not see its install: exit %d:\n%s", code, out)
	}
	if ents, _ := os.ReadDir(filepath.Join(b.ws, "node_modules")); len(ents) != 0 {
		t.Errorf("the person's node_modules is not empty after the second command: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(b.ws, ".npmrc")); string(b) != "fund=false\n" {
		t.Errorf("the ignored .npmrc was written: %q", b)
	}
}
