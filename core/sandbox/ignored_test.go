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

// TestIgnoredCode pins what the discovery finds of a workspace's ignored
// code and configuration: the directories of dependencies and tools'
// configuration it mounts as overlays, the files it binds read-only, and
// what it must leave alone (ignored outputs, tracked or untracked but not
// ignored files, a node_modules that is not ignored, what lies below an
// ignored directory).
func TestIgnoredCode(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home := t.TempDir()
	ws := filepath.Join(t.TempDir(), "ws")
	files := map[string]string{
		".gitignore": "node_modules/\n.venv/\nenv/\ndist/\n*.log\nlocal.mk\n.npmrc\ngo.work\n.idea/\n__pycache__/\n.envrc.local\nthird_party/\n" +
			"scripts/local/\n*.cfg\n/forks/\n*.local\ncoverage/\n.next/\n*.tsbuildinfo\ntarget/\n*.out\n",
		"pkg/.gitignore":               "vendor/\n.python-version\n",
		"node_modules/lib/index.js":    "",
		"node_modules/.bin/x":          "",
		".venv/pyvenv.cfg":             "",
		"env/pyvenv.cfg":               "",
		"dist/bundle.js":               "",
		"build.log":                    "",
		"local.mk":                     "",
		".npmrc":                       "",
		"go.work":                      "",
		".idea/workspace.xml":          "",
		"src/__pycache__/m.pyc":        "",
		".envrc.local":                 "",
		".envrc":                       "", // not ignored: in the diff
		"pkg/vendor/modules.txt":       "",
		"pkg/.python-version":          "",
		"pkg/sub/.gitignore":           "!node_modules/\n",
		"pkg/sub/node_modules/a/b.js":  "", // not ignored below pkg/sub: shows in git status
		"a/b/c/d/e/node_modules/x.js":  "", // deep: found all the same
		"third_party/lib/README":       "",
		"tools/.vscode/settings.json":  "", // globally excluded
		".config-not-a-config/file.mk": "",
		// Ignored paths no name rule knows, which a program of the
		// person's reads all the same: a directory their Makefile runs
		// scripts from, a file a -include names, a go.mod replace's
		// directory; and deep ones of a monorepo.
		"scripts/local/deploy.sh":                "",
		"config/site.cfg":                        "",
		"forks/lib/go.mod":                       "",
		"packages/@scope/a/node_modules/x/i.js":  "",
		"services/api/.venv/pyvenv.cfg":          "",
		"services/api/app/deep/er/still/x.local": "",
		// Outputs: left writable.
		"coverage/lcov.info":        "",
		"web/.next/cache/x":         "",
		"web/app.tsbuildinfo":       "",
		"target/debug/app":          "",
		"services/api/coverage.out": "",
	}
	for p, c := range files {
		writeT(t, filepath.Join(ws, p), c)
	}
	writeT(t, filepath.Join(home, ".config/git/ignore"), ".vscode/\n")
	gitT(t, ws, "init", "-q")
	spec := Spec{Layers: []Layer{{Write: []string{ws}}}, persist: persistIn{home: home, getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}, grant: []string{ws}}}
	gs := spec.guards()
	rel := func(ps []string) []string {
		var out []string
		for _, p := range ps {
			if r, err := filepath.Rel(ws, p); err == nil && !strings.HasPrefix(r, "..") {
				out = append(out, r)
			}
		}
		slices.Sort(out)
		return out
	}
	var ro []string
	for _, g := range gs {
		ro = append(ro, g.path)
	}
	overlays, readOnly := rel(spec.ignoredDirs), rel(ro)
	wantOverlays := []string{".idea", ".venv", "a/b/c/d/e/node_modules", "env", "forks", "node_modules", "packages/@scope/a/node_modules",
		"pkg/vendor", "scripts/local", "services/api/.venv", "third_party", "tools/.vscode"}
	if !slices.Equal(overlays, wantOverlays) {
		t.Errorf("overlays %v, want %v", overlays, wantOverlays)
	}
	for _, want := range []string{".envrc.local", ".npmrc", "go.work", "local.mk", "pkg/.python-version", "config/site.cfg", "services/api/app/deep/er/still/x.local"} {
		if !slices.Contains(readOnly, want) {
			t.Errorf("%s is not bound read-only: %v", want, readOnly)
		}
	}
	for _, not := range []string{"dist", "build.log", ".envrc", "pkg/sub/node_modules", "src/__pycache__", ".config-not-a-config/file.mk",
		"coverage", "web/.next", "web/app.tsbuildinfo", "target", "services/api/coverage.out"} {
		if slices.Contains(readOnly, not) || slices.Contains(overlays, not) {
			t.Errorf("%s is covered, and must not be", not)
		}
	}
}

func writeT(t *testing.T, p, c string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestSweepIgnored runs the sweep after a "command" that wrote ignored
// code where the discovery had nothing to cover (new files, a new
// directory of dependencies, .pyc files) and checks what is taken out,
// what goes to the session's layer, and what stays: what was there before
// the command started, ignored outputs, and files git shows.
func TestSweepIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home := t.TempDir()
	jh := filepath.Join(t.TempDir(), "joule")
	ws := filepath.Join(t.TempDir(), "ws")
	writeT(t, filepath.Join(ws, ".gitignore"), "node_modules/\n__pycache__/\nlocal.mk\n.envrc.local\ndist/\n.idea/\n.vscode/\n*.cfg\nscripts/local/\nbuild/\n*.log\n")
	writeT(t, filepath.Join(ws, ".vscode/tasks.json"), "{}")
	writeT(t, filepath.Join(ws, "src/__pycache__/old.pyc"), "old")
	writeT(t, filepath.Join(ws, "dist/old.js"), "old")
	gitT(t, ws, "init", "-q")
	slot := filepath.Join(jh, LayersDir, "s")
	if err := os.MkdirAll(slot, 0o700); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // past ctimeSlack: what is above is the person's
	spec := Spec{Layers: []Layer{{Write: []string{ws}}}, LayerDir: filepath.Join(jh, LayersDir, "s"),
		persist: persistIn{home: home, getenv: func(string) string { return "" }, grant: []string{ws}}}
	spec.started, spec.slot = time.Now(), slot
	// The .gitignore files the discovery found (what guards would note).
	spec.ignoreFiles = map[string]bool{ws + "/.gitignore": true}
	// The command.
	for p, c := range map[string]string{
		"local.mk":                         "hello:\n\ttouch /x\n",
		".envrc.local":                     "touch /x\n",
		"src/__pycache__/m.pyc":            "evil",
		"deep/a/b/c/d/e/__pycache__/n.pyc": "evil",
		"node_modules/.bin/tool":           "#!/bin/sh\n",
		".idea/workspace.xml":              "<project/>",
		"dist/new.js":                      "built",
		"src/new.mk":                       "shown in git status",
		// No name rule knows these: a new ignored file and directory.
		"conf/site.cfg":        "evil",
		"scripts/local/run.sh": "evil",
		"build/out.bin":        "built", // an output: stays
		// Code by its name, hidden by a .gitignore of the command's own
		// that shows in git status: taken out all the same.
		"sub/.gitignore": ".npmrc\n",
		"sub/.npmrc":     "evil",
		"conf/run.log":   "log", // an output: stays
	} {
		writeT(t, filepath.Join(ws, p), c)
	}
	var msg strings.Builder
	spec.sweep(&msg)
	for _, gone := range []string{"local.mk", ".envrc.local", "src/__pycache__/m.pyc", "deep/a/b/c/d/e/__pycache__/n.pyc", ".idea", "node_modules/.bin", ".vscode/sub/launch.json",
		"conf/site.cfg", "scripts/local/run.sh", "sub/.npmrc"} {
		if _, err := os.Lstat(filepath.Join(ws, gone)); err == nil {
			t.Errorf("%s is still in the workspace", gone)
		}
	}
	for _, kept := range []string{"src/__pycache__/old.pyc", "dist/old.js", "dist/new.js", "src/new.mk", ".gitignore", ".vscode/tasks.json", "build/out.bin", "conf/run.log"} {
		if _, err := os.Lstat(filepath.Join(ws, kept)); err != nil {
			t.Errorf("%s was taken: %v", kept, err)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(ws, "node_modules")); err != nil || len(ents) != 0 {
		t.Errorf("node_modules is not left empty: %v %v", ents, err)
	}
	upper := filepath.Join(layerBase(slot, filepath.Join(ws, "node_modules")), "upper")
	if _, err := os.Lstat(filepath.Join(upper, ".bin/tool")); err != nil {
		t.Errorf("the new node_modules is not in the session's layer: %v", err)
	}
	upper = filepath.Join(layerBase(slot, filepath.Join(ws, "scripts/local")), "upper")
	if _, err := os.Lstat(filepath.Join(upper, "run.sh")); err != nil {
		t.Errorf("the new scripts/local is not in the session's layer: %v", err)
	}
	out := msg.String()
	for _, want := range []string{"moved to its private layer", "local.mk", ".envrc.local", "m.pyc", ".idea", "kept in " + filepath.Join(jh, LayersDir, QuarantineDir), "site.cfg", "scripts/local"} {
		if !strings.Contains(out, want) {
			t.Errorf("the message does not say %q:\n%s", want, out)
		}
	}
	// A second sweep takes nothing more.
	spec.started = time.Now().Add(time.Hour)
	msg.Reset()
	spec.sweep(&msg)
	if msg.Len() != 0 {
		t.Errorf("a second sweep says:\n%s", msg.String())
	}
}

// BenchmarkIgnoredWalk times the discovery of one command start with the
// walk for ignored paths at every depth (deep), with the walk bounded as
// it was before (shallow: two levels, 128 listings) and without it
// (none, benchNoIgnored), alternating in one loop, over two workspaces:
// the repository the test runs in (its checkout) and a monorepo made for
// it (monorepo: 40 packages under packages/@scope/, each with src/,
// test/ and lib/ trees four levels deep and an ignored node_modules, .venv
// and scripts/local/, about 800 directories to list). It reports the
// median CPU time of each (of the thread, CLOCK_THREAD_CPUTIME_ID: on a
// loaded machine the wall time is mostly waiting for a CPU) and the ratios
// deep/shallow and deep/none per workspace, and the directories the deep
// walk listed.
func BenchmarkIgnoredWalk(b *testing.B) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		b.Skip("not in a git checkout")
	}
	checkout, _ := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	mono := filepath.Join(b.TempDir(), "mono")
	writeB := func(p string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x\n"), 0o644)
	}
	writeB(filepath.Join(mono, ".gitignore"))
	os.WriteFile(filepath.Join(mono, ".gitignore"), []byte("node_modules/\n.venv/\nscripts/local/\ndist/\n*.log\n"), 0o644)
	for i := 0; i < 40; i++ {
		pkg := filepath.Join(mono, "packages", "@scope", "p"+itoa(i))
		writeB(filepath.Join(pkg, "package.json"))
		for _, d := range []string{"src", "test", "lib"} {
			for j := 0; j < 5; j++ {
				writeB(filepath.Join(pkg, d, "m"+itoa(j), "a", "b", "index.js"))
			}
		}
		writeB(filepath.Join(pkg, "node_modules", "dep", "index.js"))
		writeB(filepath.Join(pkg, ".venv", "pyvenv.cfg"))
		writeB(filepath.Join(pkg, "scripts", "local", "run.sh"))
		writeB(filepath.Join(pkg, "dist", "bundle.js"))
	}
	if out, err := exec.Command("git", "-C", mono, "init", "-q").CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	home := b.TempDir()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() { benchNoIgnored, benchShallowIgnored = false, false }()
	cpu := func() time.Duration {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
		return time.Duration(ts.Nano())
	}
	type mode struct{ none, shallow bool }
	modes := []mode{{false, false}, {false, true}, {true, false}}
	times := map[string][][]time.Duration{}
	for _, ws := range []string{checkout, mono} {
		times[ws] = make([][]time.Duration, len(modes))
	}
	for i := 0; i < b.N; i++ {
		for _, ws := range []string{checkout, mono} {
			for k := range modes {
				m := modes[(k+i)%len(modes)]
				benchNoIgnored, benchShallowIgnored = m.none, m.shallow
				spec := Spec{Layers: []Layer{{Write: []string{ws}}}, persist: persistIn{home: home, getenv: os.Getenv, grant: []string{ws}}}
				t0 := cpu()
				spec.guards()
				d := cpu() - t0
				times[ws][(k+i)%len(modes)] = append(times[ws][(k+i)%len(modes)], d)
			}
		}
	}
	med := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	for _, w := range []struct{ name, ws string }{{"checkout", checkout}, {"monorepo", mono}} {
		deep, shallow, none := med(times[w.ws][0]), med(times[w.ws][1]), med(times[w.ws][2])
		b.ReportMetric(float64(deep.Microseconds()), "µs-"+w.name+"-deep-cpu")
		b.ReportMetric(float64(shallow.Microseconds()), "µs-"+w.name+"-shallow-cpu")
		b.ReportMetric(float64(none.Microseconds()), "µs-"+w.name+"-none-cpu")
		if shallow > 0 && none > 0 {
			b.ReportMetric(float64(deep)/float64(shallow), w.name+"-deep/shallow")
			b.ReportMetric(float64(deep)/float64(none), w.name+"-deep/none")
		}
	}
}
