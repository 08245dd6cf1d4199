//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKeptConfig pins what the sweep keeps of a repository's
// configuration: each case is a file, the variables kept (as git config
// --list prints them, read back by git from the rewritten file) and
// whether the file is rewritten at all.
func TestKeptConfig(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	const init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
	initKept := []string{"core.repositoryformatversion=0", "core.filemode=true", "core.bare=false", "core.logallrefupdates=true"}
	cases := []struct {
		name, in string
		kept     []string // nil: the file stays as it is
	}{
		{"git init", init, nil},
		{"git clone", init + "[remote \"origin\"]\n\turl = /src/r\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", nil},
		{"a submodule's", init + "\tworktree = ../../../s\n[remote \"origin\"]\n\turl = https://example.com/r.git\n", nil},
		{"submodules of the superproject", init + "[submodule \"a b\"]\n\turl = ../a\n\tactive = true\n\tupdate = rebase\n", nil},
		{"user and branch settings", init + "[user]\n\tname = A \"B\" C\n\temail = a@example.com\n[pull]\n\trebase = true\n[init]\n\tdefaultBranch = main\n", nil},
		{"fsmonitor", init + "\tfsmonitor = touch /x; false\n", initKept},
		{"fsmonitor in another spelling", init + "[Core]\n\tFsMonitor = \"touch /x\"\n", initKept},
		{"fsmonitor across a continuation", init + "\tfsmonitor = \"touch /x; \\\nfalse\"\n", initKept},
		{"hooksPath", init + "\thooksPath = /tmp/h\n", initKept},
		{"sshCommand, pager, editor", init + "\tsshCommand = x\n\tpager = x\n\teditor = x\n[sequence]\n\teditor = x\n", initKept},
		{"alias", init + "[alias]\n\tst = !touch /x\n", initKept},
		{"filter and diff drivers", init + "[filter \"f\"]\n\tclean = x\n\tsmudge = x\n\tprocess = x\n[diff \"d\"]\n\ttextconv = x\n\tcommand = x\n[merge \"m\"]\n\tdriver = x\n", initKept},
		{"include and includeIf", init + "[include]\n\tpath = /tmp/x\n[includeIf \"gitdir:/\"]\n\tpath = /tmp/y\n", initKept},
		{"gpg program", init + "[gpg]\n\tprogram = x\n[commit]\n\tgpgsign = true\n", initKept},
		{"credential helper", init + "[credential]\n\thelper = !x\n", initKept},
		{"uploadpack and receivepack", init + "[remote \"o\"]\n\turl = /r\n\tuploadpack = x\n\treceivepack = x\n\tvcs = x\n", append(slices.Clone(initKept), "remote.o.url=/r")},
		{"transport helper URLs", init + "[remote \"o\"]\n\turl = ext::sh -c x\n\tpushurl = fd::1\n[remote \"p\"]\n\turl = evil::x\n[submodule \"s\"]\n\turl = ext::x\n", initKept},
		{"a URL with an IPv6 host stays", init + "[remote \"o\"]\n\turl = ssh://[::1]/r\n", nil},
		{"protocol.ext.allow and insteadOf", init + "[protocol \"ext\"]\n\tallow = always\n[url \"ext::x\"]\n\tinsteadOf = https://\n", initKept},
		{"submodule update command", init + "[submodule \"s\"]\n\tupdate = !x\n\turl = ../s\n", append(slices.Clone(initKept), "submodule.s.url=../s")},
		{"worktree out of the tree", init + "\tworktree = /elsewhere\n", initKept},
		{"worktree up out of the tree", init + "\tworktree = ../../../..\n", initKept},
		{"core options that run nothing stay", init + "\tautocrlf = input\n\tignorecase = true\n\tsymlinks = false\n[extensions]\n\tobjectFormat = sha256\n\tworktreeConfig = true\n", nil},
		{"core options not kept", init + "\tsplitIndex = true\n\tuntrackedCache = true\n\tgitProxy = x\n\taskPass = x\n\texcludesFile = /x\n\tattributesFile = /x\n", initKept},
		{"maintenance and gc", init + "[maintenance]\n\tauto = true\n[gc]\n\tauto = 1\n", initKept},
		{"lfs filter", init + "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\trequired = true\n", initKept},
		{"a variable before any section", "x = y\n" + init + "\tfsmonitor = x\n", initKept},
		{"syntax git cannot read", init + "[core\n\tfsmonitor = x\n", initKept},
		{"an empty file", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			g := filepath.Join(root, "ws", ".git", "modules", "r")
			os.MkdirAll(g, 0o755)
			os.WriteFile(filepath.Join(g, "config"), []byte(tc.in), 0o644)
			s := &sweeper{trees: []string{filepath.Join(root, "ws")}, known: map[string]bool{}, done: map[string]bool{}, qroot: filepath.Join(root, "q")}
			s.gitdirAt(g)
			got, _ := os.ReadFile(filepath.Join(g, "config"))
			if tc.kept == nil {
				if string(got) != tc.in || len(s.found) != 0 {
					t.Fatalf("rewritten (%v):\n%s", s.found, got)
				}
				return
			}
			if len(s.found) != 1 || s.qdir == "" {
				t.Fatalf("nothing reported: %v", s.found)
			}
			if q, _ := os.ReadFile(filepath.Join(s.qdir, "1", "config")); string(q) != tc.in {
				t.Errorf("quarantined %q, want the original", q)
			}
			out, err := exec.Command("git", "config", "--file", filepath.Join(g, "config"), "--list").CombinedOutput()
			if err != nil {
				t.Fatalf("git cannot read the rewritten file: %v\n%s\n%s", err, out, got)
			}
			lines := strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), " ", "_"))
			want := make([]string, len(tc.kept))
			for i, k := range tc.kept {
				want[i] = strings.ReplaceAll(k, " ", "_")
			}
			if !slices.Equal(lines, want) {
				t.Errorf("kept %q, want %q", lines, want)
			}
		})
	}
}

// TestSweep runs one sweep over a workspace holding repositories of every
// kind, as a command would leave them, and checks what is left.
func TestSweep(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, tmp, out := filepath.Join(root, "ws"), filepath.Join(root, "tmp"), filepath.Join(root, "out")
	sh := func(script string) {
		t.Helper()
		c := exec.Command("/bin/sh", "-c", script)
		c.Dir = ws
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "TMP="+tmp, "OUT="+out, "HOME="+root)
		if o, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, o)
		}
	}
	os.MkdirAll(ws, 0o755)
	sh(`set -e; mkdir -p "$TMP" "$OUT"
git init -q && git init -q known
for r in new a/b/c/d/e/deep node_modules/m/r cache/r; do git init -q $r; printf '[core]\n\tfsmonitor = x\n' >> $r/.git/config; printf '#!/bin/sh\n' > $r/.git/hooks/pre-commit; done
printf '#!/bin/sh\n' > .git/hooks/pre-commit; printf '#!/bin/sh\n' > known/.git/hooks/pre-commit
git init -q --bare bare.git && ln -s "$TMP/h" bare.git/hooks/post-receive
git init -q "$TMP/evil" && mkdir -p ptmp pws pout && echo "gitdir: $TMP/evil/.git" > ptmp/.git
git init -q --bare x/y/target && echo "gitdir: ../x/y/target" > pws/.git && printf '#!/bin/sh\n' > x/y/target/hooks/update
git init -q "$OUT/r" && ln -s "$OUT/r/.git" pout/.git`)
	s := &sweeper{trees: []string{ws}, writable: []string{ws, tmp}, known: map[string]bool{ws + "/.git": true, ws + "/known/.git": true},
		skip: map[string]bool{ws + "/cache": true}, done: map[string]bool{}, qroot: filepath.Join(root, "q")}
	s.run()
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(ws, p)); return err == nil }
	for p, want := range map[string]bool{
		".git/hooks/pre-commit":                  true, // known: guarded during the run
		"known/.git/hooks/pre-commit":            true,
		"new/.git/hooks/pre-commit":              false,
		"new/.git/hooks/pre-push.sample":         true,
		"a/b/c/d/e/deep/.git/hooks/pre-commit":   false,
		"node_modules/m/r/.git/hooks/pre-commit": true, // not entered (docs/gate.md)
		"cache/r/.git/hooks/pre-commit":          true, // a cache: not entered
		"bare.git/hooks/post-receive":            false,
		"ptmp/.git":                              false, // to the temp dir
		"pws/.git":                               true,  // to the workspace: swept there
		"x/y/target/hooks/update":                false,
		"pout/.git":                              true, // outside every writable tree
	} {
		if exists(p) != want {
			t.Errorf("%s exists: %v, want %v", p, !want, want)
		}
	}
	for _, r := range []string{"new", "a/b/c/d/e/deep"} {
		if b, _ := os.ReadFile(filepath.Join(ws, r, ".git/config")); strings.Contains(string(b), "fsmonitor") || !strings.Contains(string(b), "repositoryformatversion") {
			t.Errorf("%s/.git/config: %s", r, b)
		}
	}
	if len(s.stopped) != 0 {
		t.Errorf("stopped: %v", s.stopped)
	}
	var report strings.Builder
	s.report(&report)
	for _, want := range []string{ws + "/new/.git: config (core.fsmonitor), hooks/pre-commit", ws + "/ptmp/.git: .git", s.qdir} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, report.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(s.qdir, "README")); err != nil || string(b) != report.String() {
		t.Errorf("README: %v %q", err, b)
	}
	// A second sweep finds nothing left to take.
	s2 := &sweeper{trees: s.trees, writable: s.writable, known: s.known, skip: s.skip, done: map[string]bool{}, qroot: s.qroot}
	s2.run()
	if len(s2.found) != 0 {
		t.Errorf("a second sweep took %v", s2.found)
	}
}

// BenchmarkSweep times the sweep after a command over the repository the
// test runs in (its checkout, as a workspace), with the discovery at the
// command's start, over the same tree in the same loop, as the baseline:
// it reports each one's median wall and CPU time (of the thread, user and
// system: on a loaded machine the wall time is mostly waiting for a CPU)
// and the ratios sweep/discovery. Nothing is moved: every repository of a
// checkout is one the discovery follows (a dry sweeper is used all the
// same).
func BenchmarkSweep(b *testing.B) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		b.Skip("not in a git checkout")
	}
	ws, _ := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	home := b.TempDir()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var discWall, discCPU, sweepWall, sweepCPU []time.Duration
	dirs := 0
	for i := 0; i < b.N; i++ {
		spec := Spec{Layers: []Layer{{Write: []string{ws}}}, persist: persistIn{home: home, getenv: os.Getenv, grant: []string{ws}}}
		t0, c0 := time.Now(), cpu()
		spec.guards()
		t1, c1 := time.Now(), cpu()
		s := spec.newSweeper()
		s.dry = true
		s.run()
		t2, c2 := time.Now(), cpu()
		discWall, discCPU = append(discWall, t1.Sub(t0)), append(discCPU, c1-c0)
		sweepWall, sweepCPU = append(sweepWall, t2.Sub(t1)), append(sweepCPU, c2-c1)
		dirs = s.dirs
		if len(s.found) > 0 {
			b.Fatalf("the checkout has repositories the discovery does not follow: %v", s.found)
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	dw, dc, sw, sc := median(discWall), median(discCPU), median(sweepWall), median(sweepCPU)
	b.ReportMetric(float64(dw.Microseconds()), "µs-discovery-wall")
	b.ReportMetric(float64(sw.Microseconds()), "µs-sweep-wall")
	b.ReportMetric(float64(sw)/float64(dw), "sweep/discovery-wall")
	b.ReportMetric(float64(dc.Microseconds()), "µs-discovery-cpu")
	b.ReportMetric(float64(sc.Microseconds()), "µs-sweep-cpu")
	if dc > 0 {
		b.ReportMetric(float64(sc)/float64(dc), "sweep/discovery-cpu")
	}
	b.ReportMetric(float64(dirs), "dirs")
}
