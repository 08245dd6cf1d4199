package gate

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/joulehook/joule/core/command"
	"github.com/joulehook/joule/core/rule"
)

// Paths known only when the line runs.
//
// The analysis judges every path a line names. A path a line computes
// when it runs ($f, $(…), the output of ls piped to xargs, the files a
// list names, a relative path after cd $X) names nothing the analysis can
// judge: alone, the gate refuses it (unanalyzable-command). When the line
// will run contained (Policy.Contained), the kernel refuses what the grant
// does not allow, whoever names the path and however, so such a read or
// write is allowed and the verdict's reason says that the kernel, not the
// analysis, bounds it. Only these verdicts change under containment:
//
//   - a read of a computed path, of a path a program derives (sort
//     --files0-from F, xargs, find -files0-from, tar -T, a checksum list),
//     or of a relative path in a directory the line changed to in a way
//     the analysis cannot follow;
//   - a write of such a path (a redirection to "$OUT", cp into a directory
//     under a computed name, tar x, patch, wget's downloads).
//
// A line that runs a network command runs with TCP open, so its paths known
// only at run time stay refused: a computed redirection could be
// /dev/tcp/HOST/PORT to any host.
//
// Everything the kernel does not enforce stays refused under containment:
// a computed program name or program text, eval, source and the rest of
// command.Analyze's codes; options that run programs or load settings;
// program-running configuration (git -c core.fsmonitor, a nested
// repository's config or hooks); a word that can reach the gate's own
// files (self-tamper), read or written; a path the analysis does know
// that the rules deny; and network connections to hosts computed when the
// line runs.

// unknownPath is the verdict on a read or write of a path known only when
// the line runs: unanalyzable, unless the kernel bounds it.
func unknownPath(format string, args ...any) Verdict {
	v := deny(CodeUnanalyzable, format, args...)
	v.runtime = true
	return v
}

// offer gives st a verdict, unless it is about a path known only when the
// line runs and the line runs contained: the kernel bounds that, and the
// reason will say so.
func (j *judge) offer(st *strictest, v Verdict) {
	// With a network command the line runs with TCP open (--net), and a
	// computed redirection could be /dev/tcp/any-host/port: only the
	// analysis bounds that.
	if v.runtime && j.p.Contained && !j.net {
		if j.kernelN == 0 {
			j.runtimeDeny = v
		}
		if len(j.kernel) < 4 {
			j.kernel = append(j.kernel, v.Reason)
		}
		j.kernelN++
		return
	}
	if st.beats(rankOf(v.Decision)) {
		st.offer(v)
	}
}

// kernelNote is what an allowed line's reason adds when the kernel bounds
// some of its paths.
func (j *judge) kernelNote() string {
	if j.kernelN == 0 {
		return ""
	}
	return fmt.Sprintf("; %d read or write of a path known only when the line runs is bounded by the kernel, not the analysis (%s)",
		j.kernelN, strings.Join(j.kernel, "; "))
}

// placeVerdict judges a directory a program works in or lists (Read.Names):
// the directory itself, not every file below it. The gate's private
// directory is never a place to work in.
func (j *judge) placeVerdict(what, abs string) Verdict {
	if slices.ContainsFunc(j.p.Private, func(p string) bool { return within(abs, p) }) {
		return deny(CodeSelfTamper, "%s works in %s: the gate's keys, grants and store are never readable by an agent", what, abs)
	}
	if abs == j.cwd {
		// The directory the event runs in lies in the workspace (Decide
		// checked it): working there is what a Bash rule grants.
		return Verdict{Decision: Allow, Code: CodeAllowed}
	}
	o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckPath(rule.Read, abs, j.rootsFor(abs)) })
	if o.denyBy == "" && o.askBy == "" && j.inRoots(abs) {
		// Working in the workspace needs no Read rule (a grant of go test
		// is one to run it there); only a rule that denies or asks for the
		// directory itself holds it.
		return Verdict{Decision: Allow, Code: CodeAllowed}
	}
	v := o.verdict(what + " working in " + abs)
	if v.Decision == Deny && v.Code == CodeNotGranted && !j.inRoots(abs) {
		v.Code = CodeOutside
	}
	return v
}

// treeVerdict denies a write that replaces or removes everything below
// abs when a protected path that exists lies below it (rm -r ., cp -rT
// evil/ ., tar x).
func (j *judge) treeVerdict(abs, match string) (Verdict, bool) {
	for _, p := range j.p.Protected {
		if within(p, abs) && p != abs && namesMatch(match, path.Base(p)) {
			if _, err := os.Lstat(p); err == nil {
				return deny(CodeSelfTamper, "writing below %s reaches %s, which holds the gate's own files or the hosts' hook configuration", abs, p), true
			}
		}
	}
	return Verdict{}, false
}

// namesMatch reports whether name matches every pattern of a
// Write.Match ("" matches any name).
func namesMatch(match, name string) bool {
	if match == "" {
		return true
	}
	for _, pat := range strings.Split(match, "\x00") {
		n := name
		if p, ok := strings.CutPrefix(pat, "i:"); ok {
			pat, n = p, strings.ToLower(name)
		}
		if ok, err := path.Match(pat, n); err == nil && !ok {
			return false
		}
	}
	return true
}

// gitMeta are the parts of a git directory git runs or reads as settings.
var gitMeta = []string{"config", "config.worktree", "hooks", "info", "commondir", "modules"}

// nestedGitWrite denies a write into the configuration or hooks of a git
// repository other than a workspace root's (whose are protected paths):
// git runs what a nested repository's config and hooks name.
func (j *judge) nestedGitWrite(abs string) (Verdict, bool) {
	parts := strings.Split(abs, "/")
	for i := 1; i+1 < len(parts); i++ {
		if parts[i] != ".git" || !slices.Contains(gitMeta, parts[i+1]) {
			continue
		}
		return deny(CodeSelfTamper, "writing %s changes the configuration or hooks of the repository in %s, which git runs as code", abs, strings.Join(parts[:i], "/")), true
	}
	return Verdict{}, false
}

// gitRepo is where git finds its repository from a directory.
type gitRepo struct {
	top    string // the work tree; "" for a bare repository
	gitdir string // the repository
	common string // the common directory of a linked work tree, else gitdir
}

// discoverGit finds the repository git uses in dir, as git does: dir/.git
// (a directory, or a file naming one), else dir itself when it is a
// repository (bare), then the same in each parent. Above the workspace
// (inside reports whether a directory lies in it) only .git is looked
// for, no one but the person puts a bare repository there, and the answer
// is remembered for pathsTTL, like the protected paths: those directories
// are the person's, outside any workspace a grant opens. ok is false when
// there is none.
func discoverGit(dir string, inside func(string) bool, now time.Time) (gitRepo, bool) {
	for d := dir; ; d = path.Dir(d) {
		if !inside(d) {
			return discoverAbove(d, now)
		}
		if g, ok := gitAt(d, true); ok {
			return g, true
		}
		if d == "/" || d == "." || d == "" {
			return gitRepo{}, false
		}
	}
}

// gitAt looks for the repository of d itself: d/.git, or d when bare.
func gitAt(d string, bare bool) (gitRepo, bool) {
	dot := d + "/.git"
	if d == "/" {
		dot = "/.git"
	}
	if fi, err := os.Lstat(dot); err == nil {
		switch {
		case fi.IsDir() && hasHEAD(dot):
			return gitRepo{top: d, gitdir: dot, common: dot}, true
		case fi.Mode().IsRegular():
			if g, ok := gitFile(d, dot); ok {
				return g, true
			}
		}
	}
	if bare && isGitDir(d) {
		return gitRepo{gitdir: d, common: d}, true
	}
	return gitRepo{}, false
}

type aboveRepo struct {
	repo gitRepo
	ok   bool
	at   time.Time
}

var aboveCache sync.Map // directory → aboveRepo

// discoverAbove is discoverGit from a directory above the workspace.
func discoverAbove(dir string, now time.Time) (gitRepo, bool) {
	if v, ok := aboveCache.Load(dir); ok {
		r := v.(aboveRepo)
		if d := now.Sub(r.at); d >= 0 && d < pathsTTL {
			return r.repo, r.ok
		}
	}
	var r aboveRepo
	for d := dir; ; d = path.Dir(d) {
		if r.repo, r.ok = gitAt(d, false); r.ok || d == "/" || d == "." || d == "" {
			break
		}
	}
	r.at = now
	aboveCache.Store(dir, r)
	return r.repo, r.ok
}

// hasHEAD reports a .git directory with a HEAD: git's own test adds
// objects and refs, which a .git directory in use always has.
func hasHEAD(d string) bool {
	_, err := os.Lstat(d + "/HEAD")
	return err == nil
}

// isGitDir reports a directory git takes for a repository: HEAD, objects
// and refs.
func isGitDir(d string) bool {
	if _, err := os.Lstat(d + "/HEAD"); err != nil {
		return false
	}
	for _, sub := range []string{"/objects", "/refs"} {
		if fi, err := os.Stat(d + sub); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// gitFile reads a .git file ("gitdir: PATH") and the common directory of
// the linked work tree it names.
func gitFile(top, file string) (gitRepo, bool) {
	b, err := os.ReadFile(file)
	if err != nil || len(b) > 4096 {
		return gitRepo{}, false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return gitRepo{}, false
	}
	target = strings.TrimSpace(target)
	if !path.IsAbs(target) {
		target = path.Join(top, target)
	}
	g := gitRepo{top: top, gitdir: path.Clean(target), common: path.Clean(target)}
	if c, err := os.ReadFile(g.gitdir + "/commondir"); err == nil {
		common := strings.TrimSpace(string(c))
		if !path.IsAbs(common) {
			common = path.Join(g.gitdir, common)
		}
		g.common = path.Clean(common)
	}
	return g, true
}

// gitRunners are configuration keys that make git run a program, load
// other files or move its work tree (git-config(1)); a * stands for one
// subsection or name.
var gitRunners = []string{
	"core.fsmonitor", "core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.askpass",
	"core.gitproxy", "core.worktree", "core.alternaterefscommand", "core.attributesfile", "diff.external",
	"diff.*.command", "diff.*.textconv", "diff.tool", "diff.guitool", "difftool.*", "merge.*.driver", "merge.tool",
	"merge.guitool", "mergetool.*", "filter.*", "alias.*", "include.*", "includeif.*", "credential.*", "gpg.*",
	"uploadpack.*", "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs", "remote.*.proxy", "pager.*",
	"sequence.editor", "interactive.difffilter", "web.browser", "browser.*", "man.*", "instaweb.*",
	"sendemail.*", "protocol.*", "submodule.*.update", "trace2.*", "ssh.variant", "receive.procreceiverefs",
	"http.*.proxy", "http.proxy", "url.*", "core.excludesfile", "blame.ignorerevsfile", "commit.template",
}

// gitRunner reports whether key (section.sub.name, lower case) is one of
// gitRunners.
func gitRunner(key string) bool {
	for _, pat := range gitRunners {
		pp := strings.Split(pat, ".")
		kp := strings.Split(key, ".")
		if strings.HasSuffix(pat, "*") && len(pp) == 2 && len(kp) >= 2 && kp[0] == pp[0] {
			return true // section.*: any key of the section
		}
		if len(pp) != len(kp) {
			if len(pp) == 3 && len(kp) > 3 && kp[0] == pp[0] && kp[len(kp)-1] == pp[2] {
				return true // a subsection with dots
			}
			continue
		}
		match := true
		for i := range pp {
			if pp[i] != "*" && pp[i] != kp[i] {
				match = false
			}
		}
		if match {
			return true
		}
	}
	return false
}

// gitConfigRunners reads a git config file and returns the first key that
// makes git run a program or load other files; "" when there is none. A
// file that cannot be read is reported as such.
func gitConfigRunners(file string) (string, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		for strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return "a section header it cannot read", nil
			}
			h := strings.TrimSpace(line[1:end])
			if name, sub, ok := strings.Cut(h, " "); ok {
				h = strings.ToLower(name) + "." + strings.Trim(strings.TrimSpace(sub), `"`)
			} else {
				h = strings.ToLower(h)
			}
			section = h
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		name := line
		if i := strings.IndexAny(name, "= \t"); i >= 0 {
			name = name[:i]
		}
		key := section + "." + strings.ToLower(name)
		if section == "" || gitRunner(key) {
			return key, nil
		}
	}
	return "", nil
}

// gitHooks returns a hook git would run from dir: any file that is not a
// sample.
func gitHooks(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sample") && !e.IsDir() {
			return dir + "/" + e.Name()
		}
	}
	return ""
}

// gitRepoVerdict judges the repository a git command runs in. A workspace
// root's own repository (.git, or the linked work tree it names outside
// the workspace) is the person's: its configuration and hooks are
// protected paths. Any other repository inside the workspace (nested,
// cloned, committed as plain files, a bare one) has configuration and
// hooks the agent could have written: git runs what they name, so a key
// that runs a program or a hook that is not a sample refuses the line, in
// every mode. A repository outside the workspace is a read of its work
// tree. A directory that does not exist yet has a repository known only
// when the line runs.
func (j *judge) gitRepoVerdict(c command.Command) (Verdict, bool) {
	sub, _, chdirs := gitSubcommand(c)
	if sub == "" || sub == "version" || sub == "help" || sub == "init" || sub == "clone" {
		return Verdict{}, false
	}
	dirs := j.commandDirs(c)
	if dirs == nil {
		return unknownPath("%s runs in a directory the gate cannot follow, whose repository is known only when the line runs", quoteArgs(c.Args)), true
	}
	for _, d := range dirs {
		for _, cd := range chdirs {
			if strings.HasPrefix(cd, "/") {
				d = cd
			} else {
				d = d + "/" + cd
			}
		}
		abs := j.cwd // resolved, and a directory, when the event arrived
		if d != j.cwd {
			var err error
			if abs, err = j.resolve(d); err != nil {
				return deny(CodeMalformed, "%s: %v", quoteArgs(c.Args), err), true
			}
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				if !j.writes {
					continue // git fails there: nothing the line writes can make it
				}
				return unknownPath("%s runs in %s, which does not exist when the gate decides and which the line may create: the repository git finds there is known only when the line runs", quoteArgs(c.Args), abs), true
			}
		}
		repo, ok := discoverGit(abs, j.inRoots, time.Now())
		if !ok {
			continue
		}
		if slices.ContainsFunc(j.roots, func(r string) bool { return repo.common == r+"/.git" }) {
			continue // a workspace root's own repository: protected
		}
		if repo.top != "" && slices.Contains(j.roots, repo.top) && !j.inRoots(repo.common) {
			continue // a linked work tree of a repository outside the workspace, the person's
		}
		if !j.inRoots(repo.gitdir) && !j.inRoots(repo.common) {
			where := repo.top
			if where == "" {
				where = repo.gitdir
			}
			if v := j.placeVerdict(quoteArgs(c.Args), where); v.Decision != Allow {
				v.Reason += " (the repository git finds from " + abs + ")"
				return v, true
			}
			continue
		}
		for _, f := range []string{repo.common + "/config", repo.gitdir + "/config.worktree"} {
			key, err := gitConfigRunners(f)
			switch {
			case err != nil:
				return deny(CodeUnanalyzable, "%s runs in the repository %s, whose configuration %s cannot be read: %v", quoteArgs(c.Args), repo.gitdir, f, err), true
			case key != "":
				return deny(CodeUnanalyzable, "%s runs in the repository %s, which is not the workspace's own: its configuration %s sets %s, which makes git run a program or load other files", quoteArgs(c.Args), repo.gitdir, f, key), true
			}
		}
		if h := gitHooks(repo.common + "/hooks"); h != "" {
			return deny(CodeUnanalyzable, "%s runs in the repository %s, which is not the workspace's own and has the hook %s, which git runs", quoteArgs(c.Args), repo.gitdir, h), true
		}
	}
	return Verdict{}, false
}
