package gate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/sandbox"
)

// hookTables are cmd/joule's hook tables, whose lines seed
// FuzzContainedDecisions: the attacks and the ordinary work that runs
// through the line joule hook --contain rewrote.
var hookTables = []string{
	filepath.Join("..", "..", "cmd", "joule", "testdata", "hook-attacks.jsonl"),
	filepath.Join("..", "..", "cmd", "joule", "testdata", "hook-ordinary.jsonl"),
}

// FuzzContainedDecisions mutates the lines of the hook tables and checks,
// under grants from one with no Bash rule to a bare Bash, what must hold
// for any line:
//
//   - the decision is deterministic and never an internal error;
//   - containment only relaxes, and only what it says it leaves to the
//     kernel: a line allowed by analysis alone is allowed contained, and a
//     line allowed only contained is an allow whose paths the kernel bounds
//     (Verdict.Kernel) or a checkout of tracked hook configuration;
//   - the rewrite agrees with itself: the rewritten input, put to the gate
//     again (as a host that shows it again does), is unwrapped to exactly
//     the line that was judged, judged the same, and rewritten to the same
//     input;
//   - what the analysis allows contained, run for real through that
//     rewritten line (joule-exec and the decision's policy), creates no
//     file at $MARK (outside every writable tree), leaves
//     .claude/settings.json as it was and prints no secret of ~/.ssh or
//     $JOULE_HOME. This runs for every input while fuzzing, for a few seeds
//     otherwise, and not with -short.
func FuzzContainedDecisions(f *testing.F) {
	for _, file := range hookTables {
		readJSONL(f, file, func(c map[string]any, _ int) {
			if cmd, ok := c["cmd"].(string); ok {
				f.Add(cmd)
			}
		})
	}
	s := newSandbox(f)
	// A secret only the kernel keeps from the line: ~/.ssh and $JOULE_HOME
	// are unreadable inside (the workspace's .env holds the arena's own).
	secret := "fuzz-kernel-secret-" + s.secret[len(s.secret)-16:]
	for _, p := range []string{filepath.Join(s.home, ".ssh", "id_ed25519"), filepath.Join(s.jh, "extra.key")} {
		if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	settings, err := os.ReadFile(s.settings)
	if err != nil {
		f.Fatal(err)
	}
	grants := map[string][]string{
		"none": {"Read"}, "dev": grant.Templates["dev"].Allow, "bash": {"Read", "Write", "Bash"},
	}
	type pair struct{ plain, contained *Policy }
	var policies []pair
	for _, name := range []string{"none", "dev", "bash"} {
		p := fuzzPolicy(f, s, grants[name])
		c := *p
		c.Contained = true
		policies = append(policies, pair{p, &c})
	}
	kernel := !testing.Short() && sandbox.ABI() > 0
	runner := ""
	if kernel {
		runner = buildJouleExec(f)
	}
	c := &Containment{Exe: "/opt/joule/joule", ABI: max(sandbox.ABI(), 1), Runner: runner, PolicyDir: filepath.Join(s.jh, "policy")}
	if runner == "" {
		c.Runner, c.PolicyDir = "", ""
	}
	fuzzing := flag.Lookup("test.fuzz") != nil && flag.Lookup("test.fuzz").Value.String() != ""
	var mu sync.Mutex
	seedRuns := 0
	event := func(line string) *Event {
		in, _ := json.Marshal(map[string]string{"command": line})
		return &Event{SessionID: "fuzz", Tool: "Bash", Input: in, Cwd: s.ws}
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 4096 {
			return
		}
		ev := event(line)
		for _, p := range policies {
			plain, again := Decide(ev, p.plain), Decide(ev, p.plain)
			if plain != again {
				t.Fatalf("%q: two decisions differ: %+v and %+v", line, plain, again)
			}
			con := Decide(ev, p.contained)
			if plain.Code == CodeInternal || con.Code == CodeInternal {
				t.Fatalf("internal error on %q: %s / %s", line, plain.Reason, con.Reason)
			}
			if plain.Decision == Allow && con.Decision != Allow {
				t.Fatalf("%q: allowed by analysis alone (%s), but %s %s contained (%s)", line, plain.Reason, con.Decision, con.Code, con.Reason)
			}
			if con.Decision == Allow && plain.Decision != Allow && !con.Kernel && !strings.Contains(plain.Reason, "rewrites tracked files") {
				t.Fatalf("%q: allowed only contained (%s), but nothing is left to the kernel; alone: %s %s (%s)", line, con.Reason, plain.Decision, plain.Code, plain.Reason)
			}
			if con.Decision != Allow {
				continue
			}
			rv, in := c.rewrite(ev, con, p.contained)
			if rv.Decision != Rewrite || in == nil {
				t.Fatalf("%q: allowed contained, but not rewritten: %+v", line, rv)
			}
			shown := &Event{SessionID: ev.SessionID, Tool: "Bash", Input: in, Cwd: ev.Cwd}
			inner := c.unwrap(shown)
			m, _ := inner.inputFields()
			got, _ := stringField(m, "command", true)
			if got != line {
				t.Fatalf("the rewritten line unwraps to %q, not to the line judged, %q", got, line)
			}
			if v := Decide(inner, p.contained); v != con {
				t.Fatalf("%q: judged again after the rewrite: %+v, first %+v", line, v, con)
			}
			if _, in2 := c.rewrite(inner, con, p.contained); !bytes.Equal(in, in2) {
				t.Fatalf("%q: rewritten twice differently:\n  %s\n  %s", line, in, in2)
			}
			if !kernel || p.plain != policies[len(policies)-1].plain || len(line) > 600 || slowWords.MatchString(line) || slowPrograms.MatchString(line) ||
				!strings.Contains(line, "MARK") && !strings.Contains(line, ".claude") && !strings.Contains(line, "/.ssh") && !strings.Contains(line, "JOULE_HOME") {
				continue
			}
			if !fuzzing {
				mu.Lock()
				seedRuns++
				n := seedRuns
				mu.Unlock()
				if n > 40 {
					continue
				}
			}
			var cmd struct {
				Command string `json:"command"`
			}
			json.Unmarshal(in, &cmd)
			os.Remove(s.mark)
			began := time.Now()
			out := runContained(s, cmd.Command)
			if d := time.Since(began); d > time.Second && os.Getenv("JOULE_FUZZ_TRACE") != "" {
				t.Logf("%s for %q", d, line)
			}
			now, err := os.ReadFile(s.settings)
			if err != nil || !bytes.Equal(now, settings) {
				os.MkdirAll(filepath.Dir(s.settings), 0o755)
				os.WriteFile(s.settings, settings, 0o600)
				t.Fatalf("allowed contained, and .claude/settings.json changed (%v) when it ran through %s\n%s", err, cmd.Command, out)
			}
			if _, err := os.Lstat(s.mark); err == nil {
				t.Fatalf("allowed contained, and it created $MARK outside every writable tree when it ran through %s\n%s", cmd.Command, out)
			}
			if bytes.Contains(out, []byte(secret)) {
				t.Fatalf("allowed contained, and it printed a secret of ~/.ssh or $JOULE_HOME when it ran through %s\n%s", cmd.Command, out)
			}
		}
	})
}

// slowPrograms take seconds to start or build here (python3 may be a
// version manager's shim): the hook tables run them through the kernel.
var slowPrograms = regexp.MustCompile(`\b(python3?|go|gofmt|npm|npx|node|make|cargo|pip3?)\b`)

// fuzzPolicy is the arena's policy for a grant allowing allow.
func fuzzPolicy(t testing.TB, s *arena, allow []string) *Policy {
	t.Helper()
	g := &grant.Grant{Subject: grant.AnySubject, Roots: []string{s.ws}, Allow: allow, BudgetUJ: 1 << 40}
	now := time.Now()
	g.NotBefore, g.NotAfter = now.Add(-time.Hour).Unix(), now.Add(24*time.Hour).Unix()
	seed := core.Sum([]byte("fuzz contained issuer"))
	is, err := grant.NewIssuer("fuzz-contained", ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := is.Sign(g)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(grant.Chain{signed}, s.home, ProtectedPaths(s.jh, s.home, []string{s.ws}, testHosts), DefaultCosts, now)
	if err != nil {
		t.Fatal(err)
	}
	p.Private = []string{s.jh}
	return p
}

// buildJouleExec builds cmd/joule-exec once for the fuzz target.
func buildJouleExec(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "joule-exec")
	build := exec.Command("go", "build", "-o", out, "../../cmd/joule-exec")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build joule-exec: %v\n%s", err, b)
	}
	return out
}

// runContained runs the rewritten line with bash -c, as a host runs it, in
// the workspace with the arena's environment but a temp dir of its own
// (the arena's holds $MARK), killed after five seconds.
func runContained(s *arena, line string) []byte {
	tmp := filepath.Join(s.root, "tmp")
	os.MkdirAll(tmp, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = s.ws
	for _, kv := range s.env() {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, _ := cmd.CombinedOutput()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return out
}
