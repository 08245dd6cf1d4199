package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// BenchmarkExec times a contained `/bin/sh -c true` beside `/bin/sh -c
// true` run directly, interleaved in the same loop so that all see the
// same load. added-ms is what containment adds to a command's start (the
// target is 3 ms), x-direct the ratio; each is the median over the
// iterations (load varies from one to the next), of the wall time and of
// the CPU time:
//
//   - jexec: joule-exec with the policy joule hook --contain wrote for the
//     dev template, as hosts run it;
//   - jexec-net: the same with --net (no seccomp filter, no TCP rules);
//   - jexec-landlock: jexec with Landlock alone (JOULE_EXEC_LANDLOCK_ONLY=1),
//     the construction used where user namespaces are off;
//   - jexec-heavy: a rule-heavy policy (the dev template plus 200 Read and
//     Write deny rules, half of them globs expanded over a 2 000-file tree);
//   - joule-exec-cmd: `joule exec`, the full command people type, which
//     opens the store and verifies the grant chain first;
//   - go-floor: the smallest static Go program that execs its arguments,
//     in joule-exec's place: what starting any Go launcher costs here;
//   - sh-floor: /bin/sh -c 'exec /bin/sh -c true', a C launcher.
//
// For each joule-exec form, over-floor is its time minus go-floor's in
// the same iteration (median): what joule-exec itself adds above starting
// a Go program, the part its own code can still cut. With SRT set to the
// path of Anthropic's sandbox-runtime CLI (srt), it is timed the same way.
func BenchmarkExec(b *testing.B) {
	if sandboxABI() == 0 {
		b.Skip("no Landlock here")
	}
	env, ws := initHome(b)
	env = append(env, "TMPDIR="+b.TempDir())
	prefix := containPrefix(b, env, ws, "ls")
	netPrefix := containPrefix(b, env, ws, "curl http://127.0.0.1:1/x")
	if !strings.Contains(netPrefix, "--net") {
		netPrefix = prefix + " --net"
	}
	heavy := heavyPolicy(b, prefix, ws)
	goFloor := buildGoFloor(b)
	// run returns the wall time and the CPU time (user and system, of the
	// process and whatever it exec'd): on a shared machine the wall time is
	// mostly waiting for a core, the CPU time what the command itself cost.
	run := func(argv ...string) (time.Duration, time.Duration) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), env...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	line := func(prefix string) []string {
		return []string{"/bin/bash", "-c", prefix + " -- /bin/sh -c true"}
	}
	// bash -c 'PREFIX -- /bin/sh -c true' execs its last command, so the
	// baseline for the three joule-exec forms is bash -c '/bin/sh -c true'.
	srt := os.Getenv("SRT")
	names := []string{"direct", "jexec", "jexec-net", "jexec-landlock", "jexec-heavy", "joule-exec-cmd", "go-floor", "sh-floor"}
	argvs := [][]string{
		{"/bin/bash", "-c", "/bin/sh -c true"},
		line(prefix), line(netPrefix), line(sandbox.LandlockOnlyEnv + "=1 " + prefix), line(heavy),
		{jouleBin, "exec", "--", "/bin/sh", "-c", "true"},
		{"/bin/bash", "-c", goFloor + " /bin/sh -c true"},
		{"/bin/bash", "-c", "/bin/sh -c 'exec /bin/sh -c true'"},
	}
	const floor = 6 // go-floor's index; the joule-exec forms are 1 to 4
	if srt != "" {
		names = append(names, "srt")
		argvs = append(argvs, []string{srt, "-c", "/bin/sh -c true"})
	}
	wall := make([][]float64, len(argvs))
	cpu := make([][]float64, len(argvs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, argv := range argvs {
			w, c := run(argv...)
			wall[j] = append(wall[j], float64(w.Nanoseconds())/1e6)
			cpu[j] = append(cpu[j], float64(c.Nanoseconds())/1e6)
		}
	}
	b.StopTimer()
	// The added time of iteration i is against the direct run of the same
	// iteration; the figures are medians of those.
	median := func(x []float64) float64 {
		y := slices.Clone(x)
		slices.Sort(y)
		if n := len(y); n%2 == 0 {
			return (y[n/2-1] + y[n/2]) / 2
		}
		return y[len(y)/2]
	}
	diff := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] - b[i]
		}
		return out
	}
	b.ReportMetric(median(wall[0]), "direct-ms/op")
	b.ReportMetric(median(cpu[0]), "direct-cpu-ms/op")
	for j, name := range names[1:] {
		b.ReportMetric(median(wall[j+1]), name+"-ms/op")
		b.ReportMetric(median(diff(wall[j+1], wall[0])), name+"-added-ms/op")
		b.ReportMetric(median(wall[j+1])/median(wall[0]), name+"-x-direct")
		b.ReportMetric(median(diff(cpu[j+1], cpu[0])), name+"-added-cpu-ms/op")
		b.ReportMetric(median(cpu[j+1])/median(cpu[0]), name+"-cpu-x-direct")
	}
	for j := 1; j <= 4; j++ {
		b.ReportMetric(median(diff(wall[j], wall[floor])), names[j]+"-over-floor-ms/op")
		b.ReportMetric(median(diff(cpu[j], cpu[floor])), names[j]+"-over-floor-cpu-ms/op")
	}
}

// goFloorSrc is the smallest Go launcher: it execs its arguments.
const goFloorSrc = `package main

import (
	"os"
	"syscall"
)

func main() {
	err := syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	os.Stderr.WriteString(err.Error() + "\n")
	os.Exit(126)
}
`

// buildGoFloor builds goFloorSrc as joule-exec is built (static,
// trimmed) and returns its path.
func buildGoFloor(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	src := filepath.Join(dir, "gofloor.go")
	if err := os.WriteFile(src, []byte(goFloorSrc), 0o644); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "gofloor")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building the Go floor: %v\n%s", err, out)
	}
	return bin
}

// containPrefix asks joule hook --contain to rewrite line and returns the
// rewritten line up to " -- /bin/bash -c ".
func containPrefix(tb testing.TB, env []string, ws, line string) string {
	tb.Helper()
	payload, _ := json.Marshal(map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]string{"command": line}, "cwd": ws})
	cmd := exec.Command(jouleBin, "hook", "claude-code", "--contain")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(string(payload))
	out, err := cmd.Output()
	var a struct {
		HookSpecificOutput struct {
			PermissionDecision string            `json:"permissionDecision"`
			UpdatedInput       map[string]string `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if err != nil || json.Unmarshal(out, &a) != nil {
		tb.Fatalf("hook --contain %q: %v\n%s", line, err, out)
	}
	prefix, _, ok := strings.Cut(a.HookSpecificOutput.UpdatedInput["command"], " -- /bin/bash -c ")
	if !ok {
		return ""
	}
	return prefix
}

// heavyPolicy writes, beside the policy prefix names, one with 200 more
// deny rules (100 globs over a tree of 2 000 files in the workspace) and
// returns the joule-exec prefix that names it.
func heavyPolicy(tb testing.TB, prefix, ws string) string {
	tb.Helper()
	i := strings.Index(prefix, " --policy '")
	if i < 0 {
		tb.Fatalf("not a joule-exec rewrite: %s", prefix)
	}
	path := strings.Trim(prefix[i+len(" --policy "):], "'")
	p, err := sandbox.ReadPolicy(path)
	if err != nil {
		tb.Fatal(err)
	}
	for d := 0; d < 20; d++ {
		dir := filepath.Join(ws, "src", fmt.Sprintf("pkg%02d", d))
		os.MkdirAll(dir, 0o755)
		for f := 0; f < 100; f++ {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), nil, 0o644)
		}
	}
	l := &p.Links[len(p.Links)-1]
	for k := 0; k < 50; k++ {
		l.Deny = append(l.Deny, fmt.Sprintf("Read(src/pkg%02d/f%03d.go)", k%20, k), fmt.Sprintf("Read(src/**/secret%d*.pem)", k),
			fmt.Sprintf("Edit(src/pkg%02d/f%03d.go)", k%20, 99-k), fmt.Sprintf("Edit(src/**/gen%d_*.go)", k))
	}
	heavy, err := p.Write(filepath.Dir(path))
	if err != nil {
		tb.Fatal(err)
	}
	return prefix[:i] + " --policy '" + heavy + "'"
}

func sandboxABI() int { return sandbox.ABI() }
