package sandbox

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"path/filepath"
	"strings"
)

// What the person sees. Git's view of a work tree (git status, git diff)
// rests on files inside .git that git add and git commit must write, so
// they stay writable inside containment: the index, the refs and the
// work tree's own .gitignore files. What a command writes there can hide a
// change from the person, so that planted code runs later unseen. The
// visibility check (visible_linux.go) notes git's view of each repository
// the discovery follows before the command, and after it undoes what the
// command newly set that makes git look away:
//
//   - the index: an assume-unchanged or skip-worktree bit set during the
//     run is cleared; every entry the command added or changed has its
//     size smudged to 0, as git itself does with racily clean entries, so
//     that git hashes the file again instead of trusting stat data the
//     command wrote; the caches git trusts without looking (cache tree,
//     untracked cache, fsmonitor data) and the offset tables are dropped.
//     An index this code cannot rewrite (a split index, a required
//     extension it does not know, a new sparse directory entry) is put
//     back as it was before the run;
//   - refs/replace/*: a replace ref the run made or changed (loose, or in
//     packed-refs) is moved to the quarantine;
//   - the object store: a loose object the run wrote, moved into place
//     or rewrote in place (its own change time is the run's) whose content
//     does not hash to its name (one swapped for other content, which a
//     later checkout would write into the work tree) is moved to the
//     quarantine; so is a pack the run wrote that git verify-pack refuses
//     (a forged object, a tampered index), with its files, a
//     multi-pack-index or commit-graph the run wrote that git's verify
//     refuses, and an objects/info/alternates the run wrote;
//   - ignore files: an untracked .gitignore the run wrote (or moved into
//     place) that git status does not show, and that decides that some
//     path is ignored, is moved to the quarantine.
//
// .git/info (exclude, sparse-checkout, attributes, grafts) and the
// configuration (core.excludesFile, status.showUntrackedFiles) are
// read-only during the run already (persist.go).

// Index entry flags (the 16-bit flags word, and the extended one).
const (
	ceValid        = 0x8000 // assume-unchanged
	ceExtended     = 0x4000
	ceSkipWorktree = 0x4000 // of the extended flags
	indexModeDir   = 0o040000
)

// indexEntry is what the check compares of one index entry: its stat
// data, object name and mode (raw bytes) and its hiding bits.
type indexEntry struct {
	stat   string // the 40 bytes of stat data and the object name
	valid  bool   // assume-unchanged
	skipWT bool   // skip-worktree
}

// indexView reads an index into its entries by path; nil where it is not
// an index this code reads (or there is none).
func indexView(b []byte, hashLen int) map[string]indexEntry {
	if b == nil {
		return nil
	}
	m := map[string]indexEntry{}
	if indexWalk(b, hashLen, func(e rawEntry) { m[string(e.path)] = e.entry(b, hashLen) }) != nil {
		return nil
	}
	return m
}

// rawEntry is one entry of an index as indexWalk finds it: offsets into
// the index's bytes.
type rawEntry struct {
	off   int    // the entry's start (its stat data)
	flags int    // the flags word
	ext   int    // the extended flags word, -1 if none
	path  []byte // valid during the call only
}

func (e rawEntry) entry(b []byte, hashLen int) indexEntry {
	fl := binary.BigEndian.Uint16(b[e.flags:])
	ie := indexEntry{stat: string(b[e.off : e.off+40+hashLen]), valid: fl&ceValid != 0}
	if e.ext >= 0 {
		ie.skipWT = binary.BigEndian.Uint16(b[e.ext:])&ceSkipWorktree != 0
	}
	return ie
}

func (e rawEntry) mode(b []byte) uint32 { return binary.BigEndian.Uint32(b[e.off+24:]) }

// indexWalk calls fn for every entry of index b and returns the offset
// where the extensions begin (through end).
func indexWalk(b []byte, hashLen int, fn func(rawEntry)) error {
	_, err := indexWalkEnd(b, hashLen, fn)
	return err
}

func indexWalkEnd(b []byte, hashLen int, fn func(rawEntry)) (int, error) {
	if len(b) < 12+hashLen || string(b[:4]) != "DIRC" {
		return 0, errIndex
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return 0, errIndex
	}
	n := binary.BigEndian.Uint32(b[8:12])
	off := 12
	var prev []byte
	fixed := 40 + hashLen + 2
	for e := uint32(0); e < n; e++ {
		start := off
		if off+fixed > len(b) {
			return 0, errIndex
		}
		re := rawEntry{off: start, flags: off + fixed - 2, ext: -1}
		flags := binary.BigEndian.Uint16(b[re.flags:])
		off += fixed
		if flags&ceExtended != 0 {
			if version < 3 || off+2 > len(b) {
				return 0, errIndex
			}
			re.ext = off
			off += 2
		}
		if version == 4 {
			var drop uint64
			for k := 0; ; k++ {
				if off >= len(b) || k > 9 {
					return 0, errIndex
				}
				c := b[off]
				off++
				drop = drop<<7 | uint64(c&0x7f)
				if c&0x80 == 0 {
					break
				}
				drop++
			}
			if drop > uint64(len(prev)) {
				return 0, errIndex
			}
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return 0, errIndex
			}
			prev = append(prev[:len(prev)-int(drop):len(prev)-int(drop)], b[off:off+end]...)
			re.path = prev
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return 0, errIndex
			}
			re.path = b[off : off+end]
			off = start + (off-start+end+8)&^7
			if off > len(b) {
				return 0, errIndex
			}
		}
		fn(re)
	}
	if off > len(b)-hashLen {
		return 0, errIndex
	}
	return off, nil
}

// droppedExtensions are the optional index extensions git trusts without
// looking at the work tree (cache tree, untracked cache, fsmonitor data)
// or that hold offsets into the file (end of index entries, index entry
// offset table): dropped from an index the command changed. Git builds
// them again as it needs them.
var droppedExtensions = map[string]bool{"TREE": true, "UNTR": true, "FSMN": true, "EOIE": true, "IEOT": true}

// fixedIndex is what the check does to an index the command changed.
type fixedIndex struct {
	out     []byte   // the index to write; nil: leave it as it is
	restore bool     // out is the index from before the run (this one could not be read)
	what    []string // what was undone, for the report
}

// beforeEntry is an entry of the index from before the run, its path and
// stat data slices of that index (copied only for version 4's compressed
// paths).
type beforeEntry struct {
	path   []byte
	stage  uint16
	stat   []byte // stat data and object name
	valid  bool
	skipWT bool
}

// entryStage is an entry's merge stage (0 but during a merge).
func entryStage(b []byte, e rawEntry) uint16 {
	return binary.BigEndian.Uint16(b[e.flags:]) & 0x3000 >> 12
}

// fixIndex compares index after (written during the run) with before (nil
// where there was none) and returns what to write instead (see above).
// Both are in git's order (by path, then stage), so one pass over each
// pairs their entries without a map: this runs after every command that
// wrote the index.
func fixIndex(before, after []byte, hashLen int) fixedIndex {
	var prev []beforeEntry
	if before != nil {
		v4 := len(before) > 12 && binary.BigEndian.Uint32(before[4:8]) == 4
		if len(before) > 12 {
			prev = make([]beforeEntry, 0, min(binary.BigEndian.Uint32(before[8:12]), uint32(len(before)/62)))
		}
		err := indexWalk(before, hashLen, func(e rawEntry) {
			ie := e.entry(before, hashLen)
			p := e.path
			if v4 {
				p = append([]byte(nil), p...)
			}
			prev = append(prev, beforeEntry{path: p, stage: entryStage(before, e), stat: before[e.off : e.off+40+hashLen], valid: ie.valid, skipWT: ie.skipWT})
		})
		if err != nil {
			return fixedIndex{} // the person's own index, unread: nothing to compare
		}
	}
	out := append([]byte(nil), after...)
	var cleared, smudged []string
	restore := false
	cur := 0
	end, err := indexWalkEnd(out, hashLen, func(e rawEntry) {
		stage := entryStage(out, e)
		for cur < len(prev) {
			c := bytes.Compare(prev[cur].path, e.path)
			if c > 0 || c == 0 && prev[cur].stage >= stage {
				break
			}
			cur++
		}
		var was beforeEntry
		had := cur < len(prev) && prev[cur].stage == stage && bytes.Equal(prev[cur].path, e.path)
		if had {
			was = prev[cur]
		}
		now := e.entry(out, hashLen)
		mode := e.mode(out)
		if now.valid && !(had && was.valid) {
			fl := binary.BigEndian.Uint16(out[e.flags:])
			binary.BigEndian.PutUint16(out[e.flags:], fl&^ceValid)
			cleared = append(cleared, string(e.path))
		}
		if now.skipWT && !(had && was.skipWT) {
			if mode&indexModeType == indexModeDir {
				restore = true // a sparse directory: no bit to clear
				return
			}
			x := binary.BigEndian.Uint16(out[e.ext:])
			binary.BigEndian.PutUint16(out[e.ext:], x&^ceSkipWorktree)
			cleared = append(cleared, string(e.path))
		}
		if mode&indexModeType == indexModeGitlink || mode&indexModeType == indexModeDir {
			return // git compares a submodule's HEAD, not stat data
		}
		if had && bytes.Equal(was.stat, out[e.off:e.off+40+hashLen]) {
			return
		}
		if binary.BigEndian.Uint32(out[e.off+36:]) != 0 {
			binary.BigEndian.PutUint32(out[e.off+36:], 0)
			smudged = append(smudged, "")
		}
	})
	if err != nil || restore {
		return restoreIndex(before)
	}
	// The extensions: kept but those dropped; a required one (its
	// signature does not start with A-Z) this code does not know, or a
	// split index's link, means the entries are not all here.
	var exts []byte
	dropped := false
	trailer := len(out) - hashLen
	for off := end; off < trailer; {
		if off+8 > trailer {
			return restoreIndex(before)
		}
		sig := string(out[off : off+4])
		size := int(binary.BigEndian.Uint32(out[off+4:]))
		if size < 0 || off+8+size > trailer {
			return restoreIndex(before)
		}
		switch {
		case droppedExtensions[sig]:
			dropped = true
		case sig == "REUC" || sig == "sdir":
			exts = append(exts, out[off:off+8+size]...)
		case sig[0] >= 'A' && sig[0] <= 'Z':
			dropped = true // optional, unknown: git does without it
		default:
			return restoreIndex(before)
		}
		off += 8 + size
	}
	if len(cleared) == 0 && len(smudged) == 0 && !dropped {
		return fixedIndex{}
	}
	body := append(out[:end:end], exts...)
	sum := make([]byte, hashLen)
	if !allZero(after[len(after)-hashLen:]) { // index.skipHash writes none
		if hashLen == 32 {
			s := sha256.Sum256(body)
			copy(sum, s[:])
		} else {
			s := sha1.Sum(body)
			copy(sum, s[:])
		}
	}
	var what []string
	if len(cleared) > 0 {
		what = append(what, "index: assume-unchanged or skip-worktree cleared on "+listSome(cleared))
	}
	// Smudged entries and dropped caches are not reported: git add and
	// commit leave them on every run, and git makes them again.
	return fixedIndex{out: append(body, sum...), what: what}
}

// restoreIndex is the fallback: the index from before the run (none if
// there was none: git reads an absent index as an empty one).
func restoreIndex(before []byte) fixedIndex {
	return fixedIndex{out: before, restore: true, what: []string{"index: one this check cannot read safely, put back as it was before the command"}}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// listSome names up to five paths.
func listSome(ps []string) string {
	if len(ps) <= 5 {
		return strings.Join(ps, ", ")
	}
	return strings.Join(ps[:5], ", ") + " and " + itoa(len(ps)-5) + " more"
}

// packedReplace lists the replace refs of a packed-refs file: name to
// the line that holds it (and its peeled line, if any).
func packedReplace(b []byte) map[string]string {
	if !bytes.Contains(b, []byte(" refs/replace/")) {
		return nil
	}
	m := map[string]string{}
	lines := strings.SplitAfter(string(b), "\n")
	for i, l := range lines {
		oid, name, ok := strings.Cut(strings.TrimRight(l, "\n"), " ")
		if !ok || strings.HasPrefix(oid, "#") || !strings.HasPrefix(name, "refs/replace/") {
			continue
		}
		full := l
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "^") {
			full += lines[i+1]
		}
		m[name] = full
	}
	return m
}

// withoutLines returns packed-refs b without the given lines.
func withoutLines(b []byte, drop map[string]bool) []byte {
	var out []byte
	lines := strings.SplitAfter(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if drop[l] {
			continue
		}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "^") && drop[l+lines[i+1]] {
			i++
			continue
		}
		out = append(out, l...)
	}
	return out
}

// gitView is git's view of one repository's work tree as the command
// starts: what the visibility check compares against after it.
type gitView struct {
	wt, gitdir, common string
	hashLen            int
	index              []byte // nil where there was none (or too large to read)
	indexRead          bool   // index holds the index as it was
	indexID            fileID
	lock               bool              // index.lock was there
	replace            map[string]string // refs/replace/*, loose: name to content
	packed             map[string]string // refs/replace/* in packed-refs: name to lines
	alternates         fileID            // objects/info/alternates
}

// fileID tells whether a file was written: its inode, size and change
// time (the command cannot set a change time back).
type fileID struct {
	exists          bool
	ino, size       uint64
	ctimeS, ctimeNs int64
}

// maxReplaceRefs bounds the loose replace refs a view notes.
const maxReplaceRefs = 1000

// noteView notes the view of repository g (common its common directory,
// wt its work tree) and returns its index (nil where unread), which the
// discovery reads for submodules too.
func (d *discovery) noteView(g, common, wt string, sha256 bool) []byte {
	v := gitView{wt: d.res.resolve(wt), gitdir: g, common: common, hashLen: 20}
	if sha256 {
		v.hashLen = 32
	}
	v.indexID = fileIDOf(filepath.Join(g, "index"))
	if b, ok := readSmall(filepath.Join(g, "index"), maxIndex); ok {
		v.index, v.indexRead = b, true
	} else if !v.indexID.exists {
		v.indexRead = true // none: every entry after the run is the command's
	}
	v.lock = fileIDOf(filepath.Join(g, "index.lock")).exists
	v.replace = looseReplace(common)
	v.alternates = fileIDOf(filepath.Join(common, "objects", "info", "alternates"))
	if b, ok := readSmall(filepath.Join(common, "packed-refs"), maxIndex); ok {
		v.packed = packedReplace(b)
	}
	d.spec.views = append(d.spec.views, v)
	return v.index
}

// looseReplace reads the loose refs below common/refs/replace.
func looseReplace(common string) map[string]string {
	var m map[string]string
	var walk func(dir, name string, depth int)
	walk = func(dir, name string, depth int) {
		if depth > 4 || len(m) >= maxReplaceRefs {
			return
		}
		for _, e := range listDir(dir) {
			p, n := filepath.Join(dir, e.name), name+"/"+e.name
			switch {
			case e.link:
				if m == nil {
					m = map[string]string{}
				}
				m[n] = "link"
			case e.dir:
				walk(p, n, depth+1)
			default:
				b, _ := readSmall(p, 4096)
				if m == nil {
					m = map[string]string{}
				}
				m[n] = string(b)
			}
		}
	}
	walk(filepath.Join(common, "refs", "replace"), "refs/replace", 0)
	return m
}
