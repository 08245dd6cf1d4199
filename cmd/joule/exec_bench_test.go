package main

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// BenchmarkExec times `joule exec -- /bin/sh -c true` beside `/bin/sh -c
// true` run directly, interleaved in the same loop so that both see the
// same load: added-ms is what joule exec adds to a command's start (the
// target is 3 ms), x-direct the ratio; floor-ms is `joule version`, the
// start of the joule binary alone. With SRT set to the path of
// Anthropic's sandbox-runtime CLI (srt), it is timed the same way.
func BenchmarkExec(b *testing.B) {
	if sandboxABI() == 0 {
		b.Skip("no Landlock here")
	}
	env, ws := initHome(b)
	env = append(env, "TMPDIR="+b.TempDir())
	run := func(argv ...string) time.Duration {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), env...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return time.Since(start)
	}
	srt := os.Getenv("SRT")
	var direct, floor, contained, srtT time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		direct += run("/bin/sh", "-c", "true")
		floor += run(jouleBin, "version")
		contained += run(jouleBin, "exec", "--", "/bin/sh", "-c", "true")
		if srt != "" {
			srtT += run(srt, "-c", "/bin/sh -c true")
		}
	}
	b.StopTimer()
	n := float64(b.N)
	d, c := float64(direct.Nanoseconds())/n, float64(contained.Nanoseconds())/n
	b.ReportMetric(d/1e6, "direct-ms/op")
	b.ReportMetric(c/1e6, "exec-ms/op")
	b.ReportMetric((c-d)/1e6, "added-ms/op")
	b.ReportMetric(c/d, "x-direct")
	// The joule process's own start (every package's init), which joule
	// exec pays before it confines anything: what containment itself adds
	// is exec-ms less floor-ms.
	f := float64(floor.Nanoseconds()) / n
	b.ReportMetric(f/1e6, "floor-ms/op")
	b.ReportMetric((c-f)/1e6, "added-over-floor-ms/op")
	if srt != "" {
		s := float64(srtT.Nanoseconds()) / n
		b.ReportMetric(s/1e6, "srt-ms/op")
		b.ReportMetric(s/c, "srt-x-exec")
	}
}

func sandboxABI() int { return sandbox.ABI() }
