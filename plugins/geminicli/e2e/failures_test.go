package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/geminicli"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/hosttest"
)

// modes are the ways a hook can fail, each selected by the command the
// model runs (touch ran-MODE), and a deny and an allow as controls.
var modes = []string{"missing", "crash", "exit1-silent", "exit1-stderr", "exit2-silent", "exit2-stderr", "empty", "garbage", "hang", "deny", "allow"}

// modeHook fails as the payload's command says: "missing" is what bash -c
// does when the hook's binary is not there (exit 127, its message on
// stderr), "crash" a process killed by a signal (a segfault, the OOM
// killer), "hang" a hook that never answers.
const modeHook = `#!/bin/sh
in=$(cat)
case $in in
*ran-missing*) exec /nonexistent/joule-hook gemini-cli ;;
*ran-crash*) kill -SEGV $$ ;;
*ran-exit1-silent*) exit 1 ;;
*ran-exit1-stderr*) echo "joule failed" >&2; exit 1 ;;
*ran-exit2-silent*) exit 2 ;;
*ran-exit2-stderr*) echo "joule failed" >&2; exit 2 ;;
*ran-empty*) exit 0 ;;
*ran-garbage*) echo "this is not json"; exit 0 ;;
*ran-hang*) exec sleep 40 ;;
*ran-deny*) echo '{"decision":"deny","reason":"scripted deny"}' ;;
*ran-allow*) echo '{"decision":"allow"}' ;;
esac
`

func (f *fixture) playModes() {
	var calls []call
	for _, m := range modes {
		calls = append(calls, call{"run_shell_command", map[string]any{"command": "touch ran-" + m}})
	}
	f.api.play(calls...)
}

// ran runs the modes through the real CLI and says which commands ran.
func (f *fixture) ranModes(t *testing.T) map[string]bool {
	t.Helper()
	f.playModes()
	g := f.gemini(nil, "-p", "run them", "--approval-mode", "yolo")
	if g.code != 0 {
		t.Fatalf("gemini: %d\n%s\n%s", g.code, g.stdout, g.stderr)
	}
	if n := len(f.api.got()); n != len(modes) {
		t.Fatalf("%d tool responses, want %d\n%s", n, len(modes), g.stderr)
	}
	ran := map[string]bool{}
	for i, m := range modes {
		_, err := os.Stat(filepath.Join(f.ws, "ran-"+m))
		ran[m] = err == nil
		t.Logf("%-13s ran=%-5v model saw: %.160s", m, ran[m], strings.ReplaceAll(f.api.got()[i].text(), "\n", " "))
	}
	return ran
}

func (f *fixture) trust() {
	os.WriteFile(filepath.Join(f.home, ".gemini", "trustedFolders.json"), []byte(fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, f.ws)), 0o600)
}

// TestGeminiHookFailures measures what the real CLI does when a hook
// fails (the table in docs/hosts.md, Gemini CLI), then runs the same
// failures behind the hook joule install writes: none of them runs.
func TestGeminiHookFailures(t *testing.T) {
	t.Parallel()
	t.Run("bare hook", func(t *testing.T) {
		f := newFixture(t)
		f.trust()
		script := filepath.Join(t.TempDir(), "hook.sh")
		os.WriteFile(script, []byte(modeHook), 0o755)
		settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"BeforeTool": []any{map[string]any{
			"matcher": "*", "hooks": []any{map[string]any{"type": "command", "name": "probe", "command": script, "timeout": 3000}}}}}})
		os.MkdirAll(filepath.Join(f.ws, ".gemini"), 0o755)
		os.WriteFile(filepath.Join(f.ws, ".gemini", "settings.json"), settings, 0o644)
		ran := f.ranModes(t)
		// What Gemini CLI 0.61.0 does, as docs/hosts.md records it: a
		// change here is a change of the host's contract.
		var open []string
		for _, m := range modes {
			if ran[m] && m != "allow" {
				open = append(open, m)
			}
		}
		want := []string{"crash", "exit1-silent", "exit1-stderr", "exit2-silent", "empty", "garbage", "hang"}
		if !slices.Equal(open, want) || !ran["allow"] {
			t.Fatalf("a bare hook fails open on %v (allow ran: %v); docs/hosts.md records %v", open, ran["allow"], want)
		}
	})
	t.Run("joule's wrapper", func(t *testing.T) {
		f := newFixture(t)
		bin := f.ownBinaries()
		if r := f.jouleAt(bin, "install", "gemini-cli", "--project", "--trust"); r.code != 0 || !strings.Contains(r.stdout, "armed:") {
			t.Fatalf("install: %+v", r)
		}
		// The installed command runs a joule-hook that fails every way.
		os.WriteFile(filepath.Join(bin, "joule-hook"), []byte(modeHook), 0o755)
		ran := f.ranModes(t)
		for i, m := range modes {
			text := f.api.got()[i].text()
			switch {
			case m == "allow":
				if !ran[m] {
					t.Errorf("the allowed command did not run: %s", text)
				}
			case ran[m]:
				t.Errorf("%s: the command ran behind joule's wrapper", m)
			case m == "deny" && !strings.Contains(text, "scripted deny"):
				t.Errorf("deny: the hook's reason did not reach the model: %s", text)
			case m != "deny" && !strings.Contains(text, geminicli.FailedReason):
				t.Errorf("%s: the wrapper's reason did not reach the model: %s", m, text)
			}
		}
	})
}

// ownBinaries gives the fixture copies of joule and joule-hook that a test
// may replace, and returns their directory.
func (f *fixture) ownBinaries() string {
	d := f.t.TempDir()
	for _, n := range []string{"joule", "joule-hook"} {
		b, err := os.ReadFile(filepath.Join(hosttest.Bin, n))
		if err != nil {
			f.t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, n), b, 0o755)
	}
	return d
}

func (f *fixture) jouleAt(bin string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return run(ctx, f.ws, f.env, "", filepath.Join(bin, "joule"), args...)
}

// hookCommand is the command joule install wrote into the project.
func (f *fixture) hookCommand(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.ws, ".gemini", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks struct {
			BeforeTool []struct {
				Hooks []struct {
					Command string `json:"command"`
					Timeout int    `json:"timeout"`
				} `json:"hooks"`
			} `json:"BeforeTool"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil || len(s.Hooks.BeforeTool) != 1 || len(s.Hooks.BeforeTool[0].Hooks) != 1 {
		t.Fatalf("settings.json: %v\n%s", err, b)
	}
	if h := s.Hooks.BeforeTool[0].Hooks[0]; h.Timeout != geminicli.Timeout {
		t.Fatalf("the hook's timeout is %d ms", h.Timeout)
	}
	return s.Hooks.BeforeTool[0].Hooks[0].Command
}

// asGemini runs the installed hook command as Gemini CLI runs it (bash -c
// in the project, the payload on stdin) and returns its decision and how
// long it took.
func (f *fixture) asGemini(t *testing.T, cmd, jhome, command string) (decision, reason string, took time.Duration) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"session_id": "failures", "transcript_path": "", "cwd": f.ws,
		"hook_event_name": "BeforeTool", "timestamp": time.Now().UTC().Format(time.RFC3339),
		"tool_name": "run_shell_command", "tool_input": map[string]any{"command": command}})
	env := append(append([]string{}, f.env...), "JOULE_HOME="+jhome, "GEMINI_PROJECT_DIR="+f.ws, "GEMINI_CWD="+f.ws)
	// The installed line records the install's JOULE_HOME; another home
	// is the line an install with that home writes.
	cmd = strings.Replace(cmd, "JOULE_HOME="+hook.ShellQuote(f.jhome)+" ", "JOULE_HOME="+hook.ShellQuote(jhome)+" ", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(geminicli.Timeout)*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := run(ctx, f.ws, env, string(payload), "bash", "-c", cmd)
	took = time.Since(start)
	var out struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("the hook did not answer Gemini's JSON within Gemini's %d ms (exit %d, %v, after %v): %q %s", geminicli.Timeout, r.code, err, took, r.stdout, r.stderr)
	}
	return out.Decision, out.Reason, took
}

// TestJouleAnswersInTime runs the installed hook command as Gemini runs it
// while joule's store is locked, its key is gone or its disk is full: each
// time joule answers an explicit deny within Gemini's timeout, never
// something Gemini would take as an allow.
func TestJouleAnswersInTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if r := f.joule("install", "gemini-cli", "--project", "--trust"); r.code != 0 {
		t.Fatalf("install: %+v", r)
	}
	cmd := f.hookCommand(t)
	if d, reason, took := f.asGemini(t, cmd, f.jhome, "touch ok.txt"); d != "allow" {
		t.Fatalf("a healthy joule answers %s (%s) after %v", d, reason, took)
	}
	stop := func(jhome string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		run(ctx, f.ws, append(append([]string{}, f.env...), "JOULE_HOME="+jhome), "", filepath.Join(hosttest.Bin, "joule"), "gate", "stop")
	}
	deny := func(t *testing.T, jhome, why string) {
		t.Helper()
		d, reason, took := f.asGemini(t, cmd, jhome, "touch ok.txt")
		t.Logf("%s: %s after %v: %s", why, d, took.Round(time.Millisecond), reason)
		if d != "deny" || !strings.HasPrefix(reason, "joule deny (") {
			t.Fatalf("%s: joule answered %s (%s)", why, d, reason)
		}
	}
	hosttest.StoreFailures(t, f.jhome, stop, deny)
}
