//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/joulehook/joule/core/gitignore"
	"golang.org/x/sys/unix"
)

// The sweep: what the command left in git directories the discovery did
// not guard. The discovery (persist.go) makes the configuration and hooks
// of the repositories that exist when the command starts read-only; a
// repository the command makes (git init, a clone, a submodule added, a
// bare repository written as plain files, a .git file or link pointing
// anywhere), or one the discovery did not reach (deeper than it looks,
// below the 128 listings), is writable throughout. A mount needs a name
// that exists, and Landlock cannot refuse one name in a directory where
// others can be created. So once the command has ended and, in the
// namespace construction, every process of it with it (the init of its
// PID namespace killed and reaped them all before joule-exec goes on),
// joule-exec, unconfined, walks the trees the grant names at every depth
// and, in every git directory the discovery did not follow, moves out
// what git would run:
//
//   - every entry of hooks/ that is not a *.sample file (or hooks itself,
//     where it is a link);
//   - from config and config.worktree, every variable but the few kept
//     (keptConfig: the repository's format, its remotes and branches,
//     the submodules' URLs, the user's name): core.fsmonitor, hooksPath,
//     sshCommand, pager, editor, alias.*, filter.*, diff.*.textconv,
//     include.path, includeIf and the rest are gone, whatever their
//     names; a URL with a transport helper (ext::, fd::, x::) and a
//     core.worktree that leaves the tree go too. The file is rewritten
//     only where something is dropped; a link in its place is moved out;
//   - a commondir, .git file or .git link that names a directory in
//     another writable tree (the temp dir, where the sweep does not look);
//     one that names a directory in the swept trees has that directory
//     swept as a git directory.
//
// What is moved goes to a quarantine directory of the session
// ($JOULE_HOME/layers/.quarantine/<time>-<pid>, which no contained command
// can read or write), each file as it was and a list of what was dropped
// from which repository, and joule-exec says so on stderr. Without a
// layer directory the files are removed and the message says what.
// Ordinary work drops nothing: git init, clone and submodule add write
// only kept variables and *.sample hooks.
//
// The same walk takes out the git-ignored code and configuration the
// command wrote (ignored.go). It does not follow links, enters no
// node_modules (an ignored one is an overlay of the session's, or new and
// moved to its layer; one that is not ignored shows in git status), no
// overlay or read-only guard, no cache and no refused path (the
// command wrote neither), and in a git directory enters only modules/ and
// worktrees/. It opens every directory relative to its
// parent's descriptor without following links, so that another command
// running at the same time cannot lead it outside by swapping a directory
// for a link. It stops at maxSweepDirs directories, and says so.

// maxSweepDirs bounds the directories one sweep lists; maxSweepDepth how
// deep it goes; maxQuarantined the bytes of one file copied to the
// quarantine (a larger one is removed, and said so).
const (
	maxSweepDirs   = 50000
	maxSweepDepth  = 64
	maxQuarantined = 1 << 20
)

// QuarantineDir is where the sweep moves what it takes out of a
// repository, beside the sessions' layers (gcLayers leaves names starting
// with a dot alone).
const QuarantineDir = ".quarantine"

// sweeper is one sweep.
type sweeper struct {
	trees    []string        // swept: the trees the grant names
	writable []string        // every writable tree
	known    map[string]bool // git directories the discovery followed
	skip     map[string]bool // trees the command could not write: not entered
	done     map[string]bool // git directories swept
	qroot    string          // the quarantine root; "" removes
	qdir     string          // this sweep's, made on first use
	dirs     int
	stopped  []string // trees whose walk stopped at a bound
	found    []sweptRepo
	repos    int  // sweptRepo.n's given
	dry      bool // find, change nothing (the benchmark)
	// The visibility check (visible_linux.go): the views noted before the
	// run, when it started (less freshMargin; zero: no check), the
	// .gitignore files the walk found the command may have written, what
	// was undone, and the environment git runs with.
	views   []gitView
	since   time.Time
	ignores []ignoreCand
	hid     []sweptRepo
	getenv  func(string) string
	// The workspace's ignored code (ignored.go): what the command changed
	// since started (less ctimeSlack) is taken out; covered are the paths
	// the namespace construction mounted (overlays, read-only guards),
	// which the command could not change; new directories of dependencies
	// go to slot.
	started time.Time
	covered map[string]bool
	global  *gitignore.File
	slot    string
	code    []sweptRepo // ignored code taken out, by directory
	// ignoreFiles are the .gitignore files the discovery found where they
	// are (nil: it did not walk them all): one elsewhere, such as a
	// directory the command moved into place with its .gitignore, is the
	// command's.
	ignoreFiles map[string]bool
	layered     []string // new directories of dependencies moved to the layer
}

// sweptRepo is what was moved out of one git directory.
type sweptRepo struct {
	n      int // its directory in the quarantine
	gitdir string
	what   []string
	qdir   string // where it went ("" removed)
}

// sweep runs the sweep for spec (after the command: see above) and writes
// what it moved to warn.
func (spec *Spec) sweep(warn io.Writer) {
	s := spec.newSweeper()
	s.fixViews()
	s.run()
	s.fixIgnores()
	s.report(warn)
}

func (spec *Spec) newSweeper() *sweeper {
	s := &sweeper{known: spec.known, done: map[string]bool{}, views: spec.views, getenv: spec.persist.getenv}
	if len(s.views) > 0 && !spec.started.IsZero() {
		s.since = spec.started.Add(-freshMargin)
	}
	if s.getenv == nil {
		s.getenv = func(string) string { return "" }
	}
	if s.known == nil {
		s.known = map[string]bool{}
	}
	if spec.LayerDir != "" {
		s.qroot = filepath.Join(filepath.Dir(spec.LayerDir), QuarantineDir)
	}
	res := &resolver{}
	for _, t := range spec.persist.grant {
		s.trees = append(s.trees, res.resolve(t))
	}
	s.trees = outermost(compact(s.trees))
	// The caches (an overlay kept their real directory from the command)
	// and the refused paths ($JOULE_HOME, the home's secrets) are not
	// entered: nothing there is the command's.
	s.skip = map[string]bool{}
	for _, c := range spec.Caches {
		s.skip[c] = true
	}
	for _, l := range spec.Layers {
		s.writable = append(s.writable, l.Write...)
		for _, p := range l.ReadDeny {
			s.skip[p] = true
		}
	}
	s.writable = compact(s.writable)
	s.started, s.slot = spec.started, spec.slot
	if len(spec.ignoredStopped) == 0 {
		s.ignoreFiles = spec.ignoreFiles
	}
	s.covered = map[string]bool{}
	for _, o := range spec.overlays {
		s.covered[o.Path] = true
	}
	for _, g := range spec.guarded {
		s.covered[g.path] = true
	}
	getenv := spec.persist.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	excludes := ""
	if spec.persist.home != "" {
		var g gitConfig
		if b, ok := readSmall(filepath.Join(spec.persist.home, ".gitconfig"), maxGitFile); ok {
			parseGitConfig(b, g.add)
		}
		excludes = g.excludesFile
	}
	s.global = ignoreRules(excludes, spec.persist.home, getenv)
	return s
}

// ctimeSlack is how much earlier than the command's start a change may be
// dated and still be the command's: the kernel dates changes with a coarse
// clock, up to a tick behind the one time.Now reads.
const ctimeSlack = 20 * time.Millisecond

// outermost drops the trees inside another of ps (sorted, compact).
func outermost(ps []string) []string {
	var out []string
	for _, p := range ps {
		if len(out) == 0 || !within(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

func (s *sweeper) run() {
	for _, t := range s.trees {
		fd, err := unix.Open(t, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if !s.walk(fd, t, 0, "", topScope(t, s.global), topScope(t, s.global)) {
			s.stopped = append(s.stopped, t)
		}
		unix.Close(fd)
	}
}

func inAny(p string, trees []string) bool {
	for _, t := range trees {
		if within(p, t) {
			return true
		}
	}
	return false
}

// walk looks at directory fd (path p, sc the ignore rules in force there,
// ps those of them the person had before the command)
// and below it; false if it stopped at a bound. anc is the innermost
// directory above p that the command changed (visible_linux.go), "" if
// none.
func (s *sweeper) walk(fd int, p string, depth int, anc string, sc, ps ignoreScope) bool {
	if s.dirs >= maxSweepDirs || depth > maxSweepDepth {
		return false
	}
	s.dirs++
	// fresh: entries were made, removed or renamed in p since the command
	// started (its change time is later): only then can a file of it that
	// no rule names as code be the command's new one.
	fresh := false
	if !s.since.IsZero() || !s.started.IsZero() {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil {
			if s.fresh(&st) {
				anc = p
			}
			fresh = !s.started.IsZero() && !time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(s.started.Add(-ctimeSlack))
		}
	}
	ents := listFD(fd, p)
	var head, objects, refs, commondir, dotgit, gi bool
	for _, e := range ents {
		switch e.name {
		case ".gitignore":
			gi = !e.dir
			if !s.since.IsZero() {
				s.noteIgnore(fd, p, anc)
			}
		case "HEAD":
			head = !e.dir
		case "objects":
			objects = true
		case "refs":
			refs = true
		case "commondir":
			commondir = !e.dir
		case ".git":
			dotgit = true
		}
	}
	gitdir := head && (objects && refs || commondir)
	if gitdir {
		s.gitdir(fd, p)
	} else {
		sc = sc.enter(p, dotgit, gi, s.global)
		// ps has only the .gitignore files the discovery found where
		// they are: one the command wrote or moved into place is the
		// visibility check's (visible_linux.go) to show, and what it
		// ignores is not taken out as ignored files of no name of code.
		ps = ps.enter(p, dotgit, gi && (s.ignoreFiles == nil || s.ignoreFiles[p+"/.gitignore"]), s.global)
	}
	ok := true
	for _, e := range ents {
		q := p + "/" + e.name
		switch {
		case e.name == ".git" && !e.dir:
			s.pointer(fd, p)
			continue
		case s.covered[q] || s.skip[q]:
			continue
		case !gitdir && (!e.dir || e.link):
			// Ignored code by its name, changed where the discovery did
			// not bind it read-only; any other ignored file but an output
			// (a built program included: builtBinary), new (its directory
			// changed).
			switch {
			case s.started.IsZero():
			case codeFile(e.name, filepath.Base(p)):
				if s.changed(fd, e.name, false) && sc.ignored(q, false) {
					s.takeCode(fd, p, e.name)
				}
			case fresh && !outputFile(e.name) && e.name != ".gitignore":
				if s.changed(fd, e.name, false) && ps.ignored(q, false) && !builtBinary(q) {
					s.takeCode(fd, p, e.name)
				}
			}
			continue
		case !e.dir || e.link:
			continue
		case gitdir && e.name != "modules" && e.name != "worktrees":
			continue
		case !gitdir && !s.started.IsZero() && s.ignoredDir(fd, p, e.name, sc, ps):
			continue
		case e.name == "node_modules":
			continue
		}
		sub, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		ok = s.walk(sub, q, depth+1, anc, sc, ps) && ok
		unix.Close(sub)
	}
	return ok
}

// changed reports whether entry name of directory fd was changed (or,
// with born, made) since the command started: its change time (birth
// time) is later, less ctimeSlack. Neither can be set by the command:
// utimes sets the modification time only.
func (s *sweeper) changed(fd int, name string, born bool) bool {
	var st unix.Statx_t
	if unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_CTIME|unix.STATX_BTIME, &st) != nil {
		return false
	}
	t := st.Ctime
	if born && st.Mask&unix.STATX_BTIME != 0 {
		t = st.Btime
	}
	return !time.Unix(t.Sec, int64(t.Nsec)).Before(s.started.Add(-ctimeSlack))
}

// ignoredDir handles a directory of the walk that is ignored
// (ignored.go) and not an output: a __pycache__ has the .pyc files the
// command wrote removed; an existing configuration directory the
// discovery did not cover has what the command changed in it taken out; a
// new configuration directory goes to the quarantine, any other new one
// (dependencies a package install made, a venv, scripts) to the session's
// layer. It reports whether it handled the directory (the walk does not
// enter it): every ignored directory but an output is handled, an existing
// one the discovery did not reach is left as it is (docs/gate.md, "Not
// covered").
func (s *sweeper) ignoredDir(fd int, p, name string, sc, ps ignoreScope) bool {
	q := p + "/" + name
	switch {
	case outputDirs[name] && name != "__pycache__":
		return false
	case codeDir(name) || name == "__pycache__":
		if !sc.ignored(q, true) {
			return false
		}
	case !ps.ignored(q, true):
		return false
	}
	born := s.changed(fd, name, true)
	switch {
	case name == "__pycache__" || configDirs[name] && !born:
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return true
		}
		s.takeChanged(sub, q, 0)
		unix.Close(sub)
	case !born:
		// An existing directory the discovery did not reach.
	case configDirs[name]:
		s.takeCode(fd, p, name)
	default:
		s.toLayer(fd, p, name)
	}
	return true
}

// takeChanged takes out what the command changed in directory fd (path
// p), an ignored directory every file of which is code or configuration,
// and below it (at most four levels).
func (s *sweeper) takeChanged(fd int, p string, depth int) {
	for _, e := range listFD(fd, p) {
		if !e.dir || e.link {
			if s.changed(fd, e.name, false) {
				s.takeCode(fd, p, e.name)
			}
			continue
		}
		if depth >= 4 {
			continue
		}
		if sub, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			s.takeChanged(sub, p+"/"+e.name, depth+1)
			unix.Close(sub)
		}
	}
}

// takeCode moves entry name of directory fd (path dir) to the quarantine:
// ignored code or configuration the command wrote.
func (s *sweeper) takeCode(fd int, dir, name string) {
	var r *sweptRepo
	if n := len(s.code); n > 0 && s.code[n-1].gitdir == dir {
		r = &s.code[n-1]
	} else {
		s.code = append(s.code, *s.repo(dir))
		r = &s.code[len(s.code)-1]
	}
	s.move(r, fd, name, name)
	r.qdir = s.qdir
}

// toLayer moves a new directory of dependencies (entry name of directory
// fd, path dir) to the session's layer, as the upper layer of the overlay
// the session's next command mounts over it, and leaves an empty directory
// in its place. Where it cannot (no layer; another file system), it goes
// to the quarantine.
func (s *sweeper) toLayer(fd int, dir, name string) {
	p := dir + "/" + name
	if s.dry {
		s.layered = append(s.layered, p)
		return
	}
	if s.slot != "" {
		base := layerBase(s.slot, p)
		upper := filepath.Join(base, "upper")
		if err := os.MkdirAll(base, 0o700); err == nil {
			unix.Rename(upper, filepath.Join(base, "old."+strconv.FormatInt(time.Now().UnixNano(), 10)))
			if unix.Renameat(fd, name, unix.AT_FDCWD, upper) == nil {
				unix.Mkdirat(fd, name, 0o755)
				s.layered = append(s.layered, p)
				return
			}
		}
	}
	s.takeCode(fd, dir, name)
}

// gitdirAt sweeps the git directory at path g (resolved), opened anew.
func (s *sweeper) gitdirAt(g string) {
	if s.known[g] || s.done[g] {
		return
	}
	fd, err := unix.Open(g, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	s.gitdir(fd, g)
}

// gitdir sweeps git directory fd (path g) unless the discovery followed
// it: its commondir, configuration and hooks.
func (s *sweeper) gitdir(fd int, g string) {
	if s.known[g] || s.done[g] {
		return
	}
	s.done[g] = true
	r := s.repo(g)
	if b, st, ok := readAt(fd, "commondir"); st != 0 {
		target := ""
		if ok {
			if c, ok := commondirTarget(b, g); ok {
				target = c
			}
		}
		if st != unix.S_IFREG || !s.follow(target, g) {
			s.move(r, fd, "commondir", "commondir")
		}
	}
	s.config(r, fd, "config")
	s.config(r, fd, "config.worktree")
	s.hooks(r, fd)
	if len(r.what) > 0 {
		r.qdir = s.qdir
		s.found = append(s.found, *r)
	}
}

func (s *sweeper) repo(g string) *sweptRepo {
	s.repos++
	return &sweptRepo{n: s.repos, gitdir: g}
}

// follow decides what a pointer from a swept git directory or work tree
// (a commondir, a .git file or link) to target may stay: one naming a git
// directory the discovery followed, or the directory itself, stays; one
// naming a directory in the swept trees stays, and that directory is
// swept; one naming a directory outside every writable tree stays (the
// command could not have written there). Anything else (another writable
// tree, a path that does not resolve) is to be moved out.
func (s *sweeper) follow(target, from string) bool {
	if target == "" {
		return false
	}
	t, err := filepath.EvalSymlinks(target)
	if err != nil {
		return false
	}
	switch {
	case t == from || s.known[t]:
		return true
	case inAny(t, s.trees):
		s.gitdirAt(t)
		return true
	case inAny(t, s.writable):
		return false
	}
	return true
}

// pointer sweeps a .git entry of work tree fd (path wt) that is not a
// directory: a .git file (gitdir: PATH) or a link.
func (s *sweeper) pointer(fd int, wt string) {
	var st unix.Stat_t
	if unix.Fstatat(fd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	p := wt + "/.git"
	target := ""
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		if t, err := filepath.EvalSymlinks(p); err == nil {
			if fi, err := os.Stat(t); err == nil && fi.IsDir() {
				target = t
			} else if b, ok := readSmall(t, maxGitFile); ok {
				target, _ = gitfileTarget(b, t)
			}
		}
	case unix.S_IFREG:
		if b, _, ok := readAt(fd, ".git"); ok {
			target, _ = gitfileTarget(b, p)
		}
	default:
		return // git reads neither
	}
	if target != "" && s.follow(target, "") {
		return
	}
	r := s.repo(p)
	s.move(r, fd, ".git", ".git")
	r.qdir = s.qdir
	s.found = append(s.found, *r)
}

// config drops from configuration file name of git directory fd every
// variable keptConfig does not keep, the originals to the quarantine.
func (s *sweeper) config(r *sweptRepo, fd int, name string) {
	b, st, ok := readAt(fd, name)
	switch {
	case st == 0:
		return
	case st != unix.S_IFREG || !ok:
		s.move(r, fd, name, name)
		return
	}
	var kept, dropped []string
	var out strings.Builder
	lastHeader := ""
	complete := parseGitConfig(b, func(section, sub, key, value string) {
		if !keptConfig(section, sub, key, value, r.gitdir, s.trees) {
			dropped = append(dropped, configName(section, sub, key))
			return
		}
		kept = append(kept, key)
		h := "[" + section + "]"
		if sub != "" {
			h = "[" + section + " \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(sub) + "\"]"
		}
		if h != lastHeader {
			out.WriteString(h + "\n")
			lastHeader = h
		}
		out.WriteString("\t" + key + " = " + quoteConfig(value) + "\n")
	})
	if complete && len(dropped) == 0 {
		return
	}
	if !complete {
		dropped = append(dropped, "what follows a line git cannot read")
	}
	if s.dry {
		r.what = append(r.what, name)
		return
	}
	s.keep(r, name, b)
	tmp := "." + name + ".joule-sweep"
	unix.Unlinkat(fd, tmp, 0)
	w, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err == nil {
		_, err = unix.Write(w, []byte(out.String()))
		unix.Close(w)
		if err == nil {
			err = unix.Renameat(fd, tmp, fd, name)
		}
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
		unix.Unlinkat(fd, name, 0) // no configuration at all is git's default
	}
	seen := map[string]bool{}
	var names []string
	for _, d := range dropped {
		if !seen[d] {
			seen[d] = true
			names = append(names, d)
		}
	}
	r.what = append(r.what, name+" ("+strings.Join(names, ", ")+")")
}

// hooks moves out every entry of hooks/ but *.sample files and
// directories (git runs neither), or hooks itself where it is not a
// directory.
func (s *sweeper) hooks(r *sweptRepo, fd int) {
	var st unix.Stat_t
	if unix.Fstatat(fd, "hooks", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		s.move(r, fd, "hooks", "hooks")
		return
	}
	hfd, err := unix.Openat(fd, "hooks", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(hfd)
	for _, e := range listFD(hfd, "") {
		if e.dir || strings.HasSuffix(e.name, ".sample") && !e.link {
			continue
		}
		s.move(r, hfd, e.name, "hooks/"+e.name)
	}
}

// move takes entry name of directory fd out: a regular file's content (up
// to maxQuarantined) and a link's target are kept in the quarantine as
// label, then the entry is removed (a directory: renamed into the
// quarantine where it is on the same file system, else left).
func (s *sweeper) move(r *sweptRepo, fd int, name, label string) {
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if s.dry {
		r.what = append(r.what, label)
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if q := s.quarantine(); q != "" {
			dst := filepath.Join(q, strconv.Itoa(r.n), strings.ReplaceAll(label, "/", "_"))
			os.MkdirAll(filepath.Dir(dst), 0o700)
			if unix.Renameat(fd, name, unix.AT_FDCWD, dst) == nil {
				r.what = append(r.what, label+" (a directory)")
				return
			}
		}
		r.what = append(r.what, label+" (a directory: could not be moved, left in place)")
		return
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, _ := unix.Readlinkat(fd, name, buf)
		s.keep(r, label, []byte("symbolic link to "+string(buf[:max(n, 0)])+"\n"))
	case unix.S_IFREG:
		if b, _, ok := readAtMax(fd, name, maxQuarantined); ok {
			s.keep(r, label, b)
		} else {
			s.keep(r, label, []byte("(not kept: larger than "+strconv.Itoa(maxQuarantined)+" bytes)\n"))
		}
	}
	if unix.Unlinkat(fd, name, 0) != nil {
		r.what = append(r.what, label+" (could not be removed)")
		return
	}
	r.what = append(r.what, label)
}

// keep writes b to the quarantine as label of the repository being swept.
func (s *sweeper) keep(r *sweptRepo, label string, b []byte) {
	q := s.quarantine()
	if q == "" {
		return
	}
	dir := filepath.Join(q, strconv.Itoa(r.n))
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	if _, err := os.Lstat(filepath.Join(dir, "where")); err != nil {
		os.WriteFile(filepath.Join(dir, "where"), []byte(r.gitdir+"\n"), 0o600)
	}
	os.WriteFile(filepath.Join(dir, strings.ReplaceAll(label, "/", "_")), b, 0o600)
}

// quarantine makes this sweep's quarantine directory on first use; "" if
// there is none.
func (s *sweeper) quarantine() string {
	if s.qdir != "" || s.qroot == "" {
		return s.qdir
	}
	d := filepath.Join(s.qroot, time.Now().UTC().Format("20060102T150405.000000000Z")+"-"+strconv.Itoa(os.Getpid()))
	if os.MkdirAll(d, 0o700) != nil {
		s.qroot = ""
		return ""
	}
	s.qdir = d
	return d
}

// report says what the sweep moved out, and where it stopped.
func (s *sweeper) report(w io.Writer) {
	if w == nil {
		return
	}
	s.tell(w, "joule-exec: git would have run what this command left in repositories it made or that were not guarded while it ran; taken out", true, s.found, ", ")
	s.tell(w, "joule-exec: this command left what hides a change from git status and git diff; undone", false, s.hid, "; ")
	if len(s.layered) > 0 {
		fmt.Fprintf(w, "joule-exec: the git-ignored directories this command made (%s) are the session's own: moved to its private layer, which its next commands see; the person's programs see an empty directory there (install dependencies from the lockfile, which the diff shows)\n", strings.Join(s.layered, ", "))
	}
	s.tell(w, "joule-exec: programs run later would read as code or configuration what this command wrote to git-ignored paths, which the person's diff does not show; taken out", true, s.code, ", ")
	for _, t := range s.stopped {
		fmt.Fprintf(w, "joule-exec: the check for repositories the command made stopped below %s (more than %d directories, or deeper than %d): git may run what it left in one further down\n", t, maxSweepDirs, maxSweepDepth)
	}
}

// tell writes one kind of what the sweep did (head, then a line a git
// directory or workspace) to w and to the quarantine's README. removed
// says what was taken out is gone where there is no quarantine.
func (s *sweeper) tell(w io.Writer, head string, removed bool, list []sweptRepo, sep string) {
	if len(list) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString(head)
	switch {
	case s.qdir != "":
		b.WriteString(" (kept in " + s.qdir + ")")
	case removed:
		b.WriteString(" and removed")
	}
	b.WriteString(":\n")
	for _, r := range list {
		b.WriteString("  " + r.gitdir + ": " + strings.Join(r.what, sep) + "\n")
	}
	io.WriteString(w, b.String())
	if s.qdir != "" {
		if f, err := os.OpenFile(filepath.Join(s.qdir, "README"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			f.WriteString(b.String())
			f.Close()
		}
	}
}

// readAt reads entry name of directory fd without following a link, and
// reports its type (0 where it is absent); ok only for a regular file of
// at most maxGitFile bytes.
func readAt(fd int, name string) ([]byte, uint32, bool) {
	return readAtMax(fd, name, maxGitFile)
}

func readAtMax(fd int, name string, limit int) ([]byte, uint32, bool) {
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil, 0, false
	}
	typ := st.Mode & unix.S_IFMT
	if typ != unix.S_IFREG || st.Size > int64(limit) {
		return nil, typ, false
	}
	f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, typ, false
	}
	defer unix.Close(f)
	b := make([]byte, st.Size+1)
	n, err := readFull(f, b)
	if err != nil || n > int(st.Size) {
		return nil, typ, false
	}
	return b[:n], typ, true
}

// keptConfig reports whether a variable of a configuration file of git
// directory g stays: those that describe the repository and where it
// fetches from, none that names a program, a hook, a file to include, or
// anything git would run or follow outside the tree.
func keptConfig(section, sub, key, value, g string, trees []string) bool {
	switch section {
	case "core":
		switch key {
		case "repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
			"precomposeunicode", "symlinks", "autocrlf", "eol", "safecrlf", "quotepath",
			"sparsecheckout", "sparsecheckoutcone":
			return sub == ""
		case "worktree":
			// Where git checks out and reads the work tree: inside the
			// swept trees only.
			wt := value
			if !filepath.IsAbs(wt) {
				wt = filepath.Join(g, wt)
			}
			return sub == "" && inAny(filepath.Clean(wt), trees)
		}
	case "extensions":
		switch key {
		case "objectformat", "worktreeconfig", "refstorage", "preciousobjects":
			return sub == ""
		}
	case "user":
		return sub == "" && (key == "name" || key == "email")
	case "init":
		return sub == "" && key == "defaultbranch"
	case "remote":
		switch key {
		case "url", "pushurl":
			return sub != "" && plainURL(value)
		case "fetch", "push", "tagopt", "mirror", "prune":
			return sub != ""
		}
	case "branch":
		switch key {
		case "remote", "merge", "rebase", "pushremote", "description":
			return sub != ""
		}
	case "submodule":
		switch key {
		case "url":
			return sub != "" && plainURL(value)
		case "active", "branch", "shallow", "ignore", "fetchrecursesubmodules":
			return sub != ""
		case "update":
			switch value {
			case "checkout", "rebase", "merge", "none":
				return sub != ""
			}
		}
	case "pull":
		return sub == "" && (key == "rebase" || key == "ff")
	case "push":
		return sub == "" && key == "default"
	case "fetch":
		return sub == "" && key == "prune"
	}
	return false
}

// transportHelper matches a URL git hands to a transport helper
// (<transport>::<address>: ext:: runs a command, fd:: talks to a
// descriptor, any other runs git-remote-<transport>).
var transportHelper = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9+.-]*::`)

// plainURL reports whether a remote's URL is one git's own transports
// handle: no helper, no option in place of a host.
func plainURL(u string) bool {
	return !transportHelper.MatchString(u) && !strings.HasPrefix(u, "-") && !strings.ContainsAny(u, "\x00\n")
}

// configName is a variable's name as git config prints it.
func configName(section, sub, key string) string {
	if sub == "" {
		return section + "." + key
	}
	return section + "." + sub + "." + key
}

// quoteConfig writes a value for a configuration file: as it is where
// git reads it back the same, else quoted.
func quoteConfig(v string) string {
	if v != "" && strings.Trim(v, " \t") == v && !strings.ContainsAny(v, "\"\\#;\n\t\b\r") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`)
	return `"` + r.Replace(v) + `"`
}

// listFD lists directory fd, just opened (p is its path, unused: the
// look-up of an entry whose type the listing does not say is relative to
// fd).
func listFD(fd int, p string) []dirent {
	var buf [8192]byte
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return out
		}
		out = appendDirents(out, buf[:n], func(name string) (dir, link bool) {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				return st.Mode&unix.S_IFMT == unix.S_IFDIR, st.Mode&unix.S_IFMT == unix.S_IFLNK
			}
			return false, false
		})
	}
}
