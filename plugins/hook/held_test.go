package hook_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/geminicli"
	"github.com/joulehook/joule/plugins/hook"
)

// TestHeld runs a real installer (Gemini CLI's): before an install no file
// holds joule's entries, after it every file it wrote does, and after the
// uninstall none again.
func TestHeld(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	s := hook.Scope{Home: home, Project: proj, Joule: "/usr/local/bin/joule"}
	inst := geminicli.Installer{}
	backups := filepath.Join(t.TempDir(), "backups")
	held := func() []string {
		var paths []string
		for p, ok := range hook.Held(inst, s) {
			if ok {
				paths = append(paths, p)
			}
		}
		slices.Sort(paths)
		return paths
	}
	if got := held(); len(got) != 0 {
		t.Fatalf("before any install: %v", got)
	}
	changes, err := inst.Plan(s, false)
	if err != nil {
		t.Fatal(err)
	}
	var wrote []string
	for _, c := range changes {
		if string(c.Before) != string(c.After) {
			wrote = append(wrote, c.Path)
		}
	}
	slices.Sort(wrote)
	if len(wrote) == 0 {
		t.Fatal("the install writes nothing")
	}
	if _, err := hook.Apply(changes, time.Now(), backups); err != nil {
		t.Fatal(err)
	}
	if got := held(); !slices.Equal(got, wrote) {
		t.Fatalf("after the install: %v, want %v", got, wrote)
	}
	out, err := inst.Plan(s, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Apply(out, time.Now(), backups); err != nil {
		t.Fatal(err)
	}
	if got := held(); len(got) != 0 {
		t.Fatalf("after the uninstall: %v", got)
	}
}
