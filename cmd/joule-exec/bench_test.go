//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/sandbox"
	"github.com/joulehook/joule/plugins/hosts"
	"golang.org/x/sys/unix"
)

// BenchmarkVsBwrap times `/bin/bash -c true` under joule-exec (the
// namespace construction: read-only root, writable workspace and temp,
// network off, PID namespace, the default limits: jexec, whose home has
// no toolchain cache, as bubblewrap's box; nolayer, its policy naming no
// private layer; caches, a home where ~/.cache, ~/go/pkg and ~/.npm exist,
// each then an overlay with the session's layer; hosts, a workspace with
// none of the hosts' project configuration the gate protects, each absent
// name at its root) and under bubblewrap
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
	// A home where the toolchains' caches exist (~/.cache, ~/go/pkg,
	// ~/.npm), as on a machine that has built anything: each is an overlay
	// with the session's layer, which bubblewrap has no counterpart of.
	cx := newBox(b, nil, false)
	for _, d := range []string{".cache", "go/pkg", ".npm"} {
		os.MkdirAll(filepath.Join(cx.home, d), 0o755)
	}
	withCaches := cx.cmd("true")
	// A fresh repository under the protected paths the gate writes into
	// its policies: every host's project configuration, none of it
	// present (as in most workspaces), each absent name at the root.
	hx := newBox(b, nil, false)
	os.Remove(filepath.Join(hx.ws, ".mcp.json"))
	os.Remove(filepath.Join(hx.ws, ".claude"))
	hp, err := sandbox.ReadPolicy(hx.policy)
	if err != nil {
		b.Fatal(err)
	}
	hp.Protected = gate.ProtectedPaths(filepath.Join(hx.base, "joule"), hx.home, []string{hx.ws}, hosts.Config(func(string) string { return "" }, hx.ws))
	if hx.policy, err = hp.Write(filepath.Dir(hx.policy)); err != nil {
		b.Fatal(err)
	}
	withHosts := hx.cmd("true")
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
		switch argv[2] {
		case cx.policy:
			c.Dir, c.Env = cx.ws, withCaches.Env
		case hx.policy:
			c.Dir, c.Env = hx.ws, withHosts.Env
		}
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
	var jw, jc, nw, nc, cw, cc, hw, hc, bwW, bwC []time.Duration
	run(jexec)
	run(jexecNoLayer)
	run(withCaches.Args)
	run(withHosts.Args)
	run(bw)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, c := run(jexec)
		jw, jc = append(jw, w), append(jc, c)
		w, c = run(jexecNoLayer)
		nw, nc = append(nw, w), append(nc, c)
		w, c = run(withCaches.Args)
		cw, cc = append(cw, w), append(cc, c)
		w, c = run(withHosts.Args)
		hw, hc = append(hw, w), append(hc, c)
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
	b.ReportMetric(med(cw), "caches-wall-ms")
	b.ReportMetric(med(cc), "caches-cpu-ms")
	b.ReportMetric(med(cw)/med(bwW), "caches-wall-x-bwrap")
	b.ReportMetric(med(cc)/max(med(bwC), 0.001), "caches-cpu-x-bwrap")
	b.ReportMetric(med(hw), "hosts-wall-ms")
	b.ReportMetric(med(hc), "hosts-cpu-ms")
	b.ReportMetric(med(hw)/med(bwW), "hosts-wall-x-bwrap")
	b.ReportMetric(med(hc)/max(med(bwC), 0.001), "hosts-cpu-x-bwrap")
}
