package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// TestCheckTellsTheTruth: the armed check passes only for the plugin this
// install writes, so a plugin left by an install with --no-contain (or
// without it) says todo, and so does a project OpenCode is told not to load.
func TestCheckTellsTheTruth(t *testing.T) {
	proj := t.TempDir()
	bin := filepath.Join(t.TempDir(), "joule")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	contained := hook.Scope{Project: proj, Home: t.TempDir(), Joule: bin, Contain: hook.Contained}
	changes, err := Installer{}.Plan(contained, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(proj, ".opencode", "plugins", "joule.ts"))
	if !strings.Contains(string(b), `const MODE: string = "--contain"`) || hook.ModeInBytes(b) != hook.Contained {
		t.Fatal("the contained plugin does not contain")
	}
	ok := func(s hook.Scope) bool {
		for _, f := range (Installer{}).Check(s) {
			if !f.OK {
				return false
			}
		}
		return true
	}
	if !ok(contained) {
		t.Fatalf("check after a --contain install: %+v", Installer{}.Check(contained))
	}
	for _, m := range []hook.ContainMode{hook.NoContain, ""} {
		plain := contained
		plain.Contain = m
		if ok(plain) {
			t.Fatalf("a contained plugin passes the check of an install in mode %q", m)
		}
	}
	t.Setenv("OPENCODE_DISABLE_PROJECT_CONFIG", "1")
	if ok(contained) {
		t.Fatal("armed although OpenCode is told to load no project plugin")
	}
}
