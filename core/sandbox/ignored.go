package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/joulehook/joule/core/gitignore"
)

// Git-ignored code and configuration in the workspace. The person's diff
// does not show an ignored path, yet programs they run later read it as
// code or configuration: `npm test` runs node_modules/.bin and the
// packages' files, python a .venv's activate script and its .pth files and
// a __pycache__ .pyc whose header matches its source, `make` a local.mk the
// committed Makefile includes, `go build` a go.work, npm an ignored .npmrc,
// direnv an .envrc.local its .envrc sources, the IDE .idea/workspace.xml,
// and whatever the person's own files name (a scripts/local/ their
// Makefile runs, -include $(LOCAL), a go.mod replace into an ignored
// directory of any name). So inside containment none of them may be
// written where those programs look:
//
//   - what exists when the command starts (found by ignoredCode, below, at
//     any depth): every ignored directory but a build output is mounted as
//     an overlay with the session's private layer, as the toolchains'
//     caches are (layers.go): the command and the rest of its session see
//     what they wrote, the person's programs the directory as it was; every
//     ignored file but an output is bound read-only.
//   - what the command creates where nothing was, or changes where the
//     discovery did not look (beyond its bounds), has no mount to cover it:
//     the sweep after the command (sweep_linux.go) takes it out. A new
//     ignored directory that is not an output (a package install into a
//     workspace that had none) goes to the session's private layer, and an
//     empty directory is left in its place, over which the session's next
//     command mounts that layer; a new ignored file that is not an output,
//     and ignored code or configuration by its name that the command
//     changed (its change time is after the command started), is moved to
//     the quarantine, and so is a .pyc it wrote in a __pycache__ (python
//     compiles the source again), each said on stderr.
//
// What is ignored is decided by core/gitignore, with the repository's
// .gitignore files, .git/info/exclude and the person's global excludes
// file, as git decides it. Build outputs and caches (outputDirs,
// outputFile: dist/, target/, *.log) stay writable, and what the command
// builds there is the person's to see. The names of code (depDirs,
// configDirs, codeFiles) decide what the sweep looks for where the
// discovery did not look, and where a new directory goes.

// depDirs are directories of dependencies: what package managers install
// and the programs run from there (node_modules/.bin, a venv's bin and
// site-packages, go's vendor directory). A new one the command made is
// moved to the session's layer, not the quarantine: the package install
// that made it is ordinary work.
var depDirs = map[string]bool{
	"node_modules": true, ".venv": true, "venv": true, ".tox": true, ".nox": true,
	"vendor": true, "third_party": true, ".yarn": true, ".pnpm-store": true, "bower_components": true,
	".bundle": true, "site-packages": true, ".eggs": true,
}

// configDirs are directories of tools' configuration, every file of which
// a program reads (the IDE's run configurations, the editor's tasks and
// settings, husky's hook scripts, cargo's config.toml, direnv's layouts).
var configDirs = map[string]bool{
	".idea": true, ".vscode": true, ".husky": true, ".cargo": true, ".direnv": true,
	".devcontainer": true, ".fleet": true, ".zed": true, ".mvn": true, ".gradle": true,
}

// codeFiles are files programs read as code or configuration when they
// find them in a project.
var codeFiles = map[string]bool{
	".npmrc": true, ".yarnrc": true, ".yarnrc.yml": true, ".pnpmfile.cjs": true, "bunfig.toml": true,
	".envrc": true, ".env": true, "go.work": true, "go.work.sum": true,
	"Makefile": true, "makefile": true, "GNUmakefile": true,
	".python-version": true, ".tool-versions": true, ".nvmrc": true, ".node-version": true, ".ruby-version": true,
	".mise.toml": true, "mise.toml": true, ".sdkmanrc": true, "rust-toolchain": true, "rust-toolchain.toml": true,
	"sitecustomize.py": true, "usercustomize.py": true, "conftest.py": true, "pytest.ini": true, "setup.cfg": true,
	"tox.ini": true, ".pdbrc": true, ".editorconfig": true, ".clang-format": true,
	"package.json": true, ".gitattributes": true, ".pre-commit-config.yaml": true, "lefthook.yml": true,
	"lefthook-local.yml": true, ".lefthook-local.yml": true,
}

// codeFile reports whether a file named name in a directory named parent
// is code or configuration to the programs that find it there.
func codeFile(name, parent string) bool {
	switch {
	case codeFiles[name], configDirs[parent]:
		return true
	case strings.HasPrefix(name, ".envrc") || strings.HasPrefix(name, ".env."):
		return true
	case strings.HasSuffix(name, ".mk") || strings.HasSuffix(name, ".pth"):
		return true
	}
	return false
}

// codeDir reports whether an ignored directory named name is one whose
// files other programs run or read: dependencies or a tool's configuration.
// The sweep (sweep_linux.go) treats a new one by this name: dependencies go
// to the session's layer, configuration to the quarantine.
func codeDir(name string) bool { return depDirs[name] || configDirs[name] }

// The discovery's rule for what exists when the command starts is not a
// list of code: any git-ignored path may be what a program of the
// person's reads (a scripts/local/ their Makefile runs, a file a
// committed Makefile names with -include $(LOCAL), a directory a go.mod
// replace names, whatever its name). Every existing ignored path is the
// person's, session-private or read-only inside containment, but the
// build outputs and caches that ordinary builds and tests rewrite on
// every run (outputDirs, outputFile): those stay writable, and what the
// command builds there is the person's to see (docs/gate.md).

// outputDirs are directories builds, test runners and linters write their
// results and caches to.
var outputDirs = map[string]bool{
	"dist": true, "build": true, "out": true, "target": true, "_build": true, "obj": true,
	".next": true, ".nuxt": true, ".output": true, ".svelte-kit": true, ".turbo": true, ".parcel-cache": true,
	".angular": true, ".docusaurus": true, "storybook-static": true, ".expo": true, ".vercel": true,
	"coverage": true, ".nyc_output": true, "htmlcov": true, "test-results": true, "playwright-report": true,
	"logs": true, "log": true, "tmp": true, "temp": true, ".tmp": true, ".cache": true,
	".pytest_cache": true, ".mypy_cache": true, ".ruff_cache": true, ".hypothesis": true, ".benchmarks": true,
	".eslintcache": true, ".sass-cache": true, ".webpack": true, ".vite": true, "bazel-out": true,
	// python compiles its source again where a .pyc does not match; the
	// sweep takes out every .pyc the command wrote (sweep_linux.go).
	"__pycache__": true,
}

// outputExts are the endings of files builds, tests and tools write:
// logs, coverage and profiles, objects and packages built from the
// source the diff shows, editors' swap files.
var outputExts = []string{
	".log", ".tmp", ".swp", ".swo", "~", ".pid", ".bak", ".orig", ".rej",
	".tsbuildinfo", ".eslintcache", ".stylelintcache", ".coverage", ".lcov", ".coverprofile", ".prof", ".pprof", ".out",
	".o", ".a", ".so", ".dylib", ".dll", ".exe", ".class", ".jar", ".war", ".wasm", ".pyc", ".pyo", ".test",
	".tgz", ".tar.gz", ".zip", ".whl", ".map",
	// a development database and its journals: data the application
	// writes (manage.py migrate, a test's fixture store), not code
	".db", ".sqlite", ".sqlite3", ".db-journal", ".db-wal", ".db-shm", ".sqlite3-journal",
	// data a pipeline or a training run writes again on each run; not a
	// pickle (.pkl, .pt): loading one runs what it holds
	".csv", ".tsv", ".parquet", ".feather", ".arrow", ".npy", ".h5", ".hdf5", ".safetensors",
}

// outputFiles are files of those names.
var outputFiles = map[string]bool{".DS_Store": true, "Thumbs.db": true, ".coverage": true, "lcov.info": true, "junit.xml": true, "nohup.out": true}

// outputFile reports whether an ignored file named name is a build output
// or cache (it stays writable).
func outputFile(name string) bool {
	if outputFiles[name] {
		return true
	}
	for _, e := range outputExts {
		if strings.HasSuffix(name, e) && len(name) > len(e) {
			return true
		}
	}
	return false
}

// builtBinary reports whether the regular file at p (dirfd-relative
// name where dirfd is not -1) is a native executable or object, by its
// first bytes: ELF, or Mach-O in either byte order and width. A Go, C or
// Rust build writes its program under a name that says nothing (`go
// build .` makes ./ws, which .gitignore lists as /ws): such a file is a
// build output like target/'s, the person's to see and run, and a build
// must be able to write it again. A script the person's tools run (a
// scripts/local/ a Makefile calls) is text and stays the person's. The
// open does not follow a link and does not wait on a FIFO.
func builtBinary(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	var b [4]byte
	if n, _ := f.ReadAt(b[:], 0); n < 4 {
		return false
	}
	for _, magic := range [][]byte{{0x7f, 'E', 'L', 'F'}, {0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, {0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}} {
		if bytes.Equal(b[:], magic) {
			return true
		}
	}
	return false
}

// Bounds of the discovery of ignored code at the start of a command: the
// directories it lists (breadth first, not entering an ignored one, a
// node_modules or a git directory), how deep, the overlays it makes (each
// costs about a millisecond; beyond, a directory is bound read-only
// instead) and the files it binds read-only (beyond, the sweep takes out
// what the command changed of them). The listings near the top are the
// ones the discovery of repositories makes anyway (scan); the deeper ones
// find what a monorepo keeps further down (packages/@scope/a/node_modules,
// services/api/.venv): about 20 µs of CPU a directory
// (BenchmarkIgnoredWalk).
const (
	maxIgnoredListings = 4096
	ignoredDepth       = 32
	maxIgnoredOverlays = 16
	maxIgnoredFiles    = 256
)

// ignoreScope is the ignore rules in force in one directory of a walk:
// the repository's top (rel paths are relative to it) and the stack.
type ignoreScope struct {
	top   string
	stack gitignore.Stack
}

// ignoreRules reads the global excludes file: core.excludesFile of the
// global configuration, else $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore).
func ignoreRules(excludesFile, home string, getenv func(string) string) *gitignore.File {
	p := configPath(excludesFile, "", home)
	if p == "" {
		xdg := getenv("XDG_CONFIG_HOME")
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg == "" {
			return nil
		}
		p = filepath.Join(xdg, "git", "ignore")
	}
	b, ok := readSmall(p, maxGitFile)
	if !ok {
		return nil
	}
	return gitignore.Parse("", b)
}

// topScope is the scope at the top of a repository's work tree dir: the
// global excludes, then its .git/info/exclude (a .git directory's).
func topScope(dir string, global *gitignore.File) ignoreScope {
	sc := ignoreScope{top: dir}
	if global != nil {
		sc.stack = gitignore.Stack{global}
	}
	if b, ok := readSmall(dir+"/.git/info/exclude", maxGitFile); ok {
		sc.stack = append(sc.stack, gitignore.Parse("", b))
	}
	return sc
}

// enter is the scope inside directory dir, below sc's top, given whether
// the listing of dir has a .git entry (a repository of its own: a new
// scope) and a .gitignore.
func (sc ignoreScope) enter(dir string, dotgit, gitignoreFile bool, global *gitignore.File) ignoreScope {
	if dotgit && dir != sc.top {
		sc = topScope(dir, global)
	}
	if !gitignoreFile {
		return sc
	}
	b, ok := readSmall(dir+"/.gitignore", maxGitFile)
	if !ok {
		return sc
	}
	rel := sc.rel(dir)
	sc.stack = append(sc.stack[:len(sc.stack):len(sc.stack)], gitignore.Parse(rel, b))
	return sc
}

// rel is p relative to the scope's top, slash-separated ("" for the top).
func (sc ignoreScope) rel(p string) string {
	if p == sc.top {
		return ""
	}
	return strings.TrimPrefix(p, sc.top+"/")
}

func (sc ignoreScope) ignored(p string, dir bool) bool {
	return len(sc.stack) > 0 && sc.stack.Ignored(sc.rel(p), dir)
}

// ignoredCode finds the ignored paths that exist below the trees the
// grant names (see above): the directories to mount as overlays with the
// session's layer, and guards for the rest (files, and directories beyond
// maxIgnoredOverlays), which Plan binds read-only. A path already guarded,
// inside a guarded one or a cache, is left to that. Every directory that
// is not ignored is listed, at any depth up to the bounds (where the walk
// stops, stopped says below which trees); what git ignores is not
// entered, and neither is a node_modules or __pycache__ that is not (git
// status shows it), nor a git directory.
func (d *discovery) ignoredCode() (overlays []string, stopped []string) {
	var global *gitignore.File
	if d.home != "" || d.getenv("XDG_CONFIG_HOME") != "" || d.global.excludesFile != "" {
		global = ignoreRules(d.global.excludesFile, d.home, d.getenv)
	}
	type item struct {
		dir   string
		depth int
		tree  string
		sc    ignoreScope
	}
	var queue []item
	for _, t := range d.spec.persist.grant {
		t = d.res.resolve(t)
		queue = append(queue, item{t, 0, t, topScope(t, global)})
	}
	listings, files := 0, 0
	d.spec.ignoreFiles = map[string]bool{}
	covered := func(p string) bool {
		if d.spec.layered(p) {
			return true
		}
		for q := p; ; q = filepath.Dir(q) {
			if d.seen[q] {
				return true
			}
			if q == "/" || q == "." {
				return false
			}
		}
	}
	maxListings, maxDepth := maxIgnoredListings, ignoredDepth
	if benchShallowIgnored {
		maxListings, maxDepth = 128, 1
	}
	for len(queue) > 0 && listings < maxListings {
		it := queue[0]
		queue = queue[1:]
		listings++
		var ents []dirent
		if it.depth < gitScanDepth {
			ents = d.list(it.dir) // shared with scan
		} else {
			ents = listDir(it.dir)
		}
		var dotgit, gi bool
		for _, e := range ents {
			switch e.name {
			case ".git":
				dotgit = true
			case ".gitignore":
				gi = !e.dir
			}
		}
		if it.depth > 0 && isGitDirListing(ents) {
			continue // a bare repository: scan or the sweep has it
		}
		if gi {
			d.spec.ignoreFiles[it.dir+"/.gitignore"] = true
		}
		sc := it.sc.enter(it.dir, dotgit, gi, global)
		for _, e := range ents {
			if e.name == ".git" {
				continue
			}
			p := it.dir + "/" + e.name
			if !e.dir || e.link {
				// A link is guarded with what it names (discovery.add).
				if !outputFile(e.name) && sc.ignored(p, false) && !covered(p) && !builtBinary(p) {
					if files < maxIgnoredFiles {
						files++
						d.add(p, placeholder{})
					} else if !slices.Contains(stopped, it.tree) {
						stopped = append(stopped, it.tree)
					}
				}
				continue
			}
			if covered(p) {
				continue
			}
			if !sc.ignored(p, true) {
				// A directory of dependencies that is not ignored shows in
				// the person's git status: not entered (a node_modules
				// holds thousands of directories).
				switch {
				case depDirs[e.name] || e.name == "__pycache__":
				case it.depth+1 > maxDepth:
					if !slices.Contains(stopped, it.tree) {
						stopped = append(stopped, it.tree)
					}
				default:
					queue = append(queue, item{p, it.depth + 1, it.tree, sc})
				}
				continue
			}
			if outputDirs[e.name] {
				continue // an ignored output: the person's to see
			}
			if len(overlays) < maxIgnoredOverlays {
				overlays = append(overlays, p)
			} else {
				d.add(p, placeholder{})
			}
		}
	}
	for _, it := range queue {
		if !slices.Contains(stopped, it.tree) {
			stopped = append(stopped, it.tree)
		}
	}
	return overlays, stopped
}

// isGitDirListing reports whether a directory's entries are a git
// directory's: HEAD, objects/ and refs/.
func isGitDirListing(ents []dirent) bool {
	n := 0
	for _, e := range ents {
		switch {
		case e.name == "HEAD" && !e.dir, e.name == "objects" && e.dir, e.name == "refs" && e.dir:
			n++
		}
	}
	return n == 3
}
