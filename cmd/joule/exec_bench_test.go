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
	"golang.org/x/sys/unix"
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

// goTestModules are modules of the Go module cache without dependencies,
// the first one found is the workload of BenchmarkGoTestWarm.
var goTestModules = []string{"github.com/google/uuid@v1.6.0", "github.com/dustin/go-humanize@v1.1.0", "github.com/dustin/go-humanize@v1.0.1", "github.com/google/go-cmp@v0.7.0"}

// BenchmarkGoTestWarm times a warm `go test ./...` of a real module (one
// of goTestModules, copied from the Go module cache into a workspace that
// is a git repository) run directly and under the line joule hook
// --contain writes, interleaved in one loop so that both see the same
// load: the real Go caches, which the contained run reads through the
// session's private layer. Two forms: `go test ./...` (the results come
// from the test cache) and `go test -count=1 ./...` (the packages come
// from the build cache, the tests run). It reports the median wall and CPU
// time of each and the ratios contained/direct; it asserts nothing.
func BenchmarkGoTestWarm(b *testing.B) {
	if sandboxABI() == 0 {
		b.Skip("no Landlock here")
	}
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		b.Fatal(err)
	}
	caches := strings.Fields(string(out))
	src := ""
	for _, m := range goTestModules {
		if _, err := os.Stat(filepath.Join(caches[0], m, "go.mod")); err == nil {
			src = filepath.Join(caches[0], m)
			break
		}
	}
	if src == "" {
		b.Skipf("none of %v is in the module cache", goTestModules)
	}
	env, ws := initHome(b)
	env = append(env, "TMPDIR="+b.TempDir(), "GOCACHE="+caches[1], "GOMODCACHE="+caches[0], "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY=off", "GOTELEMETRY=off", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	mod := filepath.Join(ws, "src", "mod")
	if err := os.CopyFS(mod, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	filepath.WalkDir(mod, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			os.Chmod(p, map[bool]os.FileMode{true: 0o755, false: 0o644}[d.IsDir()])
		}
		return nil
	})
	git := exec.Command("sh", "-c", "git init -q && git add -A && git commit -qm mod")
	git.Dir, git.Env = ws, append(os.Environ(), env...)
	if out, err := git.CombinedOutput(); err != nil {
		b.Fatalf("git: %v\n%s", err, out)
	}
	// joule-exec returns when the command's init has reaped every process
	// of it, without waiting for the init itself: as a subreaper this
	// process inherits and reaps it, so that the CPU time of everything
	// either run started is counted (RUSAGE_CHILDREN, before and after).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	run := func(line string) (float64, float64) {
		cmd := exec.Command("/bin/bash", "-c", line)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), env...)
		before := cpu()
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", line, err, out)
		}
		wall := time.Since(start)
		for {
			var ws unix.WaitStatus
			if _, err := unix.Wait4(-1, &ws, unix.WALL, nil); err == unix.ECHILD {
				break
			}
		}
		return float64(wall.Microseconds()) / 1e3, float64((cpu() - before).Microseconds()) / 1e3
	}
	median := func(x []float64) float64 {
		y := slices.Clone(x)
		slices.Sort(y)
		return y[len(y)/2]
	}
	// Each form runs directly, contained (the namespace construction, the
	// caches through the session's layer) and contained with Landlock
	// alone (the caches written in place, no mount at all): the
	// difference between the last two is what the mounts and the layer
	// cost.
	forms := []struct{ name, line string }{{"cached", "go test ./..."}, {"count1", "go test -count=1 ./..."}}
	variants := []string{"direct", "contained", "landlock"}
	type series struct{ w, c [][]float64 }
	results := make([]series, len(forms))
	lines := make([][]string, len(forms))
	for i, f := range forms {
		prefix := containPrefix(b, env, ws, f.line)
		if !strings.Contains(prefix, "joule-exec") {
			b.Fatalf("%q was not rewritten to joule-exec: %q", f.line, prefix)
		}
		contained := prefix + " -- /bin/bash -c '" + f.line + "'"
		lines[i] = []string{f.line, contained, sandbox.LandlockOnlyEnv + "=1 " + contained}
		results[i] = series{make([][]float64, len(variants)), make([][]float64, len(variants))}
		for _, l := range lines[i] {
			run(l) // warm: the real caches, then the session's layer
		}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := range forms {
			// The order alternates, so that no variant always follows
			// the same one (what a run leaves, page cache or a namespace
			// still being torn down, falls on the next).
			for k := range lines[i] {
				v := k
				if n%2 == 1 {
					v = len(lines[i]) - 1 - k
				}
				w, c := run(lines[i][v])
				results[i].w[v], results[i].c[v] = append(results[i].w[v], w), append(results[i].c[v], c)
			}
		}
	}
	b.StopTimer()
	for i, f := range forms {
		r := results[i]
		for v, name := range variants {
			b.ReportMetric(median(r.w[v]), f.name+"-"+name+"-ms")
			if v > 0 {
				b.ReportMetric(median(r.w[v])/median(r.w[0]), f.name+"-"+name+"-x-direct")
				b.ReportMetric(median(r.c[v])/median(r.c[0]), f.name+"-"+name+"-cpu-x-direct")
			}
		}
	}
}
