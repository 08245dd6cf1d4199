//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
	"golang.org/x/sys/unix"
)

// BenchmarkIgnoredCode times `/bin/bash -c true` under joule-exec in two
// workspaces that hold the same tree, interleaved in one loop: a git
// repository with a large node_modules (2 000 packages, 6 000 files), a
// .venv, 40 source directories each with a __pycache__, a .npmrc and a
// local.mk. In `ignored` its .gitignore ignores them, as a real project's
// does, so the command gets an overlay with the session's layer over
// node_modules and .venv, read-only binds over .npmrc and local.mk, and
// the sweep looks at the __pycache__ directories; in `plain` nothing is
// ignored (the same listing and sweep, none of the mounts), and
// `nogit` is a workspace with no repository at all. It reports the median
// wall and CPU time of each (of joule-exec and all it started) and the
// ratios ignored/plain and ignored/nogit: what covering the ignored code
// adds to a contained command.
func BenchmarkIgnoredCode(b *testing.B) {
	if !sandbox.NamespacesAvailable() {
		b.Skip("unprivileged user namespaces are off in this kernel")
	}
	fill := func(ws string, ignore bool) {
		for i := 0; i < 2000; i++ {
			d := filepath.Join(ws, "node_modules", fmt.Sprintf("pkg%04d", i))
			os.MkdirAll(filepath.Join(d, "lib"), 0o755)
			os.WriteFile(filepath.Join(d, "package.json"), []byte(`{"main":"lib/index.js"}`), 0o644)
			os.WriteFile(filepath.Join(d, "lib", "index.js"), []byte("module.exports = 1\n"), 0o644)
			os.WriteFile(filepath.Join(d, "README.md"), []byte("x\n"), 0o644)
		}
		os.MkdirAll(filepath.Join(ws, ".venv", "lib", "python3", "site-packages"), 0o755)
		os.WriteFile(filepath.Join(ws, ".venv", "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644)
		for i := 0; i < 40; i++ {
			d := filepath.Join(ws, "src", fmt.Sprintf("m%02d", i))
			os.MkdirAll(filepath.Join(d, "__pycache__"), 0o755)
			os.WriteFile(filepath.Join(d, "mod.py"), []byte("X = 1\n"), 0o644)
			os.WriteFile(filepath.Join(d, "__pycache__", "mod.cpython-311.pyc"), []byte("pyc"), 0o644)
		}
		os.WriteFile(filepath.Join(ws, ".npmrc"), []byte("fund=false\n"), 0o644)
		os.WriteFile(filepath.Join(ws, "local.mk"), []byte("X = 1\n"), 0o644)
		if ignore {
			os.WriteFile(filepath.Join(ws, ".gitignore"), []byte("node_modules/\n.venv/\n__pycache__/\n.npmrc\nlocal.mk\n"), 0o644)
		}
		c := exec.Command("git", "init", "-q")
		c.Dir = ws
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git init: %v: %s", err, out)
		}
	}
	ig, pl, ng := newBox(b, nil, false), newBox(b, nil, false), newBox(b, nil, false)
	fill(ig.ws, true)
	fill(pl.ws, false)
	// The namespace's init, which unmounts the overlays, exits after
	// joule-exec: as a subreaper this process reaps it, so that its usage
	// is counted (as in BenchmarkVsBwrap).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	run := func(bx *box) (time.Duration, time.Duration) {
		c := bx.cmd("true")
		before := cpu()
		start := time.Now()
		if out, err := c.CombinedOutput(); err != nil || len(out) > 0 {
			b.Fatalf("joule-exec: %v: %s", err, out)
		}
		wall := time.Since(start)
		for {
			var ws unix.WaitStatus
			if _, err := unix.Wait4(-1, &ws, unix.WALL, nil); err == unix.ECHILD {
				break
			}
		}
		return wall, cpu() - before
	}
	var iw, ic, pw, pc, nw, nc []time.Duration
	run(ig)
	run(pl)
	run(ng)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := []*box{ig, pl, ng}
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, bx := range order {
			w, c := run(bx)
			switch bx {
			case ig:
				iw, ic = append(iw, w), append(ic, c)
			case pl:
				pw, pc = append(pw, w), append(pc, c)
			default:
				nw, nc = append(nw, w), append(nc, c)
			}
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e6
	}
	b.ReportMetric(med(iw), "ignored-wall-ms")
	b.ReportMetric(med(ic), "ignored-cpu-ms")
	b.ReportMetric(med(pw), "plain-wall-ms")
	b.ReportMetric(med(pc), "plain-cpu-ms")
	b.ReportMetric(med(nw), "nogit-wall-ms")
	b.ReportMetric(med(nc), "nogit-cpu-ms")
	b.ReportMetric(med(iw)/med(pw), "wall-x-plain")
	b.ReportMetric(med(ic)/max(med(pc), 0.001), "cpu-x-plain")
	b.ReportMetric(med(iw)/med(nw), "wall-x-nogit")
	b.ReportMetric(med(ic)/max(med(nc), 0.001), "cpu-x-nogit")
}
