package sandbox

import (
	"path/filepath"
	"strings"
	"syscall"
)

// What confined code writes must not run, or be followed, unconfined
// later. Inside the writable trees some paths are read by programs that
// run afterwards outside the sandbox as configuration or code: git's
// configuration and hooks, shell start-up files, the directories of
// PATH. The namespace construction binds each of them read-only
// (guards, made by Plan as MountReadOnly), found when the command starts
// by a bounded discovery:
//
//   - git: in each writable tree the grant names, the repositories whose
//     top is the tree or a directory at most gitScanDepth below it (a
//     .git directory or file, or a bare repository: HEAD, objects/ and
//     refs/; at most maxListings directories listed, none named
//     node_modules); those the repositories' indexes name at any depth
//     (submodules, mode 160000, and bare repositories committed as plain
//     files, an entry named HEAD); the paths of .gitmodules; the
//     submodules' git directories in modules/, recursively; a git
//     directory named by GIT_DIR. Of each git directory: config,
//     config.worktree, commondir, hooks/, info/, the worktrees'
//     commondir and config.worktree, every core.hooksPath and every
//     include.path or includeIf.*.path its configuration (or the
//     global and system one) names. A .git file is read-only itself; a
//     bare repository found below a tree is read-only as a whole.
//   - the home, where it lies inside a writable tree: every entry of it
//     whose name starts with a dot (the configuration of nearly every
//     program), and the start-up files of the shells and of the session
//     (startupFiles) where they are absent;
//   - ZDOTDIR's zsh files, the files ENV and BASH_ENV name,
//     XDG_CONFIG_HOME, GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM;
//   - every absolute directory of PATH, GOBIN and GOPATH/bin.
//
// A mount needs a name to cover. Where git reads an absent name as if it
// were empty (hooks/, info/, an include target, a core.hooksPath
// directory, a worktree's config.worktree, config) the discovery creates
// it empty, as git init would, before binding it (a placeholder); an
// absent commondir gets the placeholder ".", which names the git
// directory itself: git reads it as it reads no commondir at all, and
// then confined code cannot create one that sends git's configuration
// and hooks elsewhere. Where an empty file is not the same as none (a
// shell start-up file: an empty ~/.bash_profile would hide ~/.profile) the
// absent path is refused as the gate's absent protected paths are: its
// deepest existing directory is made read-only, or, where that is the
// writable root, Landlock refuses creating entries in it.
//
// Landlock alone cannot refuse these without refusing every new entry in
// their directories (git writes its index lock in .git on every commit),
// so the Landlock construction leaves them writable (LandlockOnlyGaps).
// A repository the discovery did not find, and one confined code creates
// anew, is not guarded during the run: once every process of the command
// has ended, the sweep (sweep_linux.go) moves out what git would run of
// every git directory in the trees the grant names that this discovery
// did not follow. What neither covers is listed in docs/gate.md, "Not
// covered".

// gitScanDepth bounds the directories below each writable tree looked at
// to find repositories, breadth first: 2 lists the tree and its
// subdirectories and looks up .git and HEAD in theirs, finding a
// repository whose top is at most two levels below the tree; maxListings
// bounds the directories looked at by one command, and node_modules is
// never entered (npm keeps no repository there, and it holds hundreds of
// directories). A listing is four system calls, a look-up one or two:
// this repository's checkout has 15 directories to list and 50 to look
// into at this depth.
const (
	gitScanDepth = 2
	maxListings  = 128
)

// benchNoIgnored leaves the walk for ignored code out of the discovery:
// BenchmarkIgnoredWalk's baseline, never set otherwise.
var benchNoIgnored bool

// benchShallowIgnored bounds that walk as it was before it went deep (two
// levels, 128 listings): BenchmarkIgnoredWalk's other baseline, never set
// otherwise.
var benchShallowIgnored bool

// maxRepos bounds the git directories one discovery follows.
const maxRepos = 256

// maxGitFile bounds the configuration, .git and commondir files read;
// maxIndex the index (read on every command: 8 MiB is a repository of
// about 80 000 files; a larger one's submodules are found through
// .gitmodules and the listing only).
const (
	maxGitFile = 1 << 20
	maxIndex   = 8 << 20
)

// startupFiles are the files and directories below the home that shells
// and login sessions read or run when they start, and the configuration
// directories of everything else: where the home lies inside a writable
// tree, those absent are refused (those present are read-only with every
// other entry of the home whose name starts with a dot).
var startupFiles = []string{
	".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout", ".bash_aliases", ".inputrc",
	".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout",
	".cshrc", ".tcshrc", ".login", ".logout", ".kshrc", ".mkshrc",
	".config", ".local", ".gitconfig", ".pam_environment",
	".xprofile", ".xsession", ".xsessionrc", ".xinitrc",
	".vimrc", ".exrc", ".emacs", ".gdbinit", ".curlrc", ".wgetrc", ".hgrc", ".Rprofile", ".psqlrc", ".mavenrc",
}

// zshFiles are the files zsh reads from ZDOTDIR.
var zshFiles = []string{".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout"}

// placeholder is what a guard's absent path is created as before the
// mount that covers it: nothing (the path is refused where absent, as
// Plan refuses the gate's absent protected paths), an empty directory, or
// a file with Content.
type placeholder struct {
	kind    byte // 0 none, 'd' a directory, 'f' a file
	content string
}

// guard is a path inside a writable tree that a program run later
// outside the sandbox reads as configuration or runs: the namespace
// construction binds it read-only.
type guard struct {
	path string
	make placeholder
}

// persistIn is what the discovery reads besides the layers: the home, the
// environment the command runs with, and the trees the grant names (the
// ones searched for repositories; the temp dir and the caches are not).
type persistIn struct {
	home   string
	getenv func(string) string
	grant  []string
}

// discovery is one run of guards.
type discovery struct {
	spec    *Spec
	res     *resolver
	home    string
	getenv  func(string) string
	trees   []string // the writable trees but the private layers
	out     []guard
	seen    map[string]bool // guarded paths
	gitdirs map[string]bool // git directories followed
	configs map[string]bool // configuration files read
	global  gitConfig       // the global and system configuration
	// listings counts the directories scan listed (maxListings).
	listings int
	// listed are the listings made, which the walk for ignored code
	// (ignored.go) shares with scan.
	listed map[string][]dirent
}

// guards finds the paths of spec's writable trees that programs run
// later outside the sandbox read as configuration or code (see above).
// Every path is symlink-resolved and lies inside a writable tree that is
// not a private layer (Spec.Caches).
func (spec *Spec) guards() []guard {
	in := spec.persist
	getenv := in.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if spec.stats == nil {
		spec.stats = stats{}
	}
	d := &discovery{spec: spec, res: &resolver{stats: spec.stats}, getenv: getenv,
		seen: map[string]bool{}, gitdirs: map[string]bool{}, configs: map[string]bool{}}
	if in.home != "" {
		d.home = d.res.resolve(in.home)
	}
	for _, l := range spec.Layers {
		for _, t := range l.Write {
			if !spec.layered(t) {
				d.trees = append(d.trees, t)
			}
		}
	}
	d.trees = compact(d.trees)
	if len(d.trees) == 0 {
		return nil
	}
	d.globalGit()
	for _, t := range in.grant {
		d.scan(d.res.resolve(t))
	}
	// What the sweep after the command (sweep_linux.go) leaves alone (the
	// map, which GIT_DIR's below adds to).
	spec.known = d.gitdirs
	if gd := getenv("GIT_DIR"); gd != "" && filepath.IsAbs(gd) {
		wt := getenv("GIT_WORK_TREE")
		if !filepath.IsAbs(wt) {
			wt = ""
		}
		d.gitdir(gd, wt, 0)
	}
	d.homeFiles()
	for _, k := range []string{"ENV", "BASH_ENV", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GOBIN"} {
		if v := getenv(k); filepath.IsAbs(v) {
			d.add(v, placeholder{})
		}
	}
	if z := getenv("ZDOTDIR"); filepath.IsAbs(z) {
		for _, f := range zshFiles {
			d.add(filepath.Join(z, f), placeholder{})
		}
	}
	for _, p := range filepath.SplitList(getenv("GOPATH")) {
		if filepath.IsAbs(p) {
			d.add(filepath.Join(p, "bin"), placeholder{})
		}
	}
	if getenv("GOPATH") == "" && in.home != "" {
		d.add(filepath.Join(in.home, "go", "bin"), placeholder{})
	}
	// A relative entry of PATH ("", ".", "bin") names another directory
	// in each working directory: it cannot be guarded.
	for _, p := range filepath.SplitList(getenv("PATH")) {
		if filepath.IsAbs(p) {
			d.add(p, placeholder{})
		}
	}
	// Last: the workspace's ignored code and configuration (ignored.go),
	// but what is guarded above already.
	if !benchNoIgnored {
		spec.ignoredDirs, spec.ignoredStopped = d.ignoredCode()
	}
	return d.out
}

// add guards p (resolved) if it lies inside a writable tree that is not a
// private layer. Where p itself is a symbolic link, the link is guarded
// too: a mount covers what it points to, and the link could be replaced;
// Plan refuses it as an absent path (its directory read-only, or carved).
// A link on the way to p is not (it is rare; docs/gate.md).
func (d *discovery) add(p string, make placeholder) {
	p = filepath.Clean(p)
	if st := d.spec.stats.lstat(p); st.link && !d.seen[p] && d.inTrees(p) {
		d.seen[p] = true
		d.out = append(d.out, guard{path: p})
	}
	p = d.res.resolve(p)
	if d.seen[p] || !d.inTrees(p) {
		return
	}
	d.seen[p] = true
	d.out = append(d.out, guard{path: p, make: make})
}

func (d *discovery) inTrees(p string) bool {
	if d.spec.layered(p) {
		return false
	}
	for _, t := range d.trees {
		if within(p, t) {
			return true
		}
	}
	return false
}

// scan lists t and the directories below it up to gitScanDepth and
// follows every repository found: a directory holding .git, or a bare
// one. Links are not followed; nothing below .git or a bare repository is
// listed.
func (d *discovery) scan(t string) {
	type item struct {
		dir   string
		depth int
	}
	queue := []item{{t, 0}}
	// Bare repositories are followed once the listing is done: one may be
	// the git directory a work tree's .git names, listed before it.
	var bares []string
	defer func() {
		for _, b := range bares {
			d.bare(b)
		}
	}()
	for len(queue) > 0 && len(d.gitdirs) < maxRepos && d.listings < maxListings {
		it := queue[0]
		queue = queue[1:]
		d.listings++
		var ents []dirent
		var head, objects, refs, dotgit bool
		if it.depth < gitScanDepth {
			ents = d.list(it.dir)
			for _, e := range ents {
				switch e.name {
				case ".git":
					dotgit = true
				case "HEAD":
					head = !e.dir
				case "objects":
					objects = e.dir
				case "refs":
					refs = e.dir
				}
			}
		} else {
			// The last level is not listed, its names are looked up:
			// one or two system calls instead of four.
			st := d.spec.stats
			dotgit = st.lstat(it.dir + "/.git").exists
			if h := st.lstat(it.dir + "/HEAD"); h.exists && !h.dir {
				head, objects, refs = true, st.lstat(it.dir+"/objects").dir, st.lstat(it.dir+"/refs").dir
			}
		}
		switch {
		case dotgit:
			d.worktree(it.dir, 0)
		case head && objects && refs:
			if it.depth == 0 {
				// The tree itself is a git directory (a grant that
				// opens .git, or a bare repository as the workspace).
				wt := ""
				if filepath.Base(it.dir) == ".git" {
					wt = filepath.Dir(it.dir)
				}
				d.gitdir(it.dir, wt, 0)
			} else {
				bares = append(bares, it.dir)
			}
			continue
		}
		if it.depth >= gitScanDepth {
			continue
		}
		for _, e := range ents {
			if e.dir && !e.link && e.name != ".git" && e.name != "node_modules" {
				queue = append(queue, item{it.dir + "/" + e.name, it.depth + 1})
			}
		}
	}
}

// list lists dir, remembering what it learns for Plan.
func (d *discovery) list(dir string) []dirent {
	if ents, ok := d.listed[dir]; ok {
		return ents
	}
	ents := listDir(dir)
	if d.listed == nil {
		d.listed = map[string][]dirent{}
	}
	d.listed[dir] = ents
	for _, e := range ents {
		p := filepath.Join(dir, e.name)
		if _, ok := d.spec.stats[p]; !ok {
			d.spec.stats[p] = stat{exists: true, dir: e.dir, link: e.link}
		}
	}
	return ents
}

// worktree follows the repository whose work tree is wt: its .git
// directory, or the .git file (read-only itself) and the git directory it
// names.
func (d *discovery) worktree(wt string, depth int) {
	dotgit := filepath.Join(wt, ".git")
	st := d.spec.stats.lstat(dotgit)
	if st.link {
		// A .git that links to the git directory: the link is guarded,
		// and what it names followed.
		d.add(dotgit, placeholder{})
		st = d.spec.stats.lstat(d.res.resolve(dotgit))
		dotgit = d.res.resolve(dotgit)
	}
	switch {
	case !st.exists || st.link:
	case st.dir:
		d.gitdir(dotgit, wt, depth)
	default:
		d.add(dotgit, placeholder{})
		if b, ok := readSmall(dotgit, maxGitFile); ok {
			if gd, ok := gitfileTarget(b, dotgit); ok {
				d.gitdir(gd, wt, depth)
			}
		}
	}
}

// bare makes a bare repository found below a writable tree read-only as
// a whole: one committed as plain files, or a clone the person keeps in
// the workspace, is not the command's to change.
func (d *discovery) bare(dir string) {
	dir = d.res.resolve(dir)
	if d.gitdirs[dir] {
		return
	}
	d.gitdirs[dir] = true
	d.add(dir, placeholder{})
}

// isGitDir reports whether dir holds HEAD, objects/ and refs/.
func (d *discovery) isGitDir(dir string) bool {
	st := d.spec.stats
	return st.lstat(dir+"/HEAD").exists && st.lstat(dir+"/objects").dir && st.lstat(dir+"/refs").dir
}

// gitdir guards what git reads of git directory g (wt its work tree, ""
// if bare or unknown) and follows its submodules and worktrees.
func (d *discovery) gitdir(g, wt string, depth int) {
	g = d.res.resolve(g)
	if d.gitdirs[g] || len(d.gitdirs) >= maxRepos || depth > 8 {
		return
	}
	d.gitdirs[g] = true
	common := g
	cd := filepath.Join(g, "commondir")
	if b, ok := readSmall(cd, maxGitFile); ok {
		if c, ok := commondirTarget(b, g); ok {
			common = d.res.resolve(c)
		}
		d.add(cd, placeholder{})
	} else if !d.spec.stats.lstat(cd).exists {
		d.add(cd, placeholder{'f', "."})
	}
	var cfg gitConfig
	d.readConfig(filepath.Join(common, "config"), &cfg, 0)
	d.add(filepath.Join(common, "config"), placeholder{'f', ""})
	d.add(filepath.Join(common, "hooks"), placeholder{kind: 'd'})
	d.add(filepath.Join(common, "info"), placeholder{kind: 'd'})
	if common != g {
		// A linked worktree's own git directory: its config.worktree;
		// the common one is followed as a repository of its own.
		d.gitdir(common, "", depth+1)
	}
	if cfg.worktreeConfig {
		d.readConfig(filepath.Join(g, "config.worktree"), &cfg, 0)
		d.add(filepath.Join(g, "config.worktree"), placeholder{'f', ""})
	} else if d.spec.stats.lstat(filepath.Join(g, "config.worktree")).exists {
		d.add(filepath.Join(g, "config.worktree"), placeholder{})
	}
	if wt == "" && cfg.worktree != "" {
		wt = configPath(cfg.worktree, g, d.home)
	}
	if wt == "" && filepath.Base(g) == ".git" {
		wt = filepath.Dir(g)
	}
	// A relative core.hooksPath is relative to the work tree the hooks
	// run in; without one known, only an absolute one is guarded.
	for _, hp := range append(append([]string(nil), cfg.hooksPaths...), d.global.hooksPaths...) {
		if p := configPath(hp, wt, d.home); p != "" {
			d.add(p, placeholder{kind: 'd'})
		}
	}
	// A repository wholly outside the writable trees (the main one of a
	// linked worktree that is the workspace) is read for what its
	// configuration names, not searched.
	if common == g && d.inTrees(g) {
		for _, e := range d.list(filepath.Join(g, "worktrees")) {
			if !e.dir || e.link {
				continue
			}
			w := filepath.Join(g, "worktrees", e.name)
			if d.spec.stats.lstat(w + "/commondir").exists {
				d.add(w+"/commondir", placeholder{})
			}
			if cfg.worktreeConfig {
				d.add(w+"/config.worktree", placeholder{'f', ""})
			}
			// Its gitdir names the linked work tree's .git file, which
			// points back here: wherever that work tree is.
			if b, ok := readSmall(w+"/gitdir", maxGitFile); ok {
				if f, ok := commondirTarget(b, w); ok && filepath.Base(f) == ".git" && d.inTrees(f) {
					d.worktree(filepath.Dir(f), depth+1)
				}
			}
		}
		d.modules(filepath.Join(g, "modules"), depth, 0)
	}
	if wt != "" && d.inTrees(wt) {
		idx := d.noteView(g, common, wt, cfg.sha256)
		d.submodules(wt, idx, cfg.sha256, depth)
	}
}

// modules follows the submodules' git directories below dir (a
// submodule's name may hold slashes: modules/a/b).
func (d *discovery) modules(dir string, depth, level int) {
	if level > 4 {
		return
	}
	for _, e := range d.list(dir) {
		if !e.dir || e.link {
			continue
		}
		sub := filepath.Join(dir, e.name)
		if d.isGitDir(sub) {
			d.gitdir(sub, "", depth+1)
		} else {
			d.modules(sub, depth, level+1)
		}
	}
}

// submodules follows the repositories the work tree wt (its index read)
// names: the
// submodules of its index (gitlinks) and of .gitmodules, and the bare
// repositories committed in it (an index entry named HEAD whose
// directory is a git directory).
func (d *discovery) submodules(wt string, index []byte, sha256 bool, depth int) {
	var subs, bares []string
	if b := index; b != nil {
		hashLen := 20
		if sha256 {
			hashLen = 32
		}
		indexEntries(b, hashLen, func(mode uint32, path []byte) {
			switch {
			case mode&indexModeType == indexModeGitlink:
				subs = append(subs, string(path))
			case string(path) == "HEAD":
				bares = append(bares, ".")
			case len(path) > 5 && string(path[len(path)-5:]) == "/HEAD":
				bares = append(bares, string(path[:len(path)-5]))
			}
		})
	}
	if b, ok := readSmall(filepath.Join(wt, ".gitmodules"), maxGitFile); ok {
		subs = append(subs, submodulePaths(b)...)
	}
	for _, s := range subs {
		if p, ok := insidePath(wt, s); ok {
			d.worktree(p, depth+1)
		}
	}
	for _, s := range bares {
		if p, ok := insidePath(wt, s); ok && p != wt && d.isGitDir(p) {
			d.bare(p)
		}
	}
}

// insidePath joins a relative path of a repository to its work tree, and
// refuses one that leaves it.
func insidePath(wt, rel string) (string, bool) {
	if rel == "" || filepath.IsAbs(rel) {
		return "", false
	}
	p := filepath.Join(wt, rel)
	return p, within(p, wt)
}

// readConfig reads a git configuration file into cfg, following its
// includes (each guarded: an absent one is created empty, as git reads
// it), and guards nothing else: the caller guards the file.
func (d *discovery) readConfig(file string, cfg *gitConfig, level int) {
	if level > 10 || d.configs[file] {
		return
	}
	d.configs[file] = true
	b, ok := readSmall(file, maxGitFile)
	if !ok {
		return
	}
	var c gitConfig
	parseGitConfig(b, c.add)
	cfg.hooksPaths = append(cfg.hooksPaths, c.hooksPaths...)
	cfg.worktreeConfig = cfg.worktreeConfig || c.worktreeConfig
	cfg.sha256 = cfg.sha256 || c.sha256
	if c.excludesFile != "" {
		cfg.excludesFile = c.excludesFile
	}
	if c.worktree != "" {
		cfg.worktree = c.worktree
	}
	for _, inc := range c.includes {
		p := configPath(inc, filepath.Dir(file), d.home)
		if p == "" {
			continue
		}
		d.add(p, placeholder{'f', ""})
		d.readConfig(p, cfg, level+1)
	}
}

// globalGit reads the configuration git reads in every repository: the
// system one (unless GIT_CONFIG_NOSYSTEM), the global ones and the
// environment's GIT_CONFIG_KEY_n: a relative core.hooksPath there is
// relative to each repository, and the includes they name are guarded.
func (d *discovery) globalGit() {
	getenv := d.getenv
	var files []string
	if !gitBool(getenv("GIT_CONFIG_NOSYSTEM")) {
		if f := getenv("GIT_CONFIG_SYSTEM"); f != "" {
			files = append(files, f)
		} else {
			files = append(files, "/etc/gitconfig")
		}
	}
	if f := getenv("GIT_CONFIG_GLOBAL"); f != "" {
		files = append(files, f)
	} else {
		xdg := getenv("XDG_CONFIG_HOME")
		if xdg == "" && d.home != "" {
			xdg = filepath.Join(d.home, ".config")
		}
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if d.home != "" {
			files = append(files, filepath.Join(d.home, ".gitconfig"))
		}
	}
	for _, f := range files {
		if filepath.IsAbs(f) {
			d.readConfig(f, &d.global, 0)
			d.add(f, placeholder{})
		}
	}
	// git -c and GIT_CONFIG_COUNT reach the git the person runs only with
	// this environment; they are read all the same.
	var env gitConfig
	n := 0
	for _, c := range getenv("GIT_CONFIG_COUNT") {
		if c < '0' || c > '9' || n > 1000 {
			n = 0
			break
		}
		n = n*10 + int(c-'0')
	}
	for i := 0; i < n; i++ {
		k := strings.ToLower(getenv("GIT_CONFIG_KEY_" + itoa(i)))
		v := getenv("GIT_CONFIG_VALUE_" + itoa(i))
		if sec, rest, ok := strings.Cut(k, "."); ok {
			sub, key := "", rest
			if j := strings.LastIndexByte(rest, '.'); j >= 0 {
				sub, key = rest[:j], rest[j+1:]
			}
			env.add(sec, sub, key, v)
		}
	}
	d.global.hooksPaths = append(d.global.hooksPaths, env.hooksPaths...)
	for _, inc := range env.includes {
		if p := configPath(inc, "", d.home); p != "" {
			d.add(p, placeholder{'f', ""})
			d.readConfig(p, &d.global, 1)
		}
	}
}

// homeFiles guards the home's configuration where the home lies inside a
// writable tree: every entry whose name starts with a dot (but a private
// layer, or one that holds a tree the grant names), and the start-up files
// that are absent.
func (d *discovery) homeFiles() {
	h := d.home
	if h == "" || !d.inTrees(h) {
		return
	}
	for _, e := range d.list(h) {
		if !strings.HasPrefix(e.name, ".") {
			continue
		}
		p := filepath.Join(h, e.name)
		holds := false
		for _, t := range d.spec.persist.grant {
			if within(d.res.resolve(t), p) {
				holds = true
			}
		}
		for _, c := range d.spec.Caches {
			if within(c, p) {
				holds = true
			}
		}
		if !holds {
			d.add(p, placeholder{})
		}
	}
	for _, f := range startupFiles {
		d.add(filepath.Join(h, f), placeholder{})
	}
}

// readSmall reads a regular file of at most max bytes with plain system
// calls (see readProcFile), opened non-blocking: a FIFO put in its place
// by an earlier command must not hang the start of the next one.
func readSmall(p string, max int) ([]byte, bool) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > int64(max) {
		return nil, false
	}
	b := make([]byte, st.Size+1)
	n, err := readFull(fd, b)
	if err != nil || n > int(st.Size) {
		return nil, false
	}
	return b[:n], true
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}
