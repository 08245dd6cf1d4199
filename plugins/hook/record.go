package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tailscale/hujson"
)

// InstallsFile is the record of every install, in $JOULE_HOME (0600):
// what 'joule install HOST --uninstall' without --project or --user
// removes, and how to give each file it wrote back as it was.
const InstallsFile = "installs.json"

// Record is one install: the host, where it went, the files it wrote and
// what it takes to give each back as it was.
type Record struct {
	Host    string    `json:"host"`
	Project string    `json:"project,omitempty"` // "" for the user scope
	Files   []string  `json:"files"`
	Time    time.Time `json:"time"`
	// State is, per file an install wrote, how it was before. Records
	// written before states were kept have none.
	State []FileState `json:"state,omitempty"`
	// Trusted says an install performed the host's trust steps (--trust),
	// which the uninstall takes back.
	Trusted bool `json:"trusted,omitempty"`
	// Contain is how the install's hook treats the shell commands the gate
	// allows: the one record of it that the armed check, joule doctor and
	// the status line read. "" is a record from before it was kept.
	Contain ContainMode `json:"contain,omitempty"`
	// Resident says the hooks are answered by joule serve over loopback
	// http (install --resident), which every command that suggests
	// installing again must keep.
	Resident bool `json:"resident,omitempty"`
}

// FileState is one file as an install found it, and a digest of what it
// left there: an uninstall that finds those bytes still there puts the file
// back byte for byte (or removes it, when it was not there), and otherwise
// only takes joule's entries out of it.
type FileState struct {
	Path    string      `json:"path"`
	Existed bool        `json:"existed"`
	Mode    os.FileMode `json:"mode,omitempty"`   // its permission bits, when it existed
	Backup  string      `json:"backup,omitempty"` // its bytes before, in $JOULE_HOME/backups
	// Wrote is the SHA-256 of what the install left there; "" when the file
	// cannot be put back byte for byte (it held joule's entries before, or
	// was edited between two installs).
	Wrote string   `json:"wrote,omitempty"`
	Dirs  []string `json:"dirs,omitempty"` // directories the install created for it
}

// LoadRecords reads home's installs.json; a missing file records nothing.
func LoadRecords(home string) ([]Record, error) {
	b, err := os.ReadFile(filepath.Join(home, InstallsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("%s: %v (fix or remove it; it only lists installs)", filepath.Join(home, InstallsFile), err)
	}
	return recs, nil
}

// FindRecord is home's record of host's install in project ("" for the
// user scope), or nil.
func FindRecord(home, host, project string) (*Record, error) {
	recs, err := LoadRecords(home)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Host == host && r.Project == project {
			return &r, nil
		}
	}
	return nil, nil
}

// NextRecord is the record of an install that wrote changes (applied, as
// ApplyRecorded reports them) after prev, the record of the one before
// (nil when none). held are the files that already held joule's entries
// before it: their bytes before are not the user's own and are never
// restored.
func NextRecord(prev *Record, host, project string, changes []Change, applied []Applied, held map[string]bool, now time.Time) Record {
	r := Record{Host: host, Project: project, Time: now.UTC()}
	for _, c := range changes {
		if c.After != nil {
			r.Files = append(r.Files, c.Path)
		}
	}
	state := map[string]FileState{}
	var order []string
	legacy := map[string]bool{}
	if prev != nil {
		r.Trusted = prev.Trusted
		for _, st := range prev.State {
			state[st.Path] = st
			order = append(order, st.Path)
		}
		if prev.State == nil {
			// A record from before states were kept: the files it lists
			// held joule's entries already.
			for _, f := range prev.Files {
				legacy[f] = true
			}
		}
	}
	before := map[string][]byte{}
	for _, c := range changes {
		before[c.Path] = c.Before
		if c.Trust && string(c.Before) != string(c.After) {
			r.Trusted = true
		}
	}
	for _, a := range applied {
		st, seen := state[a.Path]
		switch {
		case !seen:
			st = FileState{Path: a.Path, Existed: a.Existed, Mode: a.Mode, Backup: a.Backup, Dirs: a.Dirs}
			if !held[a.Path] && !legacy[a.Path] && a.Wrote != nil {
				st.Wrote = digest(a.Wrote)
			}
			order = append(order, a.Path)
		case st.Wrote != "" && st.Wrote == digest(before[a.Path]) && a.Wrote != nil:
			// Untouched since the last install: the first backup still
			// holds the user's file.
			st.Wrote = digest(a.Wrote)
			st.Dirs = append(st.Dirs, a.Dirs...)
		default:
			// Edited in between (or removed): only joule's entries can be
			// taken out of it now.
			st.Wrote = ""
			st.Dirs = append(st.Dirs, a.Dirs...)
		}
		state[a.Path] = st
	}
	for _, p := range order {
		r.State = append(r.State, state[p])
	}
	return r
}

// Held are the files in s that hold joule's entries already (an install
// older than the record of installs, or one whose record is lost): their
// bytes before the next install are not the user's alone, so NextRecord
// never offers to restore them.
func Held(inst Installer, s Scope) map[string]bool {
	held := map[string]bool{}
	if out, err := inst.Plan(s, true); err == nil {
		for _, c := range out {
			if string(c.Before) != string(c.After) {
				held[c.Path] = true
			}
		}
	}
	return held
}

// SaveRecord records r in home's installs.json, in place of any record of
// the same host and project.
func SaveRecord(home string, r Record) error { return note(home, r, false) }

// ForgetRecord takes the record of host's install in project out of home's
// installs.json, and removes the file when no record is left.
func ForgetRecord(home, host, project string) error {
	return note(home, Record{Host: host, Project: project}, true)
}

// note rewrites home's installs.json, sorted by host and project, with r in
// place of any record of its host and project (without it, with remove).
func note(home string, r Record, remove bool) error {
	recs, err := LoadRecords(home)
	if err != nil {
		return err
	}
	var kept []Record
	for _, k := range recs {
		if k.Host != r.Host || k.Project != r.Project {
			kept = append(kept, k)
		}
	}
	if !remove {
		kept = append(kept, r)
	}
	sort.Slice(kept, func(i, j int) bool {
		if kept[i].Host != kept[j].Host {
			return kept[i].Host < kept[j].Host
		}
		return kept[i].Project < kept[j].Project
	})
	path := filepath.Join(home, InstallsFile)
	if len(kept) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(kept, "", "  ")
	tmp, err := os.CreateTemp(home, "."+InstallsFile+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Restoring turns an uninstall's changes (joule's entries taken out) into
// ones that give each file r records back as the install found it: the
// bytes and mode before, or no file, when what the install wrote is still
// there byte for byte. A file edited since keeps the edit: only joule's
// entries leave it, and it goes only when the install created it and
// nothing but an empty object is left.
func Restoring(changes []Change, r *Record) []Change {
	planned := map[string]bool{}
	for _, c := range changes {
		planned[c.Path] = true
	}
	for _, st := range r.State {
		if planned[st.Path] {
			continue
		}
		// A file only the install touched (a trust file): the plan leaves
		// it, the record may give it back.
		if cur, err := os.ReadFile(st.Path); err == nil {
			changes = append(changes, Change{Path: st.Path, Before: cur, After: cur})
		}
	}
	for i := range changes {
		c := &changes[i]
		st := r.stateOf(c.Path)
		if st == nil || c.Before == nil {
			continue
		}
		if st.Wrote != "" && digest(c.Before) == st.Wrote {
			if !st.Existed {
				c.After = nil
				continue
			}
			if b, err := os.ReadFile(st.Backup); err == nil && st.Backup != "" {
				c.After, c.Mode, c.Restore = b, st.Mode, true
				continue
			}
		}
		if !st.Existed && blank(c.After) {
			c.After = nil
		}
	}
	return changes
}

// stateOf is the state r keeps of path, or nil.
func (r *Record) stateOf(path string) *FileState {
	for i := range r.State {
		if r.State[i].Path == path {
			return &r.State[i]
		}
	}
	return nil
}

// CreatedDirs are the directories r's install created, for an uninstall
// to remove when they are left empty.
func (r *Record) CreatedDirs() []string {
	var dirs []string
	for _, st := range r.State {
		dirs = append(dirs, st.Dirs...)
	}
	return dirs
}

// digest is the hex SHA-256 of b, or "" for no file.
func digest(b []byte) string {
	if b == nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// blank reports whether b holds nothing a user wrote: no bytes but
// whitespace, or an empty JSON object with no comment.
func blank(b []byte) bool {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return true
	}
	v, err := hujson.Parse(t)
	if err != nil || !v.IsStandard() {
		return false
	}
	obj, ok := v.Value.(*hujson.Object)
	return ok && len(obj.Members) == 0
}
