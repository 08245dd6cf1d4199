package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecordInstallKeepsTheFirstState installs, reinstalls over the
// install's own bytes and over an edit, and reads the state the record
// keeps: the first backup survives an untouched reinstall; an edit in
// between, a file that held joule's entries before any record, and one
// an older record listed are never restored from a backup.
func TestRecordInstallKeepsTheFirstState(t *testing.T) {
	now := time.Now()
	a := Applied{Path: "/p/settings.json", Existed: true, Mode: 0o644, Backup: "/b/1.bak", Wrote: []byte("v1"), Dirs: nil}
	first := NextRecord(nil, "h", "/p", []Change{{Path: a.Path, Before: []byte("mine"), After: []byte("v1")}}, []Applied{a}, nil, now)
	if st := first.stateOf(a.Path); st == nil || st.Wrote != digest([]byte("v1")) || st.Backup != "/b/1.bak" || st.Mode != 0o644 || !st.Existed {
		t.Fatalf("first install: %+v", first.State)
	}
	// Reinstall over the install's own bytes: the first backup stays.
	b := Applied{Path: a.Path, Existed: true, Mode: 0o644, Backup: "/b/2.bak", Wrote: []byte("v2")}
	second := NextRecord(&first, "h", "/p", []Change{{Path: a.Path, Before: []byte("v1"), After: []byte("v2")}}, []Applied{b}, nil, now)
	if st := second.stateOf(a.Path); st.Backup != "/b/1.bak" || st.Wrote != digest([]byte("v2")) {
		t.Fatalf("reinstall over its own bytes: %+v", st)
	}
	// Nothing written: the state is kept as it was.
	if again := NextRecord(&second, "h", "/p", []Change{{Path: a.Path, Before: []byte("v2"), After: []byte("v2")}}, nil, nil, now); again.stateOf(a.Path).Wrote != digest([]byte("v2")) {
		t.Fatalf("idempotent reinstall lost the state: %+v", again.State)
	}
	// Reinstall over an edit: no byte-for-byte restore any more.
	c := Applied{Path: a.Path, Existed: true, Mode: 0o644, Backup: "/b/3.bak", Wrote: []byte("v3")}
	third := NextRecord(&second, "h", "/p", []Change{{Path: a.Path, Before: []byte("v2 edited"), After: []byte("v3")}}, []Applied{c}, nil, now)
	if st := third.stateOf(a.Path); st.Wrote != "" || st.Backup != "/b/1.bak" {
		t.Fatalf("reinstall over an edit: %+v", st)
	}
	// A file that held joule's entries, by the uninstall plan or an older record.
	held := NextRecord(nil, "h", "/p", []Change{{Path: a.Path, Before: []byte("old joule"), After: []byte("v1")}}, []Applied{a}, map[string]bool{a.Path: true}, now)
	legacy := NextRecord(&Record{Host: "h", Project: "/p", Files: []string{a.Path}}, "h", "/p", []Change{{Path: a.Path, Before: []byte("old joule"), After: []byte("v1")}}, []Applied{a}, nil, now)
	if held.stateOf(a.Path).Wrote != "" || legacy.stateOf(a.Path).Wrote != "" {
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
	rec := &Record{State: []FileState{
		{Path: "/untouched", Existed: true, Mode: 0o640, Backup: backup, Wrote: digest([]byte("w"))},
		{Path: "/created", Wrote: digest([]byte("w"))},
		{Path: "/edited", Existed: true, Mode: 0o640, Backup: backup, Wrote: digest([]byte("w"))},
		{Path: "/nobackup", Existed: true, Mode: 0o640, Backup: filepath.Join(dir, "gone.bak"), Wrote: digest([]byte("w"))},
		{Path: "/created-edited", Wrote: digest([]byte("w"))},
		{Path: "/created-emptied", Wrote: digest([]byte("w"))},
	}}
	got := Restoring([]Change{
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

// copyRecords puts testdata's installs file name in a fresh home as
// installs.json.
func copyRecords(t *testing.T, name string) (home string, want []byte) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	home = t.TempDir()
	if err := os.WriteFile(filepath.Join(home, InstallsFile), want, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, want
}

// TestRecordsKeepTheirFormat loads installs.json files as joule wrote them,
// before states were kept (v1), since (v2) and since the containment mode
// was kept (v3), checks what they say, and rewrites them: the bytes come
// back unchanged, so neither a field renamed nor one dropped goes
// unnoticed.
func TestRecordsKeepTheirFormat(t *testing.T) {
	for _, name := range []string{"installs-v1.json", "installs-v2.json", "installs-v3.json"} {
		t.Run(name, func(t *testing.T) {
			home, want := copyRecords(t, name)
			// Forgetting an install it does not hold rewrites the file.
			if err := ForgetRecord(home, "no-such-host", ""); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(home, InstallsFile)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("mode: %v %v, want 0600", st.Mode(), err)
			}
		})
	}
}

// TestOldRecordsLoad reads a record from before states were kept: it
// still finds the install, and the next install treats the files it lists
// as holding joule's entries, so an uninstall never restores them from a
// backup.
func TestOldRecordsLoad(t *testing.T) {
	home, _ := copyRecords(t, "installs-v1.json")
	recs, err := LoadRecords(home)
	if err != nil || len(recs) != 2 {
		t.Fatalf("LoadRecords: %d records, %v", len(recs), err)
	}
	if g := recs[1]; g.Host != "gemini" || g.Project != "" || g.State != nil || g.Trusted ||
		!g.Time.Equal(time.Date(2026, 12, 1, 17, 40, 55, 1, time.UTC)) || len(g.Files) != 1 || g.Files[0] != "/home/ada/.gemini/settings.json" {
		t.Errorf("user-scope record: %+v", g)
	}
	prev, err := FindRecord(home, "claude-code", "/home/ada/src/app")
	if err != nil || prev == nil {
		t.Fatalf("FindRecord: %+v %v", prev, err)
	}
	if dirs := prev.CreatedDirs(); dirs != nil {
		t.Errorf("an old record created no directories it knows of: %v", dirs)
	}
	listed := Applied{Path: "/home/ada/src/app/.mcp.json", Existed: true, Mode: 0o644, Backup: "/b/1.bak", Wrote: []byte("v2")}
	fresh := Applied{Path: "/home/ada/src/app/.codex/config.toml", Wrote: []byte("new")}
	next := NextRecord(prev, "claude-code", prev.Project, []Change{
		{Path: listed.Path, Before: []byte("old joule"), After: listed.Wrote},
		{Path: fresh.Path, After: fresh.Wrote},
	}, []Applied{listed, fresh}, nil, time.Now())
	if st := next.stateOf(listed.Path); st == nil || st.Wrote != "" || st.Backup != "/b/1.bak" {
		t.Errorf("a file an old record lists may be restored: %+v", st)
	}
	if st := next.stateOf(fresh.Path); st == nil || st.Wrote != digest([]byte("new")) || st.Existed {
		t.Errorf("a file new to the install: %+v", st)
	}
}

// TestCurrentRecordsLoad reads every field of a record with states.
func TestCurrentRecordsLoad(t *testing.T) {
	home, _ := copyRecords(t, "installs-v2.json")
	r, err := FindRecord(home, "claude-code", "/home/ada/src/app")
	if err != nil || r == nil {
		t.Fatalf("FindRecord: %+v %v", r, err)
	}
	want := []FileState{
		{Path: "/home/ada/src/app/.claude/settings.json", Existed: true, Mode: 0o640, Backup: "/home/ada/.joule/backups/settings.json.20261207T024105Z.bak", Wrote: "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa"},
		{Path: "/home/ada/src/app/.claude/settings.local.json", Dirs: []string{"/home/ada/src/app/.claude"}},
	}
	if !r.Trusted || len(r.State) != len(want) {
		t.Fatalf("record: %+v", r)
	}
	for i, st := range r.State {
		if st.Path != want[i].Path || st.Existed != want[i].Existed || st.Mode != want[i].Mode || st.Backup != want[i].Backup || st.Wrote != want[i].Wrote || strings.Join(st.Dirs, ",") != strings.Join(want[i].Dirs, ",") {
			t.Errorf("state %d: %+v, want %+v", i, st, want[i])
		}
	}
	if dirs := r.CreatedDirs(); len(dirs) != 1 || dirs[0] != "/home/ada/src/app/.claude" {
		t.Errorf("CreatedDirs: %v", dirs)
	}
	if r, err := FindRecord(home, "codex", "/home/ada/src/app"); r != nil || err != nil {
		t.Errorf("codex is recorded for the user scope only: %+v %v", r, err)
	}
}

// TestSaveAndForgetRecords saves, replaces and forgets records: the file
// keeps one record per host and project, sorted, and goes with the last.
func TestSaveAndForgetRecords(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home") // created by the first save
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	steps := []struct {
		save   *Record
		forget [2]string
		want   []string // host|project, in file order
	}{
		{save: &Record{Host: "zed", Project: "/p", Time: now}, want: []string{"zed|/p"}},
		{save: &Record{Host: "codex", Time: now}, want: []string{"codex|", "zed|/p"}},
		{save: &Record{Host: "codex", Project: "/p", Time: now}, want: []string{"codex|", "codex|/p", "zed|/p"}},
		{save: &Record{Host: "codex", Files: []string{"/again"}, Time: now}, want: []string{"codex|", "codex|/p", "zed|/p"}},
		{forget: [2]string{"zed", "/p"}, want: []string{"codex|", "codex|/p"}},
		{forget: [2]string{"codex", "/p"}, want: []string{"codex|"}},
		{forget: [2]string{"codex", ""}, want: nil},
		{forget: [2]string{"codex", ""}, want: nil}, // nothing to forget: no error
	}
	for i, s := range steps {
		var err error
		if s.save != nil {
			err = SaveRecord(home, *s.save)
		} else {
			err = ForgetRecord(home, s.forget[0], s.forget[1])
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		recs, err := LoadRecords(home)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Host+"|"+r.Project)
		}
		if strings.Join(got, " ") != strings.Join(s.want, " ") {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
		_, statErr := os.Stat(filepath.Join(home, InstallsFile))
		if (s.want == nil) != os.IsNotExist(statErr) {
			t.Errorf("step %d: the file is there: %v, with %d records", i, statErr == nil, len(s.want))
		}
	}
	// The replaced record is the one saved last.
	if err := SaveRecord(home, Record{Host: "codex", Files: []string{"/one"}, Time: now}); err != nil {
		t.Fatal(err)
	}
	if err := SaveRecord(home, Record{Host: "codex", Files: []string{"/two"}, Time: now}); err != nil {
		t.Fatal(err)
	}
	if r, err := FindRecord(home, "codex", ""); err != nil || r == nil || len(r.Files) != 1 || r.Files[0] != "/two" {
		t.Errorf("replaced record: %+v %v", r, err)
	}
}

// TestBrokenRecords: an installs.json that does not parse is an error that
// names the file and says it can go; no file records nothing.
func TestBrokenRecords(t *testing.T) {
	home := t.TempDir()
	if recs, err := LoadRecords(home); recs != nil || err != nil {
		t.Fatalf("no file: %v %v", recs, err)
	}
	for _, text := range []string{"{", `{"host":"x"}`, `[{"files":"x"}]`, ""} {
		os.WriteFile(filepath.Join(home, InstallsFile), []byte(text), 0o600)
		_, err := LoadRecords(home)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(home, InstallsFile)) || !strings.Contains(err.Error(), "fix or remove it") {
			t.Errorf("%q: %v", text, err)
		}
		if err := SaveRecord(home, Record{Host: "h"}); err == nil {
			t.Errorf("%q: saved over a file it could not read", text)
		}
	}
}

// TestRecordsKeepTheMode: the mode each install was made in is what the
// record says, and a record from before the mode was kept says none.
func TestRecordsKeepTheMode(t *testing.T) {
	for _, tc := range []struct {
		file, host, project string
		want                ContainMode
	}{
		{"installs-v3.json", "claude-code", "/home/ada/src/app", Contained},
		{"installs-v3.json", "codex", "", NoContain},
		{"installs-v3.json", "qwen-code", "/home/ada/src/app", AnalysisOnly},
		{"installs-v2.json", "claude-code", "/home/ada/src/app", ""},
	} {
		home, _ := copyRecords(t, tc.file)
		r, err := FindRecord(home, tc.host, tc.project)
		if err != nil || r == nil || r.Contain != tc.want {
			t.Errorf("%s %s: %+v %v, want mode %q", tc.file, tc.host, r, err, tc.want)
		}
	}
}
