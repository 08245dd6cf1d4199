package hook

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Private reports whether an install's change c for s writes a file that
// only makes sense on this machine, and must stay out of git: one the
// installer marks Local (Claude Code's settings.local.json, which may hold
// a bearer token), or a project file joule created (created: this install
// or the one before it, by its record) that names this user's joule, thin
// client or JOULE_HOME by absolute path (committed, it would block every
// call of a teammate who has no such path).
func Private(s Scope, c Change, created bool) bool {
	if s.Project == "" || c.After == nil {
		return false
	}
	if c.Local {
		return true
	}
	if !created {
		return false // the user's file: theirs to commit or not
	}
	for _, p := range []string{s.Joule, s.Client, s.JouleHome} {
		if p != "" && bytes.Contains(c.After, []byte(p)) {
			return true
		}
	}
	return false
}

// Ignore is how an install keeps its private files out of git: the change
// to the work tree's .git/info/exclude (Path "" when none is needed) and
// one finding per private file, saying it is ignored or what to do.
//
// Claude Code, when it writes settings.local.json itself, appends
// "**/.claude/settings.local.json" to the user's global excludes file
// (core.excludesFile) unless 'git check-ignore' already ignores it. A
// project install writes no user-level file, so joule adds an anchored line
// to the repository's own info/exclude instead: never committed, shared by
// its worktrees, and read by Claude Code's check-ignore, which then adds
// nothing. The uninstall gives the file back as the record keeps it.
func Ignore(paths []string) (Change, []Finding) {
	var out Change
	var findings []Finding
	var lines []string
	for _, p := range paths {
		root := workTree(filepath.Dir(p))
		if root == "" {
			continue // not in a git work tree: nothing can commit it
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		git := func(args ...string) *exec.Cmd {
			cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
			return cmd
		}
		if git("ls-files", "--error-unmatch", "--", rel).Run() == nil {
			findings = append(findings, Finding{OK: true, Weak: true, Text: p + " names paths on this machine but git tracks it, so ignore rules do not apply: 'git rm --cached " + ShellQuote(rel) + "' keeps it out of your next commit"})
			continue
		}
		err = git("check-ignore", "-q", "--", rel).Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			findings = append(findings, Finding{OK: true, Text: p + " (paths on this machine) is git-ignored"})
			continue
		case !errors.As(err, &exit) || exit.ExitCode() != 1:
			continue // no git, or it failed: nothing to go by
		}
		b, err := git("rev-parse", "--path-format=absolute", "--git-path", "info/exclude").Output()
		if err != nil {
			continue
		}
		exclude := strings.TrimSpace(string(b))
		if out.Path == "" {
			out.Path = exclude
			out.Before, _ = os.ReadFile(exclude) // nil: none yet
			out.After = bytes.Clone(out.Before)
		}
		if exclude != out.Path {
			continue // a second repository in one install: not a case hosts have
		}
		lines = append(lines, "/"+rel)
		findings = append(findings, Finding{OK: true, Text: p + " (paths on this machine) is git-ignored: " + exclude + " lists it"})
	}
	if len(lines) == 0 {
		return Change{}, findings
	}
	if len(out.After) > 0 && !bytes.HasSuffix(out.After, []byte("\n")) {
		out.After = append(out.After, '\n')
	}
	out.After = append(out.After, "# joule install: files that name paths on this machine\n"+strings.Join(lines, "\n")+"\n"...)
	return out, findings
}

// workTree is the root of the git work tree holding dir, or "".
func workTree(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
