//go:build linux

package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
	"golang.org/x/sys/unix"
)

// BenchmarkVsBwrap times `/bin/bash -c true` under joule-exec (the
// namespace construction: read-only root, writable workspace and temp,
// network off, PID namespace, the default limits, the toolchains' caches
// each an overlay with the session's layer: jexec; the same with the
// caches read-only, no layer: nolayer) and under bubblewrap
// doing the same confinement (--ro-bind / /, the workspace and temp dir
// bound writable, /dev, new user, PID and network namespaces,
// --die-with-parent), interleaved in one loop so that both see the same
// load. It reports the median wall and CPU time (user and system, of the
// runner and every process it started, the command included) of each, and their ratios
// jexec/bwrap; it asserts nothing about them (the machine's load decides
// the absolute numbers). Skipped where bwrap is not installed.
func BenchmarkVsBwrap(b *testing.B) {
	if !sandbox.NamespacesAvailable() {
		b.Skip("unprivileged user namespaces are off in this kernel")
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
	}
	bx := newBox(b, nil, false)
	jexec := bx.cmd("true").Args
	// The same policy without a private layer: the caches stay read-only
	// (no overlay), as bubblewrap's --ro-bind / / leaves them.
	p, err := sandbox.ReadPolicy(bx.policy)
	if err != nil {
		b.Fatal(err)
	}
	p.Layer = ""
	noLayer, err := p.Write(filepath.Dir(bx.policy))
	if err != nil {
		b.Fatal(err)
	}
	jexecNoLayer := slices.Clone(jexec)
	jexecNoLayer[2] = noLayer
	bw := []string{bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--bind", bx.ws, bx.ws, "--bind", bx.tmp, bx.tmp,
		"--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--", "/bin/bash", "-c", "true"}
	env := bx.cmd("true").Env
	// bwrap's first process exits as soon as its sandbox's init reports
	// the command's status, without waiting for the init: its own usage
	// leaves out the command's and the namespaces'. As a subreaper this
	// process inherits that init and reaps it, so the usage of everything
	// either runner started is counted (RUSAGE_CHILDREN, before and after).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	run := func(argv []string) (time.Duration, time.Duration) {
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir, c.Env = bx.ws, env
		before := cpu()
		start := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v: %s", argv[0], err, out)
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
	var jw, jc, nw, nc, bwW, bwC []time.Duration
	run(jexec)
	run(jexecNoLayer)
	run(bw)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, c := run(jexec)
		jw, jc = append(jw, w), append(jc, c)
		w, c = run(jexecNoLayer)
		nw, nc = append(nw, w), append(nc, c)
		w, c = run(bw)
		bwW, bwC = append(bwW, w), append(bwC, c)
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e6
	}
	b.ReportMetric(med(jw), "jexec-wall-ms")
	b.ReportMetric(med(jc), "jexec-cpu-ms")
	b.ReportMetric(med(bwW), "bwrap-wall-ms")
	b.ReportMetric(med(bwC), "bwrap-cpu-ms")
	b.ReportMetric(med(jw)/med(bwW), "wall-x-bwrap")
	b.ReportMetric(med(jc)/max(med(bwC), 0.001), "cpu-x-bwrap")
	b.ReportMetric(med(nw), "nolayer-wall-ms")
	b.ReportMetric(med(nc), "nolayer-cpu-ms")
	b.ReportMetric(med(nw)/med(bwW), "nolayer-wall-x-bwrap")
	b.ReportMetric(med(nc)/max(med(bwC), 0.001), "nolayer-cpu-x-bwrap")
}
