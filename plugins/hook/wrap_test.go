package hook

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGuardLines pins the lines each guard writes (Codex's trust hash and
// Gemini's armed check cover them byte for byte) and reads the recorded
// JOULE_HOME back, for homes that need quoting.
func TestGuardLines(t *testing.T) {
	exit2 := Guard{Exit2: true}
	pass := Guard{Pass: `'{'*'}'`, Deny: `{"no":"%s"}`}
	for _, tt := range []struct {
		name, home string
		g          Guard
		want       string
	}{
		{"bare default", "", Guard{}, `/b/joule-hook h`},
		{"bare custom", "/j", Guard{}, `/usr/bin/env JOULE_HOME=/j /b/joule-hook h`},
		{"quoted", "/a b/it's", Guard{}, `/usr/bin/env JOULE_HOME="/a b/it's" /b/joule-hook h`},
		{"exit2", "", exit2, `/bin/sh -c '"$0" "$@" || { s=$?; [ $s -eq 2 ] || echo "joule deny (hook-failed): $0 exited with status $s before deciding; the call is blocked (reinstall with: joule install h)" >&2; exit 2; }' /b/joule-hook h`},
		{"exit2 custom", "/j k", exit2, `/usr/bin/env JOULE_HOME='/j k' /bin/sh -c '"$0" "$@" || { s=$?; [ $s -eq 2 ] || echo "joule deny (hook-failed): $0 exited with status $s before deciding; the call is blocked (reinstall with: joule install h)" >&2; exit 2; }' /b/joule-hook h`},
		{"pass", "/j", pass, `out=$(/usr/bin/env JOULE_HOME=/j /b/joule-hook h); st=$?; case $out in '{'*'}') printf '%s\n' "$out" ;; *) printf '{"no":"%s"}\n' "$st" ;; esac`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := Scope{JouleHome: tt.home}
			got := tt.g.Line(s, "h", "/b/joule-hook h")
			if got != tt.want {
				t.Fatalf("line\n%s\nwant\n%s", got, tt.want)
			}
			if h := RecordedHome(got); h != tt.home {
				t.Fatalf("RecordedHome = %q, want %q", h, tt.home)
			}
			if !tt.g.Guarded("h", got) || tt.g.Pass == "" && !IsJouleLine(got, "h") {
				t.Fatalf("the guard does not recognise its own line")
			}
			if f := HomeFinding(s, got); !f.OK {
				t.Fatalf("HomeFinding: %+v", f)
			}
			if f := HomeFinding(Scope{JouleHome: "/elsewhere"}, got); f.OK {
				t.Fatalf("HomeFinding accepts another home: %+v", f)
			}
		})
	}
	if (Guard{Exit2: true}).Guarded("h", "/b/joule-hook h") || pass.Guarded("h", "/b/joule-hook h") {
		t.Fatal("a bare line passes for a guarded one")
	}
}

// TestGuardRuns runs each guard's line and script in a shell around a
// joule that fails in each way, and one that answers with the JOULE_HOME
// it was given.
func TestGuardRuns(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "it's home")
	fake := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		return ShellQuote(p) + " h"
	}
	answers := fake("answers", `cat >/dev/null; echo "{\"home\":\"$JOULE_HOME\"}"`)
	failing := map[string]string{
		"missing": ShellQuote(filepath.Join(dir, "nonexistent")) + " h",
		"crash":   fake("crash", `cat >/dev/null; kill -SEGV $$`),
		"exit1":   fake("exit1", `exit 1`),
		"empty":   fake("empty", `exit 0`),
		"garbage": fake("garbage", `echo nope`),
	}
	run := func(t *testing.T, line string) (string, int) {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "JOULE_HOME=/somewhere/else"}
		cmd.Stdin = strings.NewReader("{}")
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	s := Scope{JouleHome: home}
	// The line parses in whichever shell the host starts (Codex: $SHELL).
	for _, sh := range []string{"sh", "bash", "zsh", "fish", "csh", "tcsh"} {
		bin, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		cmd := exec.Command(bin, "-c", Guard{Exit2: true}.Line(s, "h", answers))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		cmd.Stdin = strings.NewReader("{}")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `{"home":"`+home+`"}`) {
			t.Errorf("%s -c LINE: %v %q", sh, err, out)
		}
	}
	pass := Guard{Pass: `'{'*'}'`, Deny: `{"deny":"%s"}`, Limit: "5"}
	for _, form := range []string{"line", "script"} {
		text := func(g Guard, cmd string) string {
			if form == "line" {
				return g.Line(s, "h", cmd)
			}
			p := filepath.Join(dir, "script-"+strings.Fields(filepath.Base(cmd))[0])
			os.WriteFile(p, g.Script(s, "h", cmd, "test"), 0o755)
			return ShellQuote(p)
		}
		t.Run(form, func(t *testing.T) {
			for _, g := range []Guard{{}, {Exit2: true}, pass} {
				if out, code := run(t, text(g, answers)); code != 0 || !strings.Contains(out, `{"home":"`+home+`"}`) {
					t.Errorf("%+v: the answer (%d) %q does not come from the recorded home", g, code, out)
				}
			}
			for name, cmd := range failing {
				if out, code := run(t, text(Guard{Exit2: true}, cmd)); (name == "empty" || name == "garbage") != (code == 0) ||
					code != 0 && (code != 2 || !strings.Contains(out, "joule deny (hook-failed)")) {
					t.Errorf("exit2, %s: %d %q", name, code, out)
				}
				if out, code := run(t, text(pass, cmd)); code != 0 || !strings.Contains(out, `{"deny":"`) {
					t.Errorf("pass, %s: %d %q", name, code, out)
				}
			}
		})
	}
}

// TestGuardHung runs a joule that never answers under each guard with a
// Limit: the host must get its deny (exit 2 with a reason, or the deny on
// stdout), well before its own timeout, never an allow.
func TestGuardHung(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no timeout(1) here: the guard cannot bound joule")
	}
	dir := t.TempDir()
	hung := filepath.Join(dir, "hung")
	os.WriteFile(hung, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755)
	for _, tt := range []struct {
		name string
		g    Guard
		ok   func(out string, code int) bool
	}{
		{"exit2", Guard{Exit2: true, Limit: "1"}, func(out string, code int) bool {
			return code == 2 && strings.Contains(out, "joule deny (hook-failed)")
		}},
		{"pass", Guard{Pass: `'{'*'}'`, Deny: `{"deny":"%s"}`, Limit: "1"}, func(out string, code int) bool {
			return code == 0 && strings.Contains(out, `{"deny":"`)
		}},
	} {
		for _, form := range []string{"line", "script"} {
			t.Run(tt.name+" "+form, func(t *testing.T) {
				line := tt.g.Line(Scope{}, "h", ShellQuote(hung)+" h")
				if form == "script" {
					p := filepath.Join(dir, tt.name+".sh")
					os.WriteFile(p, tt.g.Script(Scope{}, "h", ShellQuote(hung)+" h", "test"), 0o755)
					line = ShellQuote(p)
				}
				start := time.Now()
				cmd := exec.Command("/bin/sh", "-c", line)
				cmd.Stdin = strings.NewReader("{}")
				out, _ := cmd.CombinedOutput()
				if !tt.ok(string(out), cmd.ProcessState.ExitCode()) {
					t.Errorf("a hung joule gave (%d) %q, not the host's deny", cmd.ProcessState.ExitCode(), out)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("the guard took %v to give up on a hung joule", d)
				}
			})
		}
	}
}
