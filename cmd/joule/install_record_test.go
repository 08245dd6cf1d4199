package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// TestRecordInstallKeepsTheFirstState installs, reinstalls over the
// install's own bytes and over an edit, and reads the state the record
// keeps: the first backup survives an untouched reinstall; an edit in
// between, a file that held joule's entries before any record, and one
// an older record listed are never restored from a backup.
func TestRecordInstallKeepsTheFirstState(t *testing.T) {
	now := time.Now()
	a := hook.Applied{Path: "/p/settings.json", Existed: true, Mode: 0o644, Backup: "/b/1.bak", Wrote: []byte("v1"), Dirs: nil}
	first := recordInstall(nil, "h", "/p", []hook.Change{{Path: a.Path, Before: []byte("mine"), After: []byte("v1")}}, []hook.Applied{a}, nil, now)
	if st := first.state(a.Path); st == nil || st.Wrote != digest([]byte("v1")) || st.Backup != "/b/1.bak" || st.Mode != 0o644 || !st.Existed {
		t.Fatalf("first install: %+v", first.State)
	}
	// Reinstall over the install's own bytes: the first backup stays.
	b := hook.Applied{Path: a.Path, Existed: true, Mode: 0o644, Backup: "/b/2.bak", Wrote: []byte("v2")}
	second := recordInstall(&first, "h", "/p", []hook.Change{{Path: a.Path, Before: []byte("v1"), After: []byte("v2")}}, []hook.Applied{b}, nil, now)
	if st := second.state(a.Path); st.Backup != "/b/1.bak" || st.Wrote != digest([]byte("v2")) {
		t.Fatalf("reinstall over its own bytes: %+v", st)
	}
	// Nothing written: the state is kept as it was.
	if again := recordInstall(&second, "h", "/p", []hook.Change{{Path: a.Path, Before: []byte("v2"), After: []byte("v2")}}, nil, nil, now); again.state(a.Path).Wrote != digest([]byte("v2")) {
		t.Fatalf("idempotent reinstall lost the state: %+v", again.State)
	}
	// Reinstall over an edit: no byte-for-byte restore any more.
	c := hook.Applied{Path: a.Path, Existed: true, Mode: 0o644, Backup: "/b/3.bak", Wrote: []byte("v3")}
	third := recordInstall(&second, "h", "/p", []hook.Change{{Path: a.Path, Before: []byte("v2 edited"), After: []byte("v3")}}, []hook.Applied{c}, nil, now)
	if st := third.state(a.Path); st.Wrote != "" || st.Backup != "/b/1.bak" {
		t.Fatalf("reinstall over an edit: %+v", st)
	}
	// A file that held joule's entries, by the uninstall plan or an older record.
	held := recordInstall(nil, "h", "/p", []hook.Change{{Path: a.Path, Before: []byte("old joule"), After: []byte("v1")}}, []hook.Applied{a}, map[string]bool{a.Path: true}, now)
	legacy := recordInstall(&installRecord{Host: "h", Project: "/p", Files: []string{a.Path}}, "h", "/p", []hook.Change{{Path: a.Path, Before: []byte("old joule"), After: []byte("v1")}}, []hook.Applied{a}, nil, now)
	if held.state(a.Path).Wrote != "" || legacy.state(a.Path).Wrote != "" {
		t.Fatalf("a file that held joule's entries may be restored: %+v %+v", held.State, legacy.State)
	}
}

// TestRestoringFallsBack checks what an uninstall does with each state: a
// file untouched since the install gets its backup and mode (or goes, when
// the install created it); one edited since, or whose backup is gone, gets
// only the entry removal; a created file left holding an empty object goes.
func TestRestoringFallsBack(t *testing.T) {
	dir := t.TempDir()
	backup := filepath.Join(dir, "b.bak")
	os.WriteFile(backup, []byte("mine"), 0o600)
	rec := &installRecord{State: []fileState{
		{Path: "/untouched", Existed: true, Mode: 0o640, Backup: backup, Wrote: digest([]byte("w"))},
		{Path: "/created", Wrote: digest([]byte("w"))},
		{Path: "/edited", Existed: true, Mode: 0o640, Backup: backup, Wrote: digest([]byte("w"))},
		{Path: "/nobackup", Existed: true, Mode: 0o640, Backup: filepath.Join(dir, "gone.bak"), Wrote: digest([]byte("w"))},
		{Path: "/created-edited", Wrote: digest([]byte("w"))},
		{Path: "/created-emptied", Wrote: digest([]byte("w"))},
	}}
	got := restoring([]hook.Change{
		{Path: "/untouched", Before: []byte("w"), After: []byte("plan")},
		{Path: "/created", Before: []byte("w"), After: []byte("plan")},
		{Path: "/edited", Before: []byte("w+edit"), After: []byte("plan")},
		{Path: "/nobackup", Before: []byte("w"), After: []byte("plan")},
		{Path: "/created-edited", Before: []byte("w+edit"), After: []byte(`{"edited":true}`)},
		{Path: "/created-emptied", Before: []byte("w+edit"), After: []byte("{\n}\n")},
	}, rec)
	want := map[string]string{"/untouched": "mine", "/created": "<none>", "/edited": "plan", "/nobackup": "plan", "/created-edited": `{"edited":true}`, "/created-emptied": "<none>"}
	for _, c := range got {
		after := string(c.After)
		if c.After == nil {
			after = "<none>"
		}
		if after != want[c.Path] {
			t.Errorf("%s: %q, want %q", c.Path, after, want[c.Path])
		}
		if c.Path == "/untouched" && (!c.Restore || c.Mode != 0o640) {
			t.Errorf("the mode is not restored: %+v", c)
		}
	}
}
