package hook

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tailscale/hujson"
)

// Scope says where an install goes: one project, or the user's own
// configuration.
type Scope struct {
	Project string // absolute project directory; "" means the user scope
	Home    string // the user's home directory
	Joule   string // absolute path of the joule binary the hooks run
	// Client is the absolute path of the thin hook client (joule-hook)
	// beside Joule, which hooks run instead of 'joule hook HOST' so a
	// decision costs no full joule start; "" when it is not installed.
	Client string
	// Resident, when set, wires the host's http hook to joule serve instead
	// of a process per call (hosts that have one).
	Resident *Resident
	// Contain is how the hook treats the shell commands the gate allows:
	// Contain (the default where the host can rewrite them) runs them
	// under joule exec, confined by the kernel; NoContain is an install
	// that opted out; AnalysisOnly a host whose hook cannot replace a
	// command. The hook line carries it (ContainMode.Flag), and the
	// record of the install keeps it (Record.Contain).
	Contain ContainMode
	// Trust makes the install also perform the host's trust steps, where
	// the host keeps them in a file a user may write: Gemini CLI's folder
	// trust, Codex's project and per-hook trust.
	Trust bool
	// JouleHome is the $JOULE_HOME the hooks must use, recorded in the
	// hook command (Guard.Line) so that the host's hook decides from the
	// home the install saw; "" for the default home, which the hook finds
	// by itself and which is then not written into any file.
	JouleHome string
}

// Resident is where joule serve answers and the bearer token it demands.
type Resident struct{ URL, Token string }

// Change is one file an install writes: its content before (nil: absent)
// and after (nil: delete it).
type Change struct {
	Path          string
	Before, After []byte
	// Mode is the permission of a file the change creates; a file that
	// exists keeps its own, unless Restore is set.
	Mode os.FileMode
	// Restore puts Mode on the file even when it exists: an uninstall
	// giving a file back as it was.
	Restore bool
	// Trust marks the change that performs the host's trust steps
	// (Scope.Trust), which an uninstall reverts only when the install made
	// it.
	Trust bool
	// Local marks a file the host keeps for this machine alone (Claude
	// Code's settings.local.json): a project install keeps it out of git
	// (Private, Ignore).
	Local bool
}

// Finding is one result of checking that a hook is really armed.
type Finding struct {
	OK   bool
	Text string // what holds, or what the user still has to do
	// Weak marks an OK finding that holds, but leaves the install weaker
	// than joule's default (commands not contained, or contained by
	// Landlock alone): it is printed as a warning, not as ok.
	Weak bool
}

// Installer writes and checks one host's configuration.
type Installer interface {
	// Plan computes the file changes that install (or, with uninstall,
	// remove) joule for the scope, keeping every entry of the user's.
	Plan(s Scope, uninstall bool) ([]Change, error)
	// Check inspects what is on disk after an install.
	Check(s Scope) []Finding
}

// Apply writes changes, each after a timestamped backup, in the directory
// backups (0700), of the file it replaces: never beside it, where it would
// show in the project's git status. A change whose content is already on
// disk is skipped, so an install run twice writes nothing the second time.
// It returns one line per file.
func Apply(changes []Change, now time.Time, backups string) ([]string, error) {
	lines, _, err := ApplyRecorded(changes, now, backups)
	return lines, err
}

// Applied is what Apply did to one file, kept so that an uninstall can put
// it back as it was.
type Applied struct {
	Path    string
	Existed bool        // the file was there before
	Mode    os.FileMode // its permission bits before, when it existed
	Backup  string      // where its bytes before are kept ("" when it did not exist)
	Wrote   []byte      // what is there now (nil: Apply removed it)
	Dirs    []string    // the directories Apply created for it, deepest first
}

// ApplyRecorded is Apply, also saying what it did to each file it wrote or
// removed.
func ApplyRecorded(changes []Change, now time.Time, backups string) ([]string, []Applied, error) {
	var lines []string
	var done []Applied
	for _, c := range changes {
		st, statErr := os.Stat(c.Path)
		if bytes.Equal(c.Before, c.After) {
			if c.Restore && statErr == nil && c.After != nil && st.Mode().Perm() != c.Mode.Perm() {
				if err := os.Chmod(c.Path, c.Mode.Perm()); err != nil {
					return lines, done, err
				}
				lines = append(lines, "restored the mode of "+c.Path)
				continue
			}
			if c.Before != nil {
				lines = append(lines, "unchanged "+c.Path)
			}
			continue
		}
		a := Applied{Path: c.Path, Existed: statErr == nil, Wrote: c.After}
		if a.Existed {
			a.Mode = st.Mode().Perm()
		}
		if c.Before != nil {
			var err error
			if a.Backup, err = writeBackup(backups, c.Path, c.Before, now); err != nil {
				return lines, done, err
			}
		}
		switch {
		case c.After == nil:
			if err := os.Remove(c.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return lines, done, err
			}
			lines = append(lines, "removed "+c.Path+withBackup(a.Backup))
		default:
			mode := c.Mode.Perm()
			switch {
			case a.Existed && !c.Restore:
				mode = a.Mode
			case mode == 0:
				mode = 0o644
			}
			dest := c.Path
			if r, err := filepath.EvalSymlinks(c.Path); err == nil {
				// A link (a dotfiles checkout) stays a link: its file changes.
				dest = r
			}
			dirs, err := mkdirs(filepath.Dir(dest))
			if err != nil {
				return lines, done, err
			}
			a.Dirs = dirs
			if err := writeAtomic(dest, c.After, mode); err != nil {
				return lines, done, err
			}
			lines = append(lines, "wrote "+c.Path+withBackup(a.Backup))
		}
		done = append(done, a)
	}
	return lines, done, nil
}

// mkdirs makes dir and its missing parents (0755) and returns those it
// created, deepest first.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	return missing, os.MkdirAll(dir, 0o755)
}

// RemoveEmptyDirs removes each of dirs that is empty, deepest first: the
// directories an install created, which an uninstall takes back unless
// something else was put in them since.
func RemoveEmptyDirs(dirs []string) {
	sorted := append([]string(nil), dirs...)
	sort.Slice(sorted, func(i, j int) bool {
		return strings.Count(sorted[i], string(filepath.Separator)) > strings.Count(sorted[j], string(filepath.Separator))
	})
	for _, d := range sorted {
		os.Remove(d) // fails, as it should, on a directory that is not empty
	}
}

// writeBackup keeps before, the content of path, in dir under a name that
// says which file it was and when: the base name, a digest of the whole
// path (two projects' settings.json stay apart) and the time.
func writeBackup(dir, path string, before []byte, now time.Time) (string, error) {
	if dir == "" {
		return "", errors.New("install: no directory for backups")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	name := fmt.Sprintf("%s.%x.%s.bak", filepath.Base(path), sum[:4], now.UTC().Format("20060102T150405.000"))
	b := filepath.Join(dir, name)
	return b, os.WriteFile(b, before, 0o600)
}

func withBackup(b string) string {
	if b == "" {
		return ""
	}
	return " (backup " + b + ")"
}

func writeAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".joule-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// JSONFile is a host configuration file read for editing: a JSON object,
// comments and trailing commas allowed (JSONC, as most hosts read them),
// whose entries joule does not own are kept as they are, bytes included.
type JSONFile struct {
	Path   string
	Before []byte
	Doc    map[string]any
	tree   *hujson.Value // the parsed file; nil when it was missing or blank
}

// ReadJSON reads path as a JSON(C) object; a missing or blank file is an
// empty object. A file that is not a JSON object is an error, never
// overwritten.
func ReadJSON(path string) (*JSONFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &JSONFile{Path: path, Doc: map[string]any{}}, nil
	}
	if err != nil {
		return nil, err
	}
	f := &JSONFile{Path: path, Before: b, Doc: map[string]any{}}
	if len(bytes.TrimSpace(b)) == 0 {
		return f, nil
	}
	tree, err := hujson.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s is not a JSON object (%v); fix or move it, joule will not overwrite it", path, strings.TrimPrefix(err.Error(), "hujson: "))
	}
	if _, ok := tree.Value.(*hujson.Object); !ok {
		return nil, fmt.Errorf("%s is not a JSON object (it holds a %s); fix or move it, joule will not overwrite it", path, kindName(tree.Value.Kind()))
	}
	doc, err := valueOf(&tree)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	f.Doc, f.tree = doc.(map[string]any), &tree
	return f, nil
}

func kindName(k hujson.Kind) string {
	switch k {
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 'n':
		return "null"
	}
	return "boolean"
}

// Change renders the edited document: the file as it was, with only the
// members and elements joule changed rewritten. An empty document whose
// file did not exist stays absent; one that did exist is deleted only when
// removeIfEmpty is set and the file holds no comment.
func (f *JSONFile) Change(removeIfEmpty bool) Change {
	c := Change{Path: f.Path, Before: f.Before}
	if len(f.Doc) == 0 && (f.Before == nil || removeIfEmpty && !f.commented()) {
		return c
	}
	if f.tree == nil {
		if len(f.Doc) == 0 {
			c.After = f.Before // blank, and left so
			return c
		}
		b, err := marshal(f.Doc, "", "  ")
		if err != nil {
			c.After = f.Before
			return c
		}
		c.After = append(b, '\n')
		return c
	}
	after, err := f.edited()
	if err != nil {
		c.After = f.Before
		return c
	}
	c.After = after
	return c
}

// edited is the file with the document's changes made in its syntax tree.
func (f *JSONFile) edited() ([]byte, error) {
	want, err := normalize(f.Doc)
	if err != nil {
		return nil, err
	}
	// A fresh parse, not Clone: hujson's Clone drops the empty extra that
	// marks a trailing comma.
	tree, err := hujson.Parse(bytes.Clone(f.Before))
	if err != nil {
		return nil, err
	}
	if err := detectLayout(f.Before).edit(&tree, want, ""); err != nil {
		return nil, err
	}
	return tree.Pack(), nil
}

// commented reports whether the file has a comment (or a trailing comma)
// anywhere.
func (f *JSONFile) commented() bool { return f.tree != nil && !f.tree.IsStandard() }

// Object returns doc[key] as an object, creating it when absent. A value
// of another type is an error: the user's file says something joule does not
// understand.
func Object(doc map[string]any, key, path string) (map[string]any, error) {
	switch v := doc[key].(type) {
	case nil:
		m := map[string]any{}
		doc[key] = m
		return m, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("%s: %q is a %T, want an object", path, key, v)
	}
}

// List returns doc[key] as an array ([] when absent).
func List(doc map[string]any, key, path string) ([]any, error) {
	switch v := doc[key].(type) {
	case nil:
		return nil, nil
	case []any:
		return v, nil
	default:
		return nil, fmt.Errorf("%s: %q is a %T, want an array", path, key, v)
	}
}

// PruneEmpty deletes doc[key] when it is an empty object or array.
func PruneEmpty(doc map[string]any, key string) {
	switch v := doc[key].(type) {
	case map[string]any:
		if len(v) == 0 {
			delete(doc, key)
		}
	case []any:
		if len(v) == 0 {
			delete(doc, key)
		}
	}
}

// SetEntries edits a flat hook list per event (Cursor, Windsurf:
// {"<event>": [entry, …]}): every entry isOurs recognises is removed from
// every event, and with add, entry is appended to each of events.
func SetEntries(hooks map[string]any, events []string, entry map[string]any, isOurs func(any) bool, add bool, path string) error {
	for event := range hooks {
		list, err := List(hooks, event, path)
		if err != nil {
			return err
		}
		var kept []any
		for _, e := range list {
			if !isOurs(e) {
				kept = append(kept, e)
			}
		}
		hooks[event] = kept
	}
	if add {
		for _, event := range events {
			list, _ := hooks[event].([]any)
			hooks[event] = append(list, entry)
		}
	}
	for event := range hooks {
		PruneEmpty(hooks, event)
	}
	return nil
}

// SetGroups edits Claude Code's three-level shape, which Codex, Gemini CLI
// and Antigravity share ({"<event>": [{"matcher", "hooks": [handler, …]}]}):
// every handler isOurs recognises is removed (and a group left empty by it),
// and with add, a group {matcher, hooks: [handler]} is appended to each of
// events. A matcher of "" leaves the key out.
func SetGroups(hooks map[string]any, events []string, matcher string, handler map[string]any, isOurs func(any) bool, add bool, path string) error {
	for event := range hooks {
		groups, err := List(hooks, event, path)
		if err != nil {
			return err
		}
		var kept []any
		for _, g := range groups {
			gm, ok := g.(map[string]any)
			if !ok {
				kept = append(kept, g)
				continue
			}
			hs, err := List(gm, "hooks", path)
			if err != nil {
				return err
			}
			var rest []any
			for _, h := range hs {
				if !isOurs(h) {
					rest = append(rest, h)
				}
			}
			if len(rest) == 0 && len(hs) > 0 {
				continue
			}
			gm["hooks"] = rest
			kept = append(kept, gm)
		}
		hooks[event] = kept
	}
	if add {
		for _, event := range events {
			groups, _ := hooks[event].([]any)
			g := map[string]any{"hooks": []any{handler}}
			if matcher != "" {
				g["matcher"] = matcher
			}
			hooks[event] = append(groups, g)
		}
	}
	for event := range hooks {
		PruneEmpty(hooks, event)
	}
	return nil
}

// HasHandler reports whether some handler under hooks[event] (either
// shape) satisfies ok.
func HasHandler(hooks map[string]any, event string, ok func(map[string]any) bool) bool {
	list, _ := hooks[event].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		if m == nil {
			continue
		}
		if ok(m) {
			return true
		}
		hs, _ := m["hooks"].([]any)
		for _, h := range hs {
			if hm, _ := h.(map[string]any); hm != nil && ok(hm) {
				return true
			}
		}
	}
	return false
}

// IsJouleCommand recognises a command handler joule wrote for host,
// wherever the binary lived: 'joule hook HOST' or 'joule-hook HOST'.
func IsJouleCommand(host string) func(any) bool {
	return func(v any) bool {
		m, _ := v.(map[string]any)
		cmd, _ := m["command"].(string)
		return IsJouleLine(cmd, host)
	}
}

// IsJouleLine reports whether a hook command line runs joule for host,
// through joule itself or through the thin client, in any containment
// mode.
func IsJouleLine(cmd, host string) bool {
	cmd, _ = CutMode(strings.TrimSpace(cmd))
	return strings.Contains(cmd, "joule") && (strings.HasSuffix(cmd, " hook "+host) ||
		strings.HasSuffix(cmd, "joule-hook "+host) || strings.HasSuffix(cmd, "joule-hook' "+host) ||
		strings.HasSuffix(cmd, `joule-hook" `+host) || strings.HasSuffix(cmd, `joule-hook}" `+host))
}

// ShellQuote quotes p for the shell that runs a hook command: Quote's
// word, or bashWord's for a string Quote refuses.
func ShellQuote(p string) string {
	if q, err := Quote(p); err == nil {
		return q
	}
	return bashWord(p)
}

// Command is the hook command line that runs joule for host: the thin
// client when it is installed, else joule hook itself, with the flag of
// the install's containment mode (the thin client forwards it to the
// resident gate).
func Command(s Scope, host string) string {
	if s.Client != "" {
		return ShellQuote(s.Client) + " " + host + s.Contain.Flag()
	}
	return ShellQuote(s.Joule) + " hook " + host + s.Contain.Flag()
}

// Executable checks that the joule binary a hook runs is there.
func Executable(path string) Finding {
	st, err := os.Stat(path)
	if err != nil || st.Mode()&0o111 == 0 {
		return Finding{Text: path + " is not an executable file; the hook would fail"}
	}
	return Finding{OK: true, Text: "the hook runs " + path}
}

// MCPServer sets (or with remove, deletes) joule's entry in a
// {"mcpServers": {…}} file, the shape most hosts share.
func MCPServer(f *JSONFile, entry map[string]any, remove bool) error {
	servers, err := Object(f.Doc, "mcpServers", f.Path)
	if err != nil {
		return err
	}
	if remove {
		if m, _ := servers["joule"].(map[string]any); m != nil {
			if cmd, _ := m["command"].(string); strings.Contains(cmd, "joule") {
				delete(servers, "joule")
			}
		}
	} else {
		servers["joule"] = entry
	}
	PruneEmpty(f.Doc, "mcpServers")
	return nil
}
