package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// BenchmarkContainVsSRT runs the attack table and ordinary commands through
// joule-exec and through Anthropic's sandbox-runtime (srt, with Debian's
// bubblewrap, socat and ripgrep) in the same run, one after the other in
// the same slot, and prints the per-command cost of each and how many
// attacks each stopped. It needs SRT naming the srt CLI:
//
//	(cd bench/srt && npm ci)
//	SRT=$PWD/bench/srt/node_modules/.bin/srt go test ./cmd/joule -run '^$' -bench ContainVsSRT -benchtime 1x
//
// SRT_CASES (default 40; 0: only the ordinary commands) is how many cases of the table, spread evenly over
// it, are run: srt takes seconds per command. srt's settings are the
// grant's as far as srt can say them: writes only in the workspace, the
// temp dir and the toolchains' caches (what joule-exec opens too), the hook
// configuration not writable, $JOULE_HOME and ~/.ssh unreadable, no
// network.
func BenchmarkContainVsSRT(b *testing.B) {
	srt := os.Getenv("SRT")
	if srt == "" {
		b.Skip("set SRT to the path of the srt CLI to compare (see the comment)")
	}
	if sandbox.ABI() < 6 {
		b.Skip("no Landlock ABI 6 here")
	}
	cases := loadContainCases(b)
	want := 40
	if v, err := strconv.Atoi(os.Getenv("SRT_CASES")); err == nil && v >= 0 {
		want = v
	}
	var sample []containCase
	for i := 0; i < want && i*len(cases)/want < len(cases); i++ {
		sample = append(sample, cases[i*len(cases)/want])
	}
	s := newSlot(b)
	goCache, goMod := goEnv(b, "GOCACHE"), goEnv(b, "GOMODCACHE")
	settings := filepath.Join(b.TempDir(), "srt-settings.json")
	cfg := map[string]any{
		"filesystem": map[string]any{
			"denyRead":   []string{s.jh, filepath.Join(s.home, ".ssh")},
			"allowWrite": []string{s.ws, s.tmp, goCache, goMod},
			"denyWrite":  []string{s.settings, filepath.Join(s.ws, ".mcp.json")},
		},
		"network": map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
	}
	cb, _ := json.Marshal(cfg)
	os.WriteFile(settings, cb, 0o600)
	srtArgv := func(line string) []string { return []string{srt, "--settings", settings, "/bin/bash", "-c", line} }
	jexecArgv := func(grant, line string) []string {
		return []string{jouleExecBin(), "--policy", s.policy[grant], "--", "/bin/bash", "-c", line}
	}
	var attacks, byJoule, bySRT int
	var tJoule, tSRT time.Duration
	var throughSRT, throughJoule []string
	timed := func(argv []string) ([]byte, time.Duration) {
		start := time.Now()
		out := s.runFor(60*time.Second, argv...)
		return out, time.Since(start)
	}
	b.ResetTimer()
	for _, c := range sample {
		s.reset(b)
		s.setup(c)
		before, _ := os.ReadFile(s.settings)
		if out := s.run("bash", "-c", c.Cmd); !s.happened(c.Effect, out, before) {
			continue
		}
		attacks++
		s.reset(b)
		s.setup(c)
		before, _ = os.ReadFile(s.settings)
		out, d := timed(jexecArgv(c.Grant, c.Cmd))
		tJoule += d
		if s.happened(c.Effect, out, before) {
			throughJoule = append(throughJoule, c.Name)
		} else {
			byJoule++
		}
		s.reset(b)
		s.setup(c)
		before, _ = os.ReadFile(s.settings)
		out, d = timed(srtArgv(c.Cmd))
		tSRT += d
		if s.happened(c.Effect, out, before) {
			throughSRT = append(throughSRT, c.Name)
		} else {
			bySRT++
		}
	}
	b.StopTimer()
	fmt.Printf("attack table: %d cases sampled of %d, %d attacks unconfined here\n", len(sample), len(cases), attacks)
	fmt.Printf("  joule-exec: stopped %d, %.0f ms per command; through: %s\n", byJoule, ms(tJoule, attacks), strings.Join(throughJoule, " "))
	fmt.Printf("  srt:        stopped %d, %.0f ms per command; through: %s\n", bySRT, ms(tSRT, attacks), strings.Join(throughSRT, " "))
	b.ReportMetric(float64(attacks), "attacks")
	b.ReportMetric(float64(byJoule), "jexec-stopped")
	b.ReportMetric(float64(bySRT), "srt-stopped")
	b.ReportMetric(ms(tJoule, attacks), "jexec-ms/cmd")
	b.ReportMetric(ms(tSRT, attacks), "srt-ms/cmd")

	// Ordinary work, in the same slot: each line directly, under
	// joule-exec (dev template) and under srt, with the real Go caches.
	s.reset(b)
	os.WriteFile(filepath.Join(s.ws, "main_test.go"), []byte("package main\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n"), 0o600)
	os.WriteFile(filepath.Join(s.ws, "main.go"), []byte("package main\n\nfunc main() { println(1) }\n"), 0o600)
	// The caches are in the environment the sandbox starts from, as a
	// host's would be: joule-exec opens the GOCACHE it sees.
	s.extraEnv = []string{"GOCACHE=" + goCache, "GOMODCACHE=" + goMod, "GOTOOLCHAIN=local"}
	for _, w := range []struct{ name, line, want string }{
		{"go test", "go test -count=1 ./...", "ok"},
		{"git diff (whole tree)", "git diff HEAD --stat && echo diffed", "diffed"},
		{"temp dir", `f=$(mktemp) && echo t > "$f" && cat "$f" && rm "$f"`, "t"},
	} {
		line := w.line
		for _, r := range []struct {
			who  string
			argv []string
		}{{"direct", []string{"/bin/bash", "-c", line}}, {"joule-exec", jexecArgv("dev", line)}, {"srt", srtArgv(line)}} {
			out, d := timed(r.argv)
			ok := strings.Contains(string(out), w.want)
			fmt.Printf("  %-22s %-10s %6.0f ms  %s\n", w.name, r.who, ms(d, 1), map[bool]string{true: "works", false: "FAILS: " + lastLine(out)}[ok])
		}
	}
}

func ms(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000 / float64(n)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func goEnv(tb testing.TB, key string) string {
	tb.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
