package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The namespace construction (the default where unprivileged user
// namespaces work): joule-exec clones the command into a new user, mount
// and PID namespace, mapping the user's own uid and gid (so `id`, file
// owners and git's ownership checks are unchanged), and before exec'ing it
// changes only that namespace's view of the file system:
//
//   - every mount is made read-only, and each writable tree (Plan.Writable)
//     is bound onto itself and made writable again, so that modes, owners
//     and times cannot change outside them (EROFS);
//   - a refused read path (Spec.ReadDeny) is covered: a directory by an
//     empty read-only tmpfs of mode 000, a file by /dev/null bound read-only
//     and nodev, so opening it fails (EACCES) and so does writing it;
//   - an existing protected path (Spec.WriteDeny) is bound onto itself
//     read-only: it cannot be written (EROFS), removed, renamed or replaced
//     (EBUSY: it is a mount point);
//   - each directory between a writable tree and such a path is bound onto
//     itself, so it cannot be renamed away and replaced by one the command
//     made (EBUSY);
//   - an absent protected path cannot be covered by a mount (a mount needs
//     a name to sit on): where the deepest directory of it that exists lies
//     below a writable root (.claude/ for .claude/settings.local.json), that
//     directory is bound read-only; where it is a writable root itself
//     (.mcp.json, .gemini/ absent at the workspace root), and for the
//     grant's own deny rules wherever they lie, Exec makes a stand-in (a
//     socket node) at the first missing name on the way to the path, for
//     the command's run only (standin_linux.go), bound read-only like an
//     existing protected path, so that nothing can be created there while
//     every other name of the root can. Without a stand-in (no private
//     layer in the policy, or none could be made), Landlock refuses
//     creating entries in that directory and in the ones on the way to it,
//     as the Landlock construction does (their existing entries stay fully
//     writable). See docs/gate.md, "Containment".
//
// Landlock then has only a handful of rules: "/" readable, each writable
// tree writable, the carve for absent protected paths without a
// stand-in. The mounts cannot be undone from inside: Landlock refuses
// mount, umount, remount, move and pivot_root to every process it
// confines; the command holds no capability in the namespace (the
// bounding set is emptied, so not even a uid 0 regains one on exec); and
// a user namespace the command creates itself gets a copy in which these
// mounts are locked (the kernel refuses to unmount them, or to clone a
// tree without them for a bind or an overlay layer). /proc/PID/root of a process outside the sandbox is behind
// Landlock's ptrace check, which refuses it.

// MountKind is what covers a path in the namespace construction.
type MountKind int

const (
	// MountPin binds a directory onto itself: it becomes a mount point,
	// which cannot be renamed or removed.
	MountPin MountKind = iota
	// MountReadOnly binds a path onto itself read-only.
	MountReadOnly
	// MountHideDir covers a directory with an empty read-only tmpfs, mode 000.
	MountHideDir
	// MountHideFile binds /dev/null over a file read-only and nodev.
	MountHideFile
)

// Mount is one mount of a Plan.
type Mount struct {
	Path string
	Kind MountKind
}

// Plan is the namespace construction of a Spec: the mounts, in the order
// they are made (parents first), and the Landlock rules of each layer.
type Plan struct {
	// Writable are the writable trees that exist, parents first: all the
	// rest of the file system is made read-only, these are bound onto
	// themselves and made writable again before Mounts are made.
	Writable []string
	// Overlays are the caches mounted over their real directories with
	// the session's private layer (layers.go), after Writable and before
	// Mounts; the rules for their paths are added once they are mounted
	// (a Landlock rule holds an inode: the real directory's would not
	// reach through the overlay).
	Overlays []Overlay
	Mounts   []Mount
	Rules    [][]PathRule
}

// stats remembers what Lstat said of each path one Plan looked at: the
// absent protected paths share their directories, which existingAncestor
// would otherwise stat again for each of them.
type stats map[string]stat

type stat struct{ exists, dir, link bool }

func (c stats) lstat(p string) stat {
	if st, ok := c[p]; ok {
		return st
	}
	var st stat
	if fi, err := os.Lstat(p); err == nil {
		st = stat{exists: true, dir: fi.IsDir(), link: fi.Mode()&os.ModeSymlink != 0}
	}
	c[p] = st
	return st
}

// entries lists directory d, remembering the type of each entry (the
// directory listing says it), and returns their paths; nil if d cannot
// be read.
func (c stats) entries(d string) []string {
	list, err := os.ReadDir(d)
	if err != nil {
		return nil
	}
	out := make([]string, len(list))
	for i, e := range list {
		p := filepath.Join(d, e.Name())
		if _, ok := c[p]; !ok {
			t := e.Type()
			c[p] = stat{exists: true, dir: t.IsDir(), link: t&os.ModeSymlink != 0}
		}
		out[i] = p
	}
	return out
}

// existingAncestor returns the deepest directory of p that exists.
func (c stats) existingAncestor(p string) (string, bool) {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if st := c.lstat(d); st.exists {
			return d, st.dir
		}
		if d == "/" {
			return "", false
		}
	}
}

// insideTree reports whether p lies strictly below one of trees.
func insideTree(p string, trees []string) bool {
	for _, t := range trees {
		if p != t && within(p, t) {
			return true
		}
	}
	return false
}

// belowRoot reports whether p lies strictly below one of trees and is not
// one of them itself: a workspace inside the temp dir is a writable root
// of its own, not a directory of the temp dir to be made read-only.
func belowRoot(p string, trees []string) bool {
	return insideTree(p, trees) && !slices.Contains(trees, p)
}

// wantStandIns lists where Exec makes a stand-in for spec (standin_linux.go):
// for each protected or denied path that is absent, whose deepest existing
// directory lies in a writable tree (not a cache's layer) and is not made
// read-only as a whole (a frozen path's directory below a writable root),
// the first missing name on the way to it (.gemini for .gemini/settings.json,
// .mcp.json itself). A node that is not a directory on the way to such a
// path holds its place and is listed instead, and so is a protected name
// that is a socket node: a stand-in an earlier command left when its
// joule-exec was killed, which the last command to hold its directory's
// stand-ins removes. Either is bound read-only. dirs holds the names a
// protected path goes on below (.claude for .claude/settings.json, .opencode
// where .opencode/opencode.json is protected too): their stand-in is an
// empty directory, through which a host's read of its configuration finds
// nothing (ENOENT) instead of failing on a node that is not a directory
// (ENOTDIR).
func (spec Spec) wantStandIns() (want []string, dirs map[string]bool) {
	st := spec.stats
	if st == nil {
		st = stats{}
	}
	var out []string
	for _, l := range spec.Layers {
		var trees []string
		for _, t := range l.Write {
			if !spec.layered(t) {
				trees = append(trees, t)
			}
		}
		frozen := map[string]bool{}
		for _, p := range l.Frozen {
			frozen[p] = true
		}
		for _, p := range l.WriteDeny {
			var a string // the directory the stand-in is in
			switch s := st.lstat(p); {
			case s.exists:
				// Bound read-only as an existing protected path; listed
				// only if it may be a stand-in left behind.
				if fi, err := os.Lstat(p); !frozen[p] || s.dir || s.link || err != nil || fi.Mode().Type() != os.ModeSocket {
					continue
				}
				a = filepath.Dir(p)
			default:
				d, dir := st.existingAncestor(p)
				switch {
				case d == "" || st.lstat(d).link:
					continue
				case dir:
					a = d
				default:
					a = filepath.Dir(d) // a node on the way holds the place
				}
			}
			if !slices.ContainsFunc(trees, func(t string) bool { return within(a, t) }) || spec.layered(a) {
				continue
			}
			if frozen[p] && belowRoot(a, trees) {
				continue
			}
			rel, err := filepath.Rel(a, p)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				continue
			}
			first, below, _ := strings.Cut(rel, "/")
			out = append(out, filepath.Join(a, first))
			if below != "" {
				if dirs == nil {
					dirs = map[string]bool{}
				}
				dirs[filepath.Join(a, first)] = true
			}
		}
	}
	return compact(out), dirs
}

// Plan computes the namespace construction of spec.
func (spec Spec) Plan() (Plan, error) {
	kinds := map[string]MountKind{}
	set := func(p string, k MountKind) {
		if old, ok := kinds[p]; !ok || k > old {
			kinds[p] = k
		}
	}
	var writable []string
	for _, l := range spec.Layers {
		for _, t := range l.Write {
			// A cache is an overlay, or read-only: not a tree of its own.
			if !spec.layered(t) {
				writable = append(writable, t)
			}
		}
	}
	trees := slices.Clone(writable)
	writable = append(writable, devFiles...)
	pinChain := func(p string) {
		for _, t := range writable {
			if t == p || !within(p, t) {
				continue
			}
			for d := filepath.Dir(p); d != t && within(d, t); d = filepath.Dir(d) {
				set(d, MountPin)
			}
		}
	}
	var plan Plan
	st := spec.stats // what Build saw of these paths, moments ago
	if st == nil {
		st = stats{}
	}
	byDepth := func(a, b string) int {
		if n := strings.Count(a, "/") - strings.Count(b, "/"); n != 0 {
			return n
		}
		return strings.Compare(a, b)
	}
	slices.SortFunc(trees, byDepth)
	for _, t := range slices.Compact(trees) {
		if s := st.lstat(t); s.exists && !s.link {
			plan.Writable = append(plan.Writable, t)
		}
	}
	plan.Overlays = spec.overlays
	// What programs run later outside read as configuration or code
	// (persist.go): read-only; where absent (no placeholder could be
	// made), refused as an absent protected path is below.
	var absentGuards []string
	for _, g := range spec.guarded {
		if s := st.lstat(g.path); s.exists && !s.link {
			set(g.path, MountReadOnly)
			pinChain(g.path)
			continue
		}
		if a, ok := st.existingAncestor(g.path); ok && belowRoot(a, plan.Writable) {
			set(a, MountReadOnly)
			pinChain(a)
			continue
		}
		absentGuards = append(absentGuards, g.path)
	}
	access := spec.writeAccess()
	for _, l := range spec.Layers {
		absent := slices.Clone(absentGuards)
		for _, p := range l.ReadDeny {
			switch s := st.lstat(p); {
			case !s.exists:
				continue // nothing to read; created later, it is the command's own
			case s.dir:
				set(p, MountHideDir)
			default:
				set(p, MountHideFile)
			}
			pinChain(p)
		}
		for _, p := range l.WriteDeny {
			if st.lstat(p).exists {
				set(p, MountReadOnly)
				pinChain(p)
				continue
			}
			// An absent protected configuration whose directory exists
			// below a writable root (.claude/settings.local.json beside
			// .claude/settings.json, .cursor/hooks.json): that directory
			// is made read-only. At a root itself (.mcp.json), or for a
			// deny rule of the grant, the stand-in Exec made is now the
			// deepest existing entry, made read-only the same way;
			// without one, Landlock carves.
			if a, dir := st.existingAncestor(p); a != "" && (spec.standIns[a] || dir && slices.Contains(l.Frozen, p) && belowRoot(a, l.Write)) {
				set(a, MountReadOnly)
				pinChain(a)
				continue
			}
			absent = append(absent, p)
		}
		c := carver{st: st}
		c.carve("/", readRights, nil, 0)
		for _, t := range l.Write {
			if spec.layered(t) {
				continue
			}
			c.carve(t, access, absent, 0)
		}
		for _, o := range spec.overlays {
			c.add(o.Path, access, true)
		}
		for _, d := range devFiles {
			c.carve(d, access, nil, 0)
		}
		if c.err != nil {
			return Plan{}, c.err
		}
		plan.Rules = append(plan.Rules, c.rules)
	}
	// Nothing below a hidden directory needs a mount of its own (it is not
	// there to be reached), and a mount below a read-only one is made
	// after it, on the path it covers.
	var paths []string
	for p := range kinds {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, byDepth)
	var hidden []string
	for _, p := range paths {
		if slices.ContainsFunc(hidden, func(h string) bool { return within(p, h) }) {
			continue
		}
		k := kinds[p]
		if k == MountHideDir {
			hidden = append(hidden, p)
		}
		plan.Mounts = append(plan.Mounts, Mount{Path: p, Kind: k})
	}
	return plan, nil
}
