package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// workspaceRoot is the directory joule init grants and joule install
// --project writes into when none is named: the root of the git work tree
// that holds dir (where Claude Code and the other hosts read a project's
// settings, wherever in it the agent is started), else dir itself. A work
// tree whose root is / or the home directory (a dotfiles repository) is not
// taken for a project: dir is. fromGit says the root came from git.
func workspaceRoot(dir string) (root string, fromGit bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	for d := abs; ; d = filepath.Dir(d) {
		// .git is a directory in a clone, a file in a worktree or a
		// submodule: either marks the root of a work tree.
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			if broadRoot(d) != "" {
				return abs, false, nil
			}
			return d, d != abs, nil
		}
		if filepath.Dir(d) == d {
			return abs, false, nil
		}
	}
}

// broadRoot says what a workspace at dir would hand every agent session:
// "" for a project, or "the whole disk" for /, "your whole home directory"
// for $HOME (keys, shell start-up files, every other project).
func broadRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if abs == string(filepath.Separator) {
		return "the whole disk"
	}
	if h, err := os.UserHomeDir(); err == nil {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		if filepath.Clean(h) == abs {
			return "your whole home directory"
		}
	}
	return ""
}

// initWorkspaces is the workspace joule init grants: the ones named with
// --workspace, else the root of the current project (workspaceRoot). One
// that is / or the home directory is refused unless force: granting it
// lets every agent session read and write the disk or the home directory
// (ssh keys, shell start-up files, every other project).
func initWorkspaces(e *env, named []string, force bool) ([]string, error) {
	roots := named
	if len(roots) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		root, fromGit, err := workspaceRoot(wd)
		if err != nil {
			return nil, err
		}
		if fromGit {
			fmt.Fprintf(e.stdout, "project root   %s (the git work tree holding %s)\n", root, wd)
		}
		roots = []string{root}
	}
	for _, r := range roots {
		what := broadRoot(r)
		if what == "" {
			continue
		}
		if force {
			fmt.Fprintf(e.stderr, "joule: warning: the workspace %s is %s: every agent session may read and write all of it (--force)\n", r, what)
			continue
		}
		return nil, withHint(usagef("init: the workspace would be %s, %s: every agent session could read and write all of it", r, what),
			"run joule init in a project directory (a git work tree's root is found from anywhere inside it), or name one with --workspace DIR; --force grants it anyway")
	}
	return roots, nil
}

// projectDir is the directory joule install --project writes into: DIR
// when named, else the root of the current project (workspaceRoot). The
// home directory is refused: a host's project files there are its user
// files (~/.claude/settings.json), which --user writes; / is refused too.
func projectDir(e *env, named string) (string, error) {
	dir, fromGit := named, false
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		if dir, fromGit, err = workspaceRoot(wd); err != nil {
			return "", err
		}
		if fromGit {
			fmt.Fprintf(e.stdout, "project %s (the git work tree holding %s)\n", dir, wd)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("project %s is not a directory", dir)
	}
	switch broadRoot(dir) {
	case "your whole home directory":
		return "", withHint(usagef("install: %s is your home directory, where a host's project files are its user files: --project there would write your user configuration", dir),
			"run it in a project (a git work tree's root is found from anywhere inside it), or say --user to install for every project")
	case "the whole disk":
		return "", withHint(usagef("install: --project at / would wire the hooks for the whole disk"), "run it in a project, or say --user")
	}
	return dir, nil
}
