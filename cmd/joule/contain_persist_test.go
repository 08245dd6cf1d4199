package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// Issue 33's second part: nothing confined code writes may run, or be
// followed, unconfined later. Each case plants something through the
// line joule hook --contain writes (joule-exec with the dev grant's
// policy), then an ordinary program runs unconfined, as the person would
// run it afterwards (git status or commit, a fresh shell, a PATH binary,
// another module's go run), and the test checks that nothing planted ran:
// the payload would create $MARK, outside every writable tree. The same
// attack run without containment, in the same box, must create it (the
// control), or the case proves nothing.

// persistBox is a home with joule initialised, a workspace that is a git
// repository (or the home itself), a temp dir, and the policy joule-exec
// runs the dev grant's commands under, with the session's private layer.
type persistBox struct {
	root, home, ws, jh, tmp, mark, policy string
	gocache                               string // the real Go build cache (a cache tree of its own)
}

func newPersistBox(t *testing.T, wsIsHome bool) *persistBox {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	b := &persistBox{root: root, home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp"), mark: filepath.Join(root, "mark")}
	b.ws = filepath.Join(b.home, "ws")
	if wsIsHome {
		b.ws = b.home
	}
	b.jh = filepath.Join(b.home, ".local", "share", "joule")
	os.MkdirAll(b.ws, 0o755)
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	b.gocache = strings.TrimSpace(string(out))
	env := []string{"HOME=" + b.home, "JOULE_HOME=" + b.jh}
	initArgs := []string{"init", "--steward", "test.example", "--workspace", b.ws}
	if wsIsHome {
		initArgs = append(initArgs, "--force") // the agent working in the home directory, as some people run it
	}
	if r := joule(t, nil, env, initArgs...); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	r := joule(t, nil, env, "grant", "issue", "--workspace", b.ws, "--budget", "1kJ", "--template", "dev")
	id := strings.Fields(r.stdout)
	if r.code != 0 || len(id) < 2 {
		t.Fatalf("grant issue: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "use", id[1], "--session", "s"); r.code != 0 {
		t.Fatalf("grant use: %+v", r)
	}
	r = joule(t, nil, env, "exec", "--session", "s", "--write-policy")
	if r.code != 0 {
		t.Fatalf("exec --write-policy: %+v", r)
	}
	b.policy = strings.TrimSpace(r.stdout)
	return b
}

// reset empties the box but $JOULE_HOME's keys, store and policies, and
// makes the workspace a repository with one commit, none of the hosts'
// configuration in it (each protected name of the root is a stand-in for
// a contained command's run, and the rest of the root is writable).
func (b *persistBox) reset(t *testing.T) {
	t.Helper()
	keep := map[string]bool{b.home: true, filepath.Join(b.home, ".local"): true, filepath.Join(b.home, ".local", "share"): true, b.jh: true}
	for _, dir := range []string{b.root, b.home, filepath.Join(b.home, ".local"), filepath.Join(b.home, ".local", "share")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if !keep[p] {
				removeAllForce(p)
			}
		}
	}
	removeAllForce(filepath.Join(b.jh, sandbox.LayersDir))
	for _, d := range []string{b.ws, b.tmp, filepath.Join(b.ws, "src"), filepath.Join(b.home, ".cache")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(b.ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	if out, err := b.cmd(false, "git init -q && git add main.go && git commit -qm init", nil).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

// removeAllForce removes p even where a mode forbids it (module cache
// directories are read-only, overlayfs's work directories 000).
func removeAllForce(p string) {
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(q, 0o755)
		}
		return nil
	})
	os.RemoveAll(p)
}

// persistPrelude defines the payloads' helpers: hook writes an executable
// script that creates $MARK, fsm appends a core.fsmonitor that does (git
// runs it on every status), evilgit copies the repository's git
// directory with that configuration to a directory of its own.
const persistPrelude = `hook() { mkdir -p "$(dirname "$1")"; printf '#!/bin/sh\ntouch "$MARK"\n' > "$1"; chmod +x "$1"; }
fsm() { printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >> "$1"; }
evilgit() { mkdir -p "$2" && cp -r "$1"/HEAD "$1"/objects "$1"/refs "$2"/ && cp "$1"/config "$2"/config && fsm "$2"/config; }
`

// cmd is bash running script in the workspace, unconfined or through the
// policy's joule-exec line.
func (b *persistBox) cmd(confined bool, script string, env []string, flags ...string) *exec.Cmd {
	var argv []string
	if confined {
		argv = append(append([]string{jouleExecBin(), "--policy", b.policy}, flags...), "--")
	}
	argv = append(argv, "/bin/bash", "-c", persistPrelude+script)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = b.ws
	c.Env = append([]string{"HOME=" + b.home, "WS=" + b.ws, "ROOT=" + b.root, "MARK=" + b.mark, "TMPDIR=" + b.tmp,
		"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GOCACHE=" + b.gocache, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY=file://" + filepath.Join(b.root, "proxy"), "GOSUMDB=off", "GOTELEMETRY=off"}, b.expand(env)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}

// expand replaces {ws}, {home}, {tmp} and {root} in env.
func (b *persistBox) expand(env []string) []string {
	out := make([]string, len(env))
	r := strings.NewReplacer("{ws}", b.ws, "{home}", b.home, "{tmp}", b.tmp, "{root}", b.root, "{path}", os.Getenv("PATH"))
	for i, kv := range env {
		out[i] = r.Replace(kv)
	}
	return out
}

// run runs script and returns its output, killing what it left behind.
func (b *persistBox) run(t *testing.T, confined bool, script string, env []string, flags ...string) string {
	t.Helper()
	c := b.cmd(confined, script, env, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cc := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
	cc.Dir, cc.Env, cc.SysProcAttr = c.Dir, c.Env, c.SysProcAttr
	cc.Stdin = nil
	out, _ := cc.CombinedOutput()
	if cc.Process != nil {
		syscall.Kill(-cc.Process.Pid, syscall.SIGKILL)
	}
	return string(out)
}

func (b *persistBox) marked() bool {
	_, err := os.Lstat(b.mark)
	return err == nil
}

// persistAttack is one case: setup and later run unconfined, attack
// through joule-exec (and without it, for the control).
type persistAttack struct {
	name   string
	home   bool     // the workspace is the home
	env    []string // for every step ({ws}, {home}, {tmp}, {root}, {path} expanded)
	setup  string
	attack string
	later  string
	needs  string // a program the case needs
}

const commit = `git commit -q --allow-empty -m later`

var persistAttacks = []persistAttack{
	// git's hooks and configuration, of the workspace's repository.
	{name: "hook pre-commit", attack: `hook .git/hooks/pre-commit`, later: commit},
	{name: "hook where hooks/ is absent", setup: `rm -rf .git/hooks`, attack: `hook .git/hooks/pre-commit`, later: commit},
	{name: "hook post-checkout", attack: `hook .git/hooks/post-checkout`, later: `git checkout -q -b later`},
	{name: "hooks/ replaced by a directory of its own", attack: `mkdir -p src/h && hook src/h/pre-commit && rm -rf .git/hooks; mv src/h .git/hooks`, later: commit},
	{name: "fsmonitor appended to config", attack: `fsm .git/config`, later: `git status -s`},
	{name: "fsmonitor by git config", attack: `git config core.fsmonitor "touch $MARK; false"`, later: `git status -s`},
	{name: "config renamed over", attack: `cp .git/config "$TMPDIR/c" && fsm "$TMPDIR/c" && mv -f "$TMPDIR/c" .git/config`, later: `git status -s`},
	{name: "config.worktree with the extension on", setup: `git config extensions.worktreeConfig true`, attack: `fsm .git/config.worktree`, later: `git status -s`},
	{name: "commondir names a git directory of the command's making", attack: `evilgit .git src/evil && echo "$WS/src/evil" > .git/commondir`, later: `git status -s`},
	{name: ".git swapped for one of the command's making", attack: `evilgit .git src/evil && mv .git .git.old; mv src/evil .git`, later: `git status -s`},
	{name: "info/attributes and a diff driver", setup: `git config diff.evil.textconv 'sh -c "touch $MARK; cat \"\$0\""' && echo x > src/a.txt && git add src/a.txt && git commit -qm a && echo y >> src/a.txt`,
		attack: `echo '*.txt diff=evil' >> .git/info/attributes`, later: `git diff --stat -p >/dev/null`},
	// core.hooksPath, include.path and includeIf targets.
	{name: "hooksPath, a tracked directory", setup: `mkdir -p .githooks && git config core.hooksPath .githooks`, attack: `hook .githooks/pre-commit`, later: commit},
	{name: "hooksPath, an absent directory", setup: `git config core.hooksPath tools/hooks`, attack: `hook tools/hooks/pre-commit`, later: commit},
	{name: "hooksPath of the global configuration, relative", setup: `git config --global core.hooksPath .hooks`, attack: `hook .hooks/pre-commit`, later: commit},
	{name: "include.path target", setup: `git config include.path ../src/extra.cfg && touch src/extra.cfg`, attack: `fsm src/extra.cfg`, later: `git status -s`},
	{name: "include.path target, absent", setup: `git config include.path ../src/inc/extra.cfg`, attack: `mkdir -p src/inc && fsm src/inc/extra.cfg`, later: `git status -s`},
	{name: "includeIf target", setup: `git config includeIf.gitdir:/.path "$WS/src/if.cfg" && touch src/if.cfg`, attack: `fsm src/if.cfg`, later: `git status -s`},
	{name: "include of the global configuration", setup: `git config --global include.path "$WS/src/g.cfg" && touch src/g.cfg`, attack: `fsm src/g.cfg`, later: `git status -s`},
	// Nested, bare, submodule and worktree repositories.
	{name: "nested repository's config", setup: `git init -q src/nested`, attack: `fsm src/nested/.git/config`, later: `git -C src/nested status -s`},
	{name: "nested repository's hook", setup: `git init -q src/nested`, attack: `hook src/nested/.git/hooks/pre-commit`, later: `git -C src/nested commit -q --allow-empty -m later`},
	{name: "nested repository's commondir", setup: `git init -q src/nested`, attack: `evilgit src/nested/.git src/evil && echo "$WS/src/evil" > src/nested/.git/commondir`, later: `git -C src/nested status -s`},
	{name: "bare repository committed as files, its config", setup: `git init -q --bare src/fx/repo.git && git add src/fx && git commit -qm fx`,
		attack: `printf '[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch $MARK; false"\n' >> src/fx/repo.git/config`, later: `cd src/fx/repo.git && git status -s`},
	{name: "bare repository committed as files, its hook", setup: `git init -q --bare src/fx/repo.git && git add src/fx && git commit -qm fx`,
		attack: `hook src/fx/repo.git/hooks/post-receive`, later: `git push -q src/fx/repo.git HEAD:refs/heads/x`},
	{name: "bare repository below the workspace root", setup: `git init -q --bare srv.git`,
		attack: `hook srv.git/hooks/post-receive`, later: `git push -q srv.git HEAD:refs/heads/x`},
	{name: "submodule's config in modules/", setup: `git init -q "$ROOT/subsrc" && git -C "$ROOT/subsrc" commit -q --allow-empty -m s && git -c protocol.file.allow=always submodule add -q "$ROOT/subsrc" src/sub && git commit -qm sub`,
		attack: `fsm .git/modules/src/sub/config`, later: `git status -s`},
	{name: "submodule's hook in modules/", setup: `git init -q "$ROOT/subsrc" && git -C "$ROOT/subsrc" commit -q --allow-empty -m s && git -c protocol.file.allow=always submodule add -q "$ROOT/subsrc" src/sub && git commit -qm sub`,
		attack: `hook .git/modules/src/sub/hooks/pre-commit`, later: `git -C src/sub commit -q --allow-empty -m later`},
	{name: "submodule with its own .git, three deep, by the index", setup: `git init -q src/a/b/old && git -C src/a/b/old commit -q --allow-empty -m i && git add src/a/b/old && git commit -qm old`,
		attack: `fsm src/a/b/old/.git/config`, later: `git status -s`},
	{name: "linked worktree's config.worktree", setup: `git config extensions.worktreeConfig true && git worktree add -q ../wt2`,
		attack: `fsm .git/worktrees/wt2/config.worktree`, later: `git -C ../wt2 status -s`},
	{name: "linked worktree's commondir", setup: `git worktree add -q ../wt2`,
		attack: `evilgit .git src/evil && echo "$WS/src/evil" > .git/worktrees/wt2/commondir`, later: `git -C ../wt2 status -s`},
	{name: "linked worktree's .git file, two deep", setup: `git worktree add -q src/deep/wt3`,
		attack: `evilgit .git src/evilgd && echo "gitdir: $WS/src/evilgd" > src/deep/wt3/.git`, later: `git -C src/deep/wt3 status -s`},
	{name: "a git directory GIT_DIR names", env: []string{"GIT_DIR={ws}/src/x/gd", "GIT_WORK_TREE={ws}"},
		setup: `(unset GIT_DIR GIT_WORK_TREE; git init -q --bare src/x/gd)`, attack: `fsm "$GIT_DIR/config"; hook "$GIT_DIR/hooks/pre-commit"`, later: `git status -s; ` + commit},
	// Repositories the command makes, or that the discovery did not reach:
	// the sweep after the command (core/sandbox/sweep_linux.go).
	{name: "new repository at the root, its hook", setup: `rm -rf .git`, attack: `git init -q && hook .git/hooks/pre-commit`, later: `git add -A && ` + commit},
	{name: "new repository at the root, fsmonitor", setup: `rm -rf .git`, attack: `git init -q && fsm .git/config`, later: `git status -s`},
	{name: "new repository in a subdirectory, its hook", attack: `git init -q src/n && hook src/n/.git/hooks/pre-commit`, later: `cd src/n && ` + commit},
	{name: "new repository in a subdirectory, fsmonitor", attack: `git init -q src/n && fsm src/n/.git/config`, later: `git -C src/n status -s`},
	{name: "new repository six levels down", attack: `git init -q src/a/b/c/d/e/f && fsm src/a/b/c/d/e/f/.git/config`, later: `git -C src/a/b/c/d/e/f status -s`},
	{name: "new repository, fsmonitor in another spelling", attack: `git init -q src/n && printf '[Core]\n\tFsMonitor = "touch $MARK; false"\n' >> src/n/.git/config`, later: `git -C src/n status -s`},
	{name: "new repository, fsmonitor across a line continuation", attack: `git init -q src/n && printf '[core]\n\tfsmonitor = "touch $MARK; \\\n false"\n' >> src/n/.git/config`, later: `git -C src/n status -s`},
	{name: "new repository, hooksPath to the temp dir", attack: `git init -q src/n && git -C src/n config core.hooksPath "$TMPDIR/h" && hook "$TMPDIR/h/pre-commit"`, later: `cd src/n && ` + commit},
	{name: "new repository, hooksPath inside it", attack: `git init -q src/n && git -C src/n config core.hooksPath hk && hook src/n/hk/pre-commit`, later: `cd src/n && ` + commit},
	{name: "new repository, an alias", attack: `git init -q src/n && git -C src/n config alias.st '!touch "$MARK"'`, later: `git -C src/n st`},
	{name: "new repository, a clean filter", attack: `git init -q src/n && git -C src/n config filter.evil.clean 'touch "$MARK"; cat' && echo '* filter=evil' > src/n/.gitattributes && echo x > src/n/f`, later: `git -C src/n add -A`},
	{name: "new repository, a diff driver in info/attributes", attack: `git init -q src/n && cd src/n && echo x > a.txt && git add a.txt && git commit -qm a && echo y >> a.txt && git config diff.evil.textconv 'sh -c "touch $MARK; cat \"\$0\""' && echo '*.txt diff=evil' > .git/info/attributes`,
		later: `git -C src/n diff --stat -p >/dev/null`},
	{name: "new repository, include.path to the temp dir", attack: `git init -q src/n && printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' > "$TMPDIR/inc" && git -C src/n config include.path "$TMPDIR/inc"`, later: `git -C src/n status -s`},
	{name: "new repository, includeIf inside it", attack: `git init -q src/n && fsm src/n/inc.cfg && git -C src/n config includeIf.gitdir:/.path ../inc.cfg`, later: `git -C src/n status -s`},
	{name: "new repository, core.editor", attack: `git init -q src/n && git -C src/n config core.editor 'touch "$MARK"; true'`, later: `git -C src/n commit -q --allow-empty; true`},
	{name: "new repository, gpg.program", attack: `git init -q src/n && hook "$TMPDIR/gpg" && git -C src/n config commit.gpgsign true && git -C src/n config gpg.program "$TMPDIR/gpg"`, later: `cd src/n && ` + commit + `; true`},
	{name: "new repository, a remote's uploadpack", attack: `git init -q src/n && git -C src/n remote add o "$WS" && git -C src/n config remote.o.uploadpack 'touch "$MARK"; git-upload-pack'`, later: `git -C src/n fetch -q o`},
	{name: "new repository, an ext:: remote", attack: `git init -q src/n && git -C src/n remote add o "ext::sh -c touch% $MARK" && git -C src/n config protocol.ext.allow always`, later: `git -C src/n fetch -q o; true`},
	{name: "new repository, core.sshCommand", attack: `git init -q src/n && git -C src/n remote add o ssh://example.invalid/r && git -C src/n config core.sshCommand 'touch "$MARK"; false'`, later: `git -C src/n fetch -q o; true`},
	{name: "new repository, config.worktree with the extension", attack: `git init -q src/n && git -C src/n config extensions.worktreeConfig true && fsm src/n/.git/config.worktree`, later: `git -C src/n status -s`},
	{name: "new repository, a hook that links to the temp dir", attack: `git init -q src/n && hook "$TMPDIR/h" && ln -s "$TMPDIR/h" src/n/.git/hooks/pre-commit`, later: `cd src/n && ` + commit},
	{name: "new repository, hooks/ a link to the temp dir", attack: `git init -q src/n && hook "$TMPDIR/hk/pre-commit" && rm -rf src/n/.git/hooks && ln -s "$TMPDIR/hk" src/n/.git/hooks`, later: `cd src/n && ` + commit},
	{name: "new repository, config a link to the temp dir", attack: `git init -q src/n && cp src/n/.git/config "$TMPDIR/c" && fsm "$TMPDIR/c" && ln -sf "$TMPDIR/c" src/n/.git/config`, later: `git -C src/n status -s`},
	{name: "new repository made in the temp dir and moved in", attack: `git init -q "$TMPDIR/m" && fsm "$TMPDIR/m/.git/config" && mv "$TMPDIR/m" src/m`, later: `git -C src/m status -s`},
	{name: "new .git file naming a git directory in the temp dir", attack: `evilgit .git "$TMPDIR/evil" && mkdir -p src/n && echo "gitdir: $TMPDIR/evil" > src/n/.git`, later: `git -C src/n status -s`},
	{name: "new .git link to a git directory in the temp dir", attack: `evilgit .git "$TMPDIR/evil" && mkdir -p src/n && ln -s "$TMPDIR/evil" src/n/.git`, later: `git -C src/n status -s`},
	{name: "new .git file naming a git directory in the workspace", attack: `evilgit .git src/x/y/evil && mkdir -p src/n && echo "gitdir: $WS/src/x/y/evil" > src/n/.git`, later: `git -C src/n status -s`},
	{name: "new bare repository as plain files, deep", attack: `git init -q --bare src/x/y/z/r.git && printf '[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch $MARK; false"\n' >> src/x/y/z/r.git/config`, later: `cd src/x/y/z/r.git && git status -s`},
	{name: "new bare repository, its hook", attack: `git init -q --bare srv2.git && hook srv2.git/hooks/post-receive`, later: `git push -q srv2.git HEAD:refs/heads/x`},
	{name: "new git directory without objects/, its commondir elsewhere", attack: `evilgit .git "$TMPDIR/common" && mkdir -p src/g/.git/refs && echo 'ref: refs/heads/master' > src/g/.git/HEAD && echo "$TMPDIR/common" > src/g/.git/commondir`, later: `git -C src/g status -s; true`},
	{name: "a clone, its hook", attack: `git clone -q . src/cl && hook src/cl/.git/hooks/pre-commit`, later: `cd src/cl && ` + commit},
	{name: "a clone, fsmonitor", attack: `git clone -q . src/cl && fsm src/cl/.git/config`, later: `git -C src/cl status -s`},
	{name: "new repository's submodule, its hook in modules/", setup: `git init -q "$ROOT/subsrc" && git -C "$ROOT/subsrc" commit -q --allow-empty -m s`,
		attack: `git init -q src/n && cd src/n && git -c protocol.file.allow=always submodule add -q "$ROOT/subsrc" s && hook .git/modules/s/hooks/pre-commit`, later: `cd src/n/s && ` + commit},
	{name: "new repository's submodule, fsmonitor in modules/", setup: `git init -q "$ROOT/subsrc" && git -C "$ROOT/subsrc" commit -q --allow-empty -m s`,
		attack: `git init -q src/n && cd src/n && git -c protocol.file.allow=always submodule add -q "$ROOT/subsrc" s && fsm .git/modules/s/config`, later: `git -C src/n/s status -s`},
	{name: "new repository's submodule, core.worktree out of the workspace", setup: `git init -q "$ROOT/subsrc" && git -C "$ROOT/subsrc" commit -q --allow-empty -m s && mkdir -p "$ROOT/out"`,
		attack: `git init -q src/n && cd src/n && git -c protocol.file.allow=always submodule add -q "$ROOT/subsrc" s && git --git-dir=.git/modules/s config core.worktree "$ROOT/out" && git --git-dir=.git/modules/s config core.fsmonitor 'touch "$MARK"; false'`,
		later:  `git --git-dir=src/n/.git/modules/s status -s; true`},
	{name: "new linked worktree of a new repository, config.worktree", attack: `git init -q src/n && git -C src/n commit -q --allow-empty -m i && git -C src/n worktree add -q ../wtn && git -C src/n config extensions.worktreeConfig true && fsm src/n/.git/worktrees/wtn/config.worktree`,
		later: `git -C src/wtn status -s`},
	{name: "new linked worktree, commondir to the temp dir", attack: `git init -q src/n && git -C src/n commit -q --allow-empty -m i && git -C src/n worktree add -q ../wtn && evilgit src/n/.git "$TMPDIR/ev" && echo "$TMPDIR/ev" > src/n/.git/worktrees/wtn/commondir`,
		later: `git -C src/wtn status -s; true`},
	{name: "existing repository deeper than the discovery, fsmonitor", setup: `git init -q src/a/b/c/deep`, attack: `fsm src/a/b/c/deep/.git/config`, later: `git -C src/a/b/c/deep status -s`},
	{name: "existing repository deeper than the discovery, its hook", setup: `git init -q src/a/b/c/deep`, attack: `hook src/a/b/c/deep/.git/hooks/pre-commit`, later: `cd src/a/b/c/deep && ` + commit},
	// Shell start-up files, where the workspace is the home.
	{name: "~/.bashrc appended", home: true, setup: `echo '# rc' > ~/.bashrc`, attack: `echo 'touch "$MARK"' >> ~/.bashrc`, later: `bash -i -c true </dev/null`},
	{name: "~/.bash_profile created", home: true, attack: `echo 'touch "$MARK"' > ~/.bash_profile`, later: `bash -l -c true`},
	{name: "~/.profile appended", home: true, setup: `echo '# profile' > ~/.profile`, attack: `echo 'touch "$MARK"' >> ~/.profile`, later: `bash -l -c true`},
	{name: "~/.profile replaced by a rename", home: true, setup: `echo '# profile' > ~/.profile`, attack: `echo 'touch "$MARK"' > ~/p && mv -f ~/p ~/.profile`, later: `bash -l -c true`},
	{name: "~/.zshenv created", home: true, needs: "zsh", attack: `echo 'touch "$MARK"' > ~/.zshenv`, later: `zsh -c true`},
	{name: "fish's config", home: true, needs: "fish", setup: `mkdir -p ~/.config`, attack: `mkdir -p ~/.config/fish && echo 'touch "$MARK"' > ~/.config/fish/config.fish`, later: `fish -c true`},
	{name: "~/.gitconfig", home: true, setup: `git config --global user.name t`, attack: `fsm ~/.gitconfig`, later: `git status -s`},
	{name: "~/.local/bin in PATH", home: true, env: []string{"PATH={home}/.local/bin:{path}"}, setup: `mkdir -p ~/.local/bin`, attack: `hook ~/.local/bin/git`, later: `git --version`},
	// The home's other configuration, where the workspace is the home:
	// names absent at the start that programs read from the home later.
	{name: "~/.ssh/config created (ProxyCommand)", home: true, needs: "ssh", attack: `mkdir -p ~/.ssh && printf 'Host *\n\tProxyCommand sh -c "touch %s"\n' "$MARK" > ~/.ssh/config`,
		later: `timeout 10 ssh -F ~/.ssh/config -o BatchMode=yes -o StrictHostKeyChecking=no x true </dev/null; true`},
	{name: "~/.ssh/config appended", home: true, needs: "ssh", setup: `mkdir -p ~/.ssh && echo '# person' > ~/.ssh/config`, attack: `printf 'Host *\n\tProxyCommand sh -c "touch %s"\n' "$MARK" >> ~/.ssh/config`,
		later: `timeout 10 ssh -F ~/.ssh/config -o BatchMode=yes -o StrictHostKeyChecking=no x true </dev/null; true`},
	{name: "~/.npmrc script-shell", home: true, needs: "npm", setup: `printf '{"name":"p","version":"1.0.0","scripts":{"hi":"echo hi"}}\n' > package.json`,
		attack: `printf '#!/bin/sh\ntouch "$MARK"\nexec sh "$@"\n' > "$TMPDIR/sh" && chmod +x "$TMPDIR/sh" && printf 'script-shell=%s\n' "$TMPDIR/sh" > ~/.npmrc`, later: `npm run -s hi`},
	{name: "go env -w (~/.config/go/env) a toolexec", home: true, needs: "go", env: []string{"GOFLAGS="},
		attack: `printf '#!/bin/sh\ntouch "$MARK"\nexec "$@"\n' > "$TMPDIR/x" && chmod +x "$TMPDIR/x" && go env -w GOFLAGS=-toolexec=$TMPDIR/x`, later: `go build -o /dev/null main.go`},
	{name: "python's user site usercustomize", home: true, needs: "/usr/bin/python3",
		attack: `d=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p "$d" && echo 'import os; open(os.environ["MARK"], "w")' > "$d/usercustomize.py"`, later: `/usr/bin/python3 -c pass`},
	{name: "python's user site .pth", home: true, needs: "/usr/bin/python3",
		attack: `d=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p "$d" && echo 'import os; open(os.environ["MARK"], "w")' > "$d/zz.pth"`, later: `/usr/bin/python3 -c pass`},
	{name: "~/.pdbrc", home: true, needs: "/usr/bin/python3", setup: `echo pass > src/s.py`,
		attack: `echo 'import os; open(os.environ["MARK"], "w")' > ~/.pdbrc`, later: `cd src && /usr/bin/python3 -m pdb -c continue s.py </dev/null`},
	{name: "~/.tmux.conf", home: true, needs: "tmux", attack: `printf 'run-shell "touch %s"\n' "$MARK" > ~/.tmux.conf`,
		later: `s=persist-$$; tmux -L $s new-session -d 'sleep 3'; sleep 1; tmux -L $s kill-server 2>/dev/null; true`},
	{name: "~/.lesskey's LESSOPEN", home: true, needs: "less", setup: `echo text > src/t.txt`,
		attack: `printf '#env\nLESSOPEN=|sh -c "touch %s" %%s\n' "$MARK" > ~/.lesskey`, later: `less -F src/t.txt </dev/null`},
	{name: "~/.vim/plugin", home: true, needs: "vim", attack: `mkdir -p ~/.vim/plugin && echo 'call writefile([], $MARK)' > ~/.vim/plugin/x.vim`, later: `vim -E -c qa </dev/null >/dev/null 2>&1; true`},
	{name: "~/.emacs.d/init.el", home: true, needs: "emacs", attack: `mkdir -p ~/.emacs.d && echo '(write-region "" nil (getenv "MARK"))' > ~/.emacs.d/init.el`, later: `TERM=xterm timeout 20 script -qec 'emacs -nw --eval "(kill-emacs)"' /dev/null >/dev/null 2>&1; true`},
	{name: "~/.bashrc.d sourced by the person's ~/.bashrc", home: true, setup: `printf 'for f in ~/.bashrc.d/*; do [ -r "$f" ] && . "$f"; done\n' > ~/.bashrc`,
		attack: `mkdir -p ~/.bashrc.d && echo 'touch "$MARK"' > ~/.bashrc.d/x.sh`, later: `bash -i -c true </dev/null`},
	{name: "~/bin, on PATH by Debian's ~/.profile", home: true, setup: `printf 'if [ -d "$HOME/bin" ]; then PATH="$HOME/bin:$PATH"; fi\n' > ~/.profile`,
		attack: `hook ~/bin/git`, later: `bash -l -c 'git --version'`},
	{name: "~/.kube/config exec credential plugin", home: true, needs: "kubectl",
		attack: `mkdir -p ~/.kube && printf 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: sh, args: ["-c", "touch %s"], interactiveMode: Never}}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n' "$MARK" > ~/.kube/config`,
		later:  `timeout 20 kubectl get pods --request-timeout=2s </dev/null; true`},
	{name: "ZDOTDIR in the workspace", needs: "zsh", env: []string{"ZDOTDIR={ws}/zdot"}, setup: `mkdir -p zdot`, attack: `echo 'touch "$MARK"' > zdot/.zshenv`, later: `zsh -c true`},
	{name: "the file BASH_ENV names", env: []string{"BASH_ENV={ws}/src/env.sh"}, setup: `touch src/env.sh`, attack: `echo 'touch "$MARK"' >> src/env.sh`, later: `true`},
	{name: "the file ENV names", needs: "dash", env: []string{"ENV={ws}/src/env.sh"}, setup: `touch src/env.sh`, attack: `echo 'touch "$MARK"' >> src/env.sh`, later: `dash -i -c true </dev/null`},
	// PATH directories inside a writable tree.
	{name: "PATH directory in the workspace", env: []string{"PATH={ws}/bin:{path}"}, setup: `mkdir -p bin`, attack: `hook bin/git`, later: `git --version`},
	{name: "absent PATH directory in the workspace", env: []string{"PATH={ws}/tools/bin:{path}"}, setup: `mkdir -p tools`, attack: `hook tools/bin/git`, later: `git --version`},
	{name: "absent PATH directory at the workspace root", env: []string{"PATH={ws}/newbin:{path}"}, attack: `hook newbin/git`, later: `git --version`},
	{name: "PATH directory in the temp dir", env: []string{"PATH={tmp}/bin:{path}"}, setup: `mkdir -p "$TMPDIR/bin"`, attack: `hook "$TMPDIR/bin/git"`, later: `git --version`},
	// The toolchains' shared caches.
	{name: "a module rewritten in GOMODCACHE", needs: "go", setup: `cd src/app && go mod download example.com/lib && go build -o /dev/null . && cd ../other && go build -o /dev/null .`,
		attack: `d=$(go env GOMODCACHE)/example.com/lib@v1.0.0; chmod -R u+w "$d"; printf 'package lib\n\nimport "os"\n\nfunc init() { os.WriteFile(os.Getenv("MARK"), nil, 0o644) }\n\nfunc Hello() string { return "hello" }\n' > "$d/lib.go"`,
		later:  `cd src/other && go run .`},
	{name: "a module's source removed and replaced", needs: "go", setup: `cd src/app && go mod download example.com/lib`,
		attack: `d=$(go env GOMODCACHE)/example.com/lib@v1.0.0; chmod -R u+w "$d"; rm -rf "$d" && mkdir -p "$d" && printf 'module example.com/lib\n' > "$d/go.mod" && printf 'package lib\n\nimport "os"\n\nfunc init() { os.WriteFile(os.Getenv("MARK"), nil, 0o644) }\n\nfunc Hello() string { return "hi" }\n' > "$d/lib.go"`,
		later:  `cd src/other && go run .`},
	{name: "a script planted in ~/.cache", setup: `mkdir -p ~/.cache/tool`, attack: `hook ~/.cache/tool/run.sh`, later: `[ ! -x ~/.cache/tool/run.sh ] || ~/.cache/tool/run.sh`},
	{name: "go install into GOPATH/bin on PATH", needs: "go", env: []string{"PATH={home}/go/bin:{path}"}, setup: `mkdir -p src/git && printf 'module example.com/git\n\ngo 1.21\n' > src/git/go.mod && printf 'package main\n\nimport "os"\n\nfunc main() { os.WriteFile(os.Getenv("MARK"), nil, 0o644) }\n' > src/git/main.go`,
		attack: `cd src/git && go install .`, later: `git --version`},
}

// writeModuleProxy writes a GOPROXY directory serving example.com/lib
// v1.0.0, and two modules in the workspace that use it.
func writeModuleProxy(t *testing.T, b *persistBox) {
	t.Helper()
	dir := filepath.Join(b.root, "proxy", "example.com", "lib", "@v")
	os.MkdirAll(dir, 0o755)
	mod := "module example.com/lib\n\ngo 1.21\n"
	// It imports os already: the go command takes a module's imports from
	// its cache of the module cache (modules there are immutable), so a
	// payload uses only what the original imports.
	src := "package lib\n\nimport \"os\"\n\nfunc Hello() string { return os.Getenv(\"GREETING\") + \"hello\" }\n"
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for name, body := range map[string]string{"go.mod": mod, "lib.go": src} {
		w, _ := zw.Create("example.com/lib@v1.0.0/" + name)
		w.Write([]byte(body))
	}
	zw.Close()
	os.WriteFile(filepath.Join(dir, "list"), []byte("v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "v1.0.0.mod"), []byte(mod), 0o644)
	os.WriteFile(filepath.Join(dir, "v1.0.0.zip"), zb.Bytes(), 0o644)
	for _, m := range []string{"app", "other"} {
		d := filepath.Join(b.ws, "src", m)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "go.mod"), []byte("module example.com/"+m+"\n\ngo 1.21\n\nrequire example.com/lib v1.0.0\n"), 0o644)
		os.WriteFile(filepath.Join(d, "main.go"), []byte("package main\n\nimport \"example.com/lib\"\n\nfunc main() { println(lib.Hello()) }\n"), 0o644)
	}
}

// TestContainPersistence runs persistAttacks: the control unconfined,
// then the attack through joule-exec (the namespace construction) and the
// ordinary program afterwards, unconfined. With Landlock alone every
// third case runs too; what gets through there is LandlockOnlyGaps'.
func TestContainPersistence(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	// Both boxes are made here, by the parent: a set-up failure inside a
	// subtest would be a FailNow on the parent.
	boxes := map[bool]*persistBox{false: newPersistBox(t, false), true: newPersistBox(t, true)}
	box := func(home bool) *persistBox { return boxes[home] }
	landlockThrough, landlockRan := 0, 0
	for i, a := range persistAttacks {
		t.Run(a.name, func(t *testing.T) {
			if testing.Short() && i%4 != 0 {
				t.Skip("-short runs every fourth case")
			}
			if a.needs != "" {
				if _, err := exec.LookPath(a.needs); err != nil {
					t.Skipf("%s is not installed", a.needs)
				}
			}
			b := box(a.home)
			prepare := func() {
				b.reset(t)
				writeModuleProxy(t, b)
				if a.setup != "" {
					out := b.run(t, false, "set -e; "+a.setup, a.env)
					if b.marked() {
						t.Fatalf("the setup ran the payload: %s", out)
					}
				}
			}
			prepare()
			out := b.run(t, false, a.attack, a.env)
			later := b.run(t, false, a.later, a.env)
			if !b.marked() {
				t.Fatalf("without containment the attack did not work, so the case proves nothing:\nattack: %s\n%s\nlater: %s\n%s", a.attack, out, a.later, later)
			}
			prepare()
			out = b.run(t, true, a.attack, a.env)
			if strings.Contains(out, "construction failed") || strings.HasPrefix(out, "joule-exec: policy") {
				t.Fatalf("joule-exec did not confine as it should: %s", out)
			}
			later = b.run(t, false, a.later, a.env)
			if b.marked() {
				t.Errorf("what the contained command planted ran unconfined afterwards:\nattack: %s\n%s\nlater: %s\n%s", a.attack, out, a.later, later)
			}
			if i%3 == 0 {
				prepare()
				b.run(t, true, a.attack, append([]string{sandbox.LandlockOnlyEnv + "=1"}, a.env...))
				b.run(t, false, a.later, a.env)
				landlockRan++
				if b.marked() {
					landlockThrough++
				}
			}
		})
	}
	t.Logf("with Landlock alone, %d of the cases run that way got through (LandlockOnlyGaps)", landlockThrough)
	gaps := strings.Join(sandbox.LandlockOnlyGaps(), "\n")
	// Only where the cases run that way include the git ones (not a -run
	// of a few cases).
	if !testing.Short() && landlockRan >= 10 && (landlockThrough == 0 || !strings.Contains(gaps, "git's configuration") || !strings.Contains(gaps, "caches")) {
		t.Errorf("with Landlock alone %d cases got through; LandlockOnlyGaps must say which classes stay open: %q", landlockThrough, gaps)
	}
}

// TestContainOrdinaryWorkPersist: with git's metadata, the start-up files
// and PATH read-only and the caches private, ordinary work still works
// through the line joule hook --contain writes: git's everyday commands,
// a fetch (--net), go with its real build cache and a module download
// (which lands in the session's layer, not in the real module cache, and
// is there for the session's next command), npm install (node_modules/.bin
// links), python -m venv, writes at the workspace root and in the temp
// dir. go install is refused (GOPATH/bin is read-only).
func TestContainOrdinaryWorkPersist(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	b := newPersistBox(t, false)
	b.reset(t)
	writeModuleProxy(t, b)
	// The module cache exists, as where go ran before: an absent cache is
	// not made inside containment.
	if out := b.run(t, false, `set -e; mkdir -p ~/go/pkg/mod && git clone -q --bare . "$ROOT/remote.git" && git remote add origin "$ROOT/remote.git" && git -C "$ROOT/remote.git" branch -q fetched HEAD && mkdir -p src/pkg/dep &&
printf '{"name":"dep","version":"1.0.0","bin":{"dep-bin":"bin.js"}}' > src/pkg/dep/package.json && printf '#!/usr/bin/env node\nconsole.log("dep-bin ran")\n' > src/pkg/dep/bin.js &&
printf '{"name":"pkg","version":"1.0.0","dependencies":{"dep":"file:./dep"}}' > src/pkg/package.json &&
git init -q "$ROOT/subsrc" && git -C "$ROOT/subsrc" commit -q --allow-empty -m s && echo ready`, nil); !strings.Contains(out, "ready") {
		t.Fatalf("setup: %s", out)
	}
	steps := []struct {
		name, line, want string
		flags            []string
		needs            string
	}{
		{"git", `git switch -q -c feat && echo x > src/f && git add src/f && git commit -qm f && git checkout -q -b feat2 && echo y >> src/f &&
git stash -q && git stash pop -q && git commit -qam y && git switch -q - && git merge -q --no-edit feat2 && git switch -q -c side HEAD~1 &&
echo s > src/s && git add src/s && git commit -qm s && git rebase -q feat2 && git log --oneline | wc -l && git status --short`, "4", nil, ""},
		{"git fetch", `git fetch -q origin && git branch -r`, "origin/fetched", []string{"--net"}, ""},
		{"go", `cd src/app && go mod download && go build -o app . && ./app && go vet ./... && go test ./... 2>&1 | tail -1`, "hello", nil, "go"},
		{"the download is the session's", `cd src/other && GOPROXY=off go build -o /dev/null . && echo built`, "built", nil, "go"},
		{"npm install", `cd src/pkg && npm install --offline --no-audit --no-fund >/dev/null 2>&1; ./node_modules/.bin/dep-bin`, "dep-bin ran", nil, "npm"},
		{"python -m venv", `/usr/bin/python3 -m venv src/.venv && src/.venv/bin/python -c 'print("venv", 1+1)'`, "venv 2", nil, "/usr/bin/python3"},
		{"new repositories", `git init -q src/n && cd src/n && echo a > a && git add a && git commit -qm a && git clone -q . ../cl && cd ../cl &&
git -c protocol.file.allow=always submodule add -q "$ROOT/subsrc" s && git commit -qm s && git worktree add -q ../wt && git -C ../wt commit -q --allow-empty -m w && echo made`, "made", nil, ""},
		{"new repositories afterwards", `git -C src/cl status --short && git -C src/cl submodule status | cut -c43- && git -C src/wt log --oneline | wc -l && git -C src/cl/s log --oneline | wc -l`, "s (heads/master)\n3\n1", nil, ""},
		{"the workspace root and the temp dir", `touch new.txt && mkdir newdir && mv new.txt newdir/ && f=$(mktemp) && echo t > "$f" && cat "$f" && rm -r "$f" newdir`, "t", nil, ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.needs != "" {
				if _, err := exec.LookPath(s.needs); err != nil {
					t.Skipf("%s is not installed", s.needs)
				}
			}
			out := b.run(t, true, "set -e; "+s.line, nil, s.flags...)
			if !strings.Contains(out, s.want) {
				t.Fatalf("%s: want %q in:\n%s", s.line, s.want, out)
			}
			if strings.Contains(out, "git would have run") {
				t.Errorf("the sweep took something of ordinary work:\n%s", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(b.home, "go", "pkg", "mod", "example.com", "lib@v1.0.0")); err == nil {
		t.Error("the contained download reached the real module cache")
	}
	out := b.run(t, true, `cd src/app && go install . && echo installed`, nil)
	if strings.Contains(out, "installed") || !strings.Contains(out, "read-only file system") {
		t.Errorf("go install inside containment: %s", out)
	}
}

// treeHash hashes the names, modes and contents of every file below dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, _ := d.Info()
		fmt.Fprintf(h, "%s %v %d\n", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size())
		if d.Type().IsRegular() {
			c, _ := os.ReadFile(p)
			h.Write(c)
		}
		return nil
	})
	return fmt.Sprintf("%x", h.Sum(nil))
}

// raceKinds are the ways a process the command leaves running swaps a
// path the host is about to write or read for one that leads outside the
// write set, each a loop body run until $WS/stop appears: the file itself
// for a link made anew, for one made before and renamed in, or a directory
// on its way for one holding such a link (renamed, or exchanged with
// renameat2). prepare is run first, in the foreground.
var raceKinds = []struct{ name, prepare, loop string }{
	{"a link made anew", `echo data > file && echo readme > readme`,
		`ln -sfn "$HOME/.bashrc" file; ln -sfn "$HOME/secret.txt" readme`},
	{"a link made before, renamed in", `echo data > file && echo readme > readme`,
		`ln -sfn "$HOME/.bashrc" "$TMPDIR/l1"; ln -sfn "$HOME/secret.txt" "$TMPDIR/l2"; mv -f "$TMPDIR/l1" file; mv -f "$TMPDIR/l2" readme`},
	{"a directory holding a link, moved in", `mkdir -p d evil && echo data > d/f && echo readme > d/readme && ln -s "$HOME/.bashrc" evil/f && ln -s "$HOME/secret.txt" evil/readme`,
		`mv d d.old && mv evil d && mv d evil && mv d.old d; [ "$(uname -m)" != x86_64 ] || perl -e 'syscall(316, -100, "d", -100, "evil", 2)'`},
}

// TestContainBackgroundRace races issue 33's swap: a command the host runs
// in the background (joule-exec --background) keeps swapping workspace
// paths (raceKinds) for links to ~/.bashrc and a secret while this
// process, as the host's own Write and Read tools would, writes and reads
// those paths, unconfined. Without --background the race is won (the
// control); with it no link can be made or moved in and no directory
// moved, so ~/.bashrc is unchanged and the secret never read, while the
// command's ordinary writes (files, new directories) still work.
func TestContainBackgroundRace(t *testing.T) {
	needLandlock(t)
	for _, construction := range []string{"namespace", "landlock"} {
		t.Run(construction, func(t *testing.T) {
			if construction == "namespace" {
				needNamespaces(t)
			}
			var env []string
			if construction == "landlock" {
				env = []string{sandbox.LandlockOnlyEnv + "=1"}
			}
			b := newPersistBox(t, false)
			src := filepath.Join(b.ws, "src")
			for _, k := range raceKinds {
				won := func(background bool) (bool, string) {
					b.reset(t)
					os.WriteFile(filepath.Join(b.home, ".bashrc"), []byte("# rc\n"), 0o644)
					os.WriteFile(filepath.Join(b.home, "secret.txt"), []byte("the-secret\n"), 0o644)
					if out := b.run(t, true, "cd src && "+k.prepare+" && echo prepared", env); !strings.Contains(out, "prepared") {
						t.Fatalf("prepare: %s", out)
					}
					var flags []string
					if background {
						flags = []string{"--background"}
					}
					loop := `cd src; n=0; while [ ! -e "$WS/stop" ]; do n=$((n+1)); echo "$n" >> log.txt; mkdir -p made/dir && echo x > made/dir/f; ` + k.loop + `; done 2>/dev/null`
					c := b.cmd(true, loop, env, flags...)
					// the command writes while the test reads: a locked buffer
					var out lockedBuffer
					c.Stdout, c.Stderr = &out, &out
					if err := c.Start(); err != nil {
						t.Fatal(err)
					}
					defer func() {
						os.WriteFile(filepath.Join(b.ws, "stop"), nil, 0o644)
						done := make(chan error, 1)
						go func() { done <- c.Wait() }()
						select {
						case <-done:
						case <-time.After(10 * time.Second):
							syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
							<-done
						}
					}()
					// The host's tools: Writes of src/file and src/d/f,
					// Reads of src/readme and src/d/readme, for 3 s.
					for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
						os.WriteFile(filepath.Join(src, "file"), []byte("host\n"), 0o644)
						os.WriteFile(filepath.Join(src, "d", "f"), []byte("host\n"), 0o644)
						for _, r := range []string{"readme", "d/readme"} {
							if got, _ := os.ReadFile(filepath.Join(src, r)); strings.Contains(string(got), "the-secret") {
								return true, "the host read the secret through src/" + r
							}
						}
						if got, _ := os.ReadFile(filepath.Join(b.home, ".bashrc")); string(got) != "# rc\n" {
							return true, fmt.Sprintf("the host's write made ~/.bashrc %q", got)
						}
					}
					if log, err := os.ReadFile(filepath.Join(src, "log.txt")); err != nil || len(log) == 0 {
						t.Errorf("%s: the background command's own writes did not work (%v): %s", k.name, err, out.String())
					}
					if _, err := os.Stat(filepath.Join(src, "made", "dir", "f")); err != nil {
						t.Errorf("%s: the background command could not make a directory: %v: %s", k.name, err, out.String())
					}
					return false, ""
				}
				if ok, _ := won(false); !ok {
					t.Fatalf("%s: without --background the race was not won in 3 s: the case proves nothing", k.name)
				}
				if ok, how := won(true); ok {
					t.Errorf("%s: a background command redirected the host's own file tools: %s", k.name, how)
				}
			}
		})
	}
}

// lockedBuffer is an output buffer a running command writes while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
