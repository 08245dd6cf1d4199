package sandbox

import (
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/gitignore"
)

// Git-ignored code and configuration in the workspace. The person's diff
// does not show an ignored path, yet programs they run later read it as
// code or configuration: `npm test` runs node_modules/.bin and the
// packages' files, python a .venv's activate script and its .pth files and
// a __pycache__ .pyc whose header matches its source, `make` a local.mk the
// committed Makefile includes, `go build` a go.work, npm an ignored .npmrc,
// direnv an .envrc.local its .envrc sources, the IDE .idea/workspace.xml.
// So inside containment none of them may be written where those programs
// look:
//
//   - what exists when the command starts (found by ignoredCode, below): an
//     ignored directory of dependencies or of a tool's configuration is
//     mounted as an overlay with the session's private layer, as the
//     toolchains' caches are (layers.go): the command and the rest of its
//     session see what they wrote, the person's programs the directory as
//     it was; an ignored file of code or configuration is bound read-only.
//   - what the command creates where nothing was, or changes where the
//     discovery did not look (deeper, beyond its bounds), has no mount to
//     cover it: the sweep after the command (sweep_linux.go) takes it out.
//     A new directory of dependencies (a package install into a workspace
//     that had none) goes to the session's private layer, and an empty
//     directory is left in its place, over which the session's next command
//     mounts that layer; any other ignored code or configuration the
//     command wrote (its change time is after the command started) is moved
//     to the quarantine, and so is a .pyc it wrote in a __pycache__
//     (python compiles the source again), each said on stderr.
//
// What makes a path code or configuration to other programs is its name
// (codeDirs, configDirs, codeFiles), a directory holding pyvenv.cfg (a
// virtual environment of any name), or a file inside a tool's
// configuration directory. What is ignored is decided by core/gitignore,
// with the repository's .gitignore files, .git/info/exclude and the
// person's global excludes file, as git decides it. Build outputs (dist/,
// target/, *.log) are neither: they stay writable, and what the command
// builds there is the person's to see.

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
func codeDir(name string) bool { return depDirs[name] || configDirs[name] }

// Bounds of the discovery of ignored code at the start of a command: the
// directories it lists (breadth first, not entering an ignored one), how
// deep (2: the tree and its subdirectories are listed, as scan lists them
// to find repositories, and the listings are shared: packages/a/node_modules
// is found, packages/@scope/a/node_modules is not), and the overlays it
// makes (each costs about a millisecond; beyond, a directory is bound
// read-only instead). Listing one level more cost this repository's
// checkout 1.7 ms of CPU per command (BenchmarkIgnoredWalk).
const (
	maxIgnoredListings = 128
	ignoredDepth       = 2
	maxIgnoredOverlays = 16
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

// ignoredCode finds the ignored code and configuration that exists below
// the trees the grant names (see above): the directories to mount as
// overlays with the session's layer, and guards for the rest (files, and
// directories beyond maxIgnoredOverlays), which Plan binds read-only. A
// path already guarded, inside a guarded one or a cache, is left to that.
func (d *discovery) ignoredCode() (overlays []string) {
	var global *gitignore.File
	if d.home != "" || d.getenv("XDG_CONFIG_HOME") != "" || d.global.excludesFile != "" {
		global = ignoreRules(d.global.excludesFile, d.home, d.getenv)
	}
	type item struct {
		dir   string
		depth int
		sc    ignoreScope
	}
	var queue []item
	for _, t := range d.spec.persist.grant {
		t = d.res.resolve(t)
		queue = append(queue, item{t, 0, topScope(t, global)})
	}
	listings := 0
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
	for len(queue) > 0 && listings < maxIgnoredListings {
		it := queue[0]
		queue = queue[1:]
		listings++
		ents := d.list(it.dir)
		var dotgit, gi bool
		for _, e := range ents {
			switch e.name {
			case ".git":
				dotgit = true
			case ".gitignore":
				gi = !e.dir
			}
		}
		sc := it.sc.enter(it.dir, dotgit, gi, global)
		parent := filepath.Base(it.dir)
		for _, e := range ents {
			if e.name == ".git" {
				continue
			}
			p := it.dir + "/" + e.name
			if !e.dir || e.link {
				// A link is guarded with what it names (discovery.add).
				if codeFile(e.name, parent) && sc.ignored(p, false) && !covered(p) {
					d.add(p, placeholder{})
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
				if it.depth+1 < ignoredDepth && !depDirs[e.name] {
					queue = append(queue, item{p, it.depth + 1, sc})
				}
				continue
			}
			if !codeDir(e.name) && !d.spec.stats.lstat(p+"/pyvenv.cfg").exists {
				continue // an ignored output: the person's to see
			}
			if len(overlays) < maxIgnoredOverlays {
				overlays = append(overlays, p)
			} else {
				d.add(p, placeholder{})
			}
		}
	}
	return overlays
}
