package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/hosttest"
)

// hostLines are, per host, a payload of a shell call joule's dev grant
// denies (action-not-granted: dd is not granted) with cwd WS, where the user
// scope's hook goes, and how the host reads the hook's answer as a block
// when joule itself fails (each host's failure table in docs/hosts.md).
var hostLines = []struct {
	host, payload, file string
	failDeny            func(r result) bool
}{
	{"claude-code", `{"session_id":"s-home","cwd":"WS","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"CMD"},"tool_use_id":"toolu_1"}`,
		".claude/settings.json", exitNonZero}, // onFailure: block
	{"codex", `{"session_id":"s-home","turn_id":"t-1","cwd":"WS","hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"CMD"},"tool_use_id":"call_1"}`,
		".codex/hooks.json", exit2Blocked},
	{"gemini-cli", `{"session_id":"s-home","cwd":"WS","hook_event_name":"BeforeTool","timestamp":"2026-08-01T10:00:00.000Z","tool_name":"run_shell_command","tool_input":{"command":"CMD"}}`,
		".gemini/settings.json", func(r result) bool {
			return strings.Contains(r.stdout, `"decision":"deny"`) && strings.Contains(r.stdout, "internal-error") && r.code == 0
		}},
	{"cursor", `{"hook_event_name":"beforeShellExecution","conversation_id":"c-home","generation_id":"g-1","workspace_roots":["WS"],"command":"CMD","cwd":"WS"}`,
		".cursor/hooks.json", exitNonZero}, // failClosed: true
	{"windsurf", `{"agent_action_name":"pre_run_command","trajectory_id":"t-home","execution_id":"e-1","timestamp":"2026-08-01T10:00:00Z","tool_info":{"command_line":"CMD","cwd":"WS"}}`,
		".codeium/windsurf/hooks.json", exit2Blocked},
	{"antigravity", `{"conversationId":"3f1c9a2e-0000-4000-8000-00000000a9e1","stepIdx":1,"toolCall":{"name":"run_command","args":{"CommandLine":"CMD","Cwd":"WS","Blocking":true}},"workspacePaths":["WS"]}`,
		".gemini/config/hooks.json", exitNonZero}, // not documented: joule's own non-zero exit
	{"cline", `{"hookName":"tool_call","clineVersion":"3.0.65","timestamp":"2026-08-01T10:00:00Z","taskId":"conv-home","workspaceRoots":["WS"],"tool_call":{"id":"call-1","name":"run_commands","input":{"commands":["CMD"]}}}`,
		".cline/hooks/PreToolUse", func(r result) bool { return strings.Contains(r.stdout, `"cancel":true`) }},
}

func exitNonZero(r result) bool { return r.code != 0 && !strings.Contains(r.stdout, "allow") }
func exit2Blocked(r result) bool {
	return r.code == 2 && strings.Contains(r.stderr, "joule deny (hook-failed)")
}

// installedLine is joule's command line in a host's hook file (or, for
// Cline's hook file, the file itself).
func installedLine(t *testing.T, path, host string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, ".json") {
		return path
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var found string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if c, _ := v["command"].(string); strings.Contains(c, "joule") && strings.Contains(c, host) && found == "" {
				found = c
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	if found == "" {
		t.Fatalf("no joule command for %s in %s:\n%s", host, path, b)
	}
	return found
}

// runLine runs a hook command line as the hosts do (a shell, the payload on
// stdin, in the workspace), with env and nothing else: no JOULE_HOME.
func runLine(t *testing.T, dir, line string, env []string, payload string) result {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(payload)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// copyBins puts joule and joule-hook side by side in a directory of the
// test's, as make build and go install do, so that installs from there
// write the thin client's path and the test may break it.
func copyBins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for src, name := range map[string]string{jouleBin: "joule", clientBin: ClientName, filepath.Join(filepath.Dir(jouleBin), "joule-exec"): "joule-exec"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hostWorld is an initialised custom JOULE_HOME, a user home and a copy of
// the binaries to install from, with the environments an install and a host
// run in.
type hostWorld struct {
	env, installEnv, hostEnv []string
	ws, bin                  string
	jouleHome, userHome      string
}

func newHostWorld(t *testing.T) *hostWorld {
	t.Helper()
	w := &hostWorld{bin: copyBins(t)}
	w.env, w.ws = initHome(t)
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "JOULE_HOME="); ok {
			w.jouleHome = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			w.userHome = v
		}
	}
	os.MkdirAll(w.userHome, 0o755)
	w.installEnv = append(append([]string{}, w.env...), "CODEX_HOME="+filepath.Join(w.userHome, ".codex"), "XDG_DATA_HOME=", "GEMINI_CLI_TRUSTED_FOLDERS_PATH=")
	// The host's environment: no JOULE_HOME, joule not on PATH.
	w.hostEnv = []string{"HOME=" + w.userHome, "PATH=/usr/bin:/bin", "JOULE_GATE_IDLE=1m"}
	t.Cleanup(w.stopGate)
	return w
}

// stopGate stops the resident gate of the world's home.
func (w *hostWorld) stopGate() {
	stop := exec.Command(filepath.Join(w.bin, "joule"), "gate", "stop")
	stop.Env = append(os.Environ(), w.env...)
	stop.Run()
}

// TestInstalledLineDecidesFromItsHome installs every host with a custom
// JOULE_HOME and runs the hook line it wrote as the host would, from an
// environment without JOULE_HOME: the decision must come from that home
// (the dev grant there denies action-not-granted; the default home has no
// grant and would deny no-active-grant). Then, with joule-hook missing and
// with it crashing, the line must end in the host's block.
func TestInstalledLineDecidesFromItsHome(t *testing.T) {
	w := newHostWorld(t)
	ws, bin, jouleHome, userHome, installEnv, hostEnv := w.ws, w.bin, w.jouleHome, w.userHome, w.installEnv, w.hostEnv
	lines := map[string]string{}
	for _, h := range hostLines {
		t.Run(h.host, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, "joule"), "install", h.host, "--user")
			cmd.Env = append(os.Environ(), installEnv...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("install: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "ok   the hook decides from JOULE_HOME="+jouleHome) && h.host != "cline" && h.host != "gemini-cli" {
				t.Errorf("the armed check does not confirm the recorded home:\n%s", out)
			}
			line := installedLine(t, filepath.Join(userHome, h.file), h.host)
			lines[h.host] = line
			payload := strings.NewReplacer("WS", ws, "CMD", "dd if=/dev/null of=denied.txt").Replace(h.payload)
			r := runLine(t, ws, line, hostEnv, payload)
			if !strings.Contains(r.stdout+r.stderr, "action-not-granted") {
				t.Fatalf("the installed line %q did not decide from JOULE_HOME=%s (want action-not-granted): %+v", line, jouleHome, r)
			}
		})
	}
	for _, mode := range []string{"missing", "crashing"} {
		os.Remove(filepath.Join(bin, ClientName))
		if mode == "crashing" {
			os.WriteFile(filepath.Join(bin, ClientName), []byte("#!/bin/sh\ncat >/dev/null\nkill -SEGV $$\n"), 0o755)
		}
		for _, h := range hostLines {
			t.Run(mode+"/"+h.host, func(t *testing.T) {
				if lines[h.host] == "" {
					t.Skip("not installed")
				}
				payload := strings.NewReplacer("WS", ws, "CMD", "true").Replace(h.payload)
				if r := runLine(t, ws, lines[h.host], hostEnv, payload); !h.failDeny(r) {
					t.Fatalf("with joule-hook %s the line %q answered %+v: the host would run the call", mode, lines[h.host], r)
				}
			})
		}
	}
}

// TestClaudeProjectCommittedFile installs Claude Code into a project with a
// custom JOULE_HOME: the settings.json a team commits names neither this
// user's binary nor home; run as Claude Code runs it, with the env of the
// uncommitted settings.local.json, it decides from that home; a teammate
// without that file and no joule-hook on PATH gets a failing hook (which
// onFailure: block turns into a block), one with joule on PATH decides.
func TestClaudeProjectCommittedFile(t *testing.T) {
	env, ws := initHome(t)
	bin := copyBins(t)
	var jouleHome, userHome string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "JOULE_HOME="); ok {
			jouleHome = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	t.Cleanup(func() {
		stop := exec.Command(filepath.Join(bin, "joule"), "gate", "stop")
		stop.Env = append(os.Environ(), env...)
		stop.Run()
	})
	cmd := exec.Command(filepath.Join(bin, "joule"), "install", "claude-code", "--project", ws)
	cmd.Env = append(os.Environ(), append(env, "XDG_DATA_HOME=")...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok   the committed") || !strings.Contains(string(out), "armed") {
		t.Fatalf("install: %v\n%s", err, out)
	}
	shared, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json"))
	if bytes.Contains(shared, []byte(bin)) || bytes.Contains(shared, []byte(jouleHome)) {
		t.Fatalf("the committed settings.json names this user's binary or home:\n%s", shared)
	}
	var local struct {
		Env map[string]string `json:"env"`
	}
	b, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.local.json"))
	if err := json.Unmarshal(b, &local); err != nil || local.Env["JOULE_HOME"] != jouleHome {
		t.Fatalf("settings.local.json does not carry JOULE_HOME: %v\n%s", err, b)
	}
	line := installedLine(t, filepath.Join(ws, ".claude", "settings.json"), "claude-code")
	payload := strings.NewReplacer("WS", ws, "CMD", "dd if=/dev/null of=denied.txt").Replace(hostLines[0].payload)
	base := []string{"HOME=" + userHome, "PATH=/usr/bin:/bin", "JOULE_GATE_IDLE=1m"}
	withLocal := append([]string{}, base...)
	for k, v := range local.Env {
		withLocal = append(withLocal, k+"="+v)
	}
	if r := runLine(t, ws, line, withLocal, payload); !strings.Contains(r.stdout, "action-not-granted") {
		t.Errorf("with settings.local.json's env the committed line %q answered %+v", line, r)
	}
	if r := runLine(t, ws, line, base, payload); r.code == 0 || strings.Contains(r.stdout, "allow") {
		t.Errorf("a teammate with no joule on PATH: the committed line %q answered %+v, which Claude Code would not block", line, r)
	}
	teammate := []string{"HOME=" + userHome, "PATH=" + bin + ":/usr/bin:/bin", "JOULE_HOME=" + jouleHome, "JOULE_GATE_IDLE=1m"}
	if r := runLine(t, ws, line, teammate, payload); !strings.Contains(r.stdout, "action-not-granted") {
		t.Errorf("a teammate with joule-hook on PATH: the committed line %q answered %+v", line, r)
	}
	// Uninstall takes joule's env out of settings.local.json and leaves
	// the user's.
	os.WriteFile(filepath.Join(ws, ".claude", "settings.local.json"), bytes.Replace(b, []byte(`"env": {`), []byte(`"env": {"MINE": "1",`), 1), 0o644)
	cmd = exec.Command(filepath.Join(bin, "joule"), "install", "claude-code", "--project", ws, "--uninstall")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	b, _ = os.ReadFile(filepath.Join(ws, ".claude", "settings.local.json"))
	if !bytes.Contains(b, []byte(`"MINE"`)) || bytes.Contains(b, []byte("JOULE")) {
		t.Errorf("settings.local.json after uninstall:\n%s", b)
	}
}

// TestUninstallFindsWhatItInstalled: each install is recorded (0600) in
// $JOULE_HOME, --uninstall without a scope removes the recorded one, and
// with several it lists them with commands that work as printed.
func TestUninstallFindsWhatItInstalled(t *testing.T) {
	env, ws := initHome(t)
	var jouleHome string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "JOULE_HOME="); ok {
			jouleHome = v
		}
	}
	other := t.TempDir()
	if r := jouleIn(t, other, nil, env, "install", "claude-code", "--uninstall"); r.code != 2 || !strings.Contains(r.stderr, "records no install of claude-code") {
		t.Fatalf("uninstall with nothing recorded: %+v", r)
	}
	if r := jouleIn(t, ws, nil, env, "install", "claude-code", "--project"); r.code != 0 {
		t.Fatalf("install: %+v", r)
	}
	st, err := os.Stat(filepath.Join(jouleHome, hook.InstallsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the record of installs: %v %v", err, st)
	}
	b, _ := os.ReadFile(filepath.Join(jouleHome, hook.InstallsFile))
	if !strings.Contains(string(b), filepath.Join(ws, ".claude", "settings.json")) {
		t.Fatalf("the record does not list the files written:\n%s", b)
	}
	// From another directory, no --project: the recorded one goes.
	if r := jouleIn(t, other, nil, env, "install", "claude-code", "--uninstall"); r.code != 0 || !strings.Contains(r.stdout, "removed "+filepath.Join(ws, ".claude", "settings.json")) {
		t.Fatalf("uninstall without --project: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(jouleHome, hook.InstallsFile)); !os.IsNotExist(err) {
		t.Fatalf("the record outlives the last uninstall: %v", err)
	}
	// Two installs: the uninstall names both; each printed command works.
	jouleIn(t, ws, nil, env, "install", "claude-code", "--project")
	jouleIn(t, ws, nil, env, "install", "claude-code", "--user")
	r := jouleIn(t, other, nil, env, "install", "claude-code", "--uninstall")
	if r.code != 2 || strings.Count(r.stderr, "joule install claude-code ") != 2 {
		t.Fatalf("uninstall with two installs: %+v", r)
	}
	var suggested string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, ". joule install") && strings.Contains(l, "--project ") {
			suggested = strings.TrimSpace(strings.SplitN(strings.SplitN(l, ". ", 2)[1], "   (", 2)[0])
		}
	}
	cmd := exec.Command("/bin/sh", "-c", strings.Replace(suggested, "joule ", hook.ShellQuote(jouleBin)+" ", 1))
	cmd.Dir, cmd.Env = other, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "no longer wired") {
		t.Fatalf("the suggested %q: %v\n%s", suggested, err, out)
	}
	if r := jouleIn(t, other, nil, env, "install", "claude-code", "--uninstall"); r.code != 0 || !strings.Contains(r.stdout, "no longer wired") {
		t.Fatalf("uninstall of the last (user) install: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json")); strings.Contains(string(b), "joule") {
		t.Fatalf("settings.json after uninstall:\n%s", b)
	}
}

// hostTimeout is how long each host waits for its hook before it acts on
// its own (the timeout joule install writes, or the host's fixed one:
// Cline's tool_call hooks have 120 s; Windsurf's and Antigravity's are not
// documented, so they get the shortest of the others').
var hostTimeout = map[string]time.Duration{
	"claude-code": 30 * time.Second, "codex": 30 * time.Second, "gemini-cli": 30 * time.Second,
	"cursor": 30 * time.Second, "windsurf": 30 * time.Second, "antigravity": 30 * time.Second,
	"cline": 120 * time.Second,
}

// TestInstalledLineAnswersInTime runs every host's installed hook line, as
// the host runs it, while joule's store is locked by another writer and
// while its signing key is gone: each time the line must answer the host's
// own deny, and before the host's timeout, past which most hosts run the
// tool (docs/hosts.md's failure tables). A full disk is run against the
// real Gemini CLI and Codex in their e2e packages (it needs a mount
// namespace).
func TestInstalledLineAnswersInTime(t *testing.T) {
	t.Parallel()
	w := newHostWorld(t)
	ws, bin, jouleHome, userHome, installEnv, hostEnv, stop := w.ws, w.bin, w.jouleHome, w.userHome, w.installEnv, w.hostEnv, w.stopGate
	denied := map[string]func(result) bool{}
	for _, h := range hostCases {
		denied[h.host] = h.denied
	}
	lines := map[string]string{}
	payloads := map[string]string{}
	for _, h := range hostLines {
		cmd := exec.Command(filepath.Join(bin, "joule"), "install", h.host, "--user")
		cmd.Env = append(os.Environ(), installEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("install %s: %v\n%s", h.host, err, out)
		}
		lines[h.host] = installedLine(t, filepath.Join(userHome, h.file), h.host)
		// A call the grant allows: only the fault can make it a deny.
		payloads[h.host] = strings.NewReplacer("WS", ws, "CMD", "go test ./...").Replace(h.payload)
		if denied[h.host] == nil || hostTimeout[h.host] == 0 {
			t.Fatalf("%s: no deny recogniser or timeout in the tables", h.host)
		}
		if r := runLine(t, ws, lines[h.host], hostEnv, payloads[h.host]); denied[h.host](r) {
			t.Fatalf("%s: a healthy joule denied an allowed call: %+v", h.host, r)
		}
	}
	answers := func(t *testing.T, fault string) {
		for _, h := range hostLines {
			start := time.Now()
			r := runLine(t, ws, lines[h.host], hostEnv, payloads[h.host])
			took := time.Since(start)
			t.Logf("%s, %s: exit %d after %v", fault, h.host, r.code, took.Round(time.Millisecond))
			if !denied[h.host](r) {
				t.Errorf("%s: %s's line answered %+v, which the host does not read as a deny", fault, h.host, r)
			}
			if took >= hostTimeout[h.host] {
				t.Errorf("%s: %s's line took %v, past the host's %v timeout", fault, h.host, took, hostTimeout[h.host])
			}
		}
	}
	t.Run("locked store", func(t *testing.T) {
		stop()
		release := hosttest.LockStore(t, filepath.Join(jouleHome, "joule.db"))
		answers(t, "locked store")
		release()
		stop()
	})
	t.Run("missing key", func(t *testing.T) {
		stop()
		key := filepath.Join(jouleHome, "steward.key")
		if err := os.Rename(key, key+".away"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(key+".away", key)
		answers(t, "missing key")
		stop()
	})
}

// TestInstalledLineIgnoresHostJouleHome installs Claude Code from the
// default home (no JOULE_HOME at install) and runs the line it wrote as
// Claude Code would, with a JOULE_HOME in the host's environment that
// names another home, whose key and grant allow every command: the
// decision still comes from the home the line was installed with (its dev
// grant denies dd, action-not-granted), and the other home seals nothing.
func TestInstalledLineIgnoresHostJouleHome(t *testing.T) {
	bin := copyBins(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	userHome, ws := filepath.Join(dir, "user"), filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	def := filepath.Join(userHome, ".local", "share", "joule")
	base := []string{"HOME=" + userHome, "XDG_DATA_HOME=", "JOULE_HOME=", "PATH=/usr/bin:/bin", "JOULE_GATE_IDLE=1m"}
	run := func(env []string, args ...string) {
		cmd := exec.Command(filepath.Join(bin, "joule"), args...)
		cmd.Dir, cmd.Env = ws, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("joule %v: %v\n%s", args, err, out)
		}
	}
	run(base, "init", "--steward", "me.example", "--workspace", ws)
	evil := filepath.Join(dir, "evil")
	evilEnv := append(append([]string{}, base...), "JOULE_HOME="+evil)
	run(evilEnv, "init", "--steward", "agent.example", "--workspace", ws, "--template", "", "--allow", "Bash")
	t.Cleanup(func() {
		for _, env := range [][]string{base, evilEnv} {
			stop := exec.Command(filepath.Join(bin, "joule"), "gate", "stop")
			stop.Env = env
			stop.Run()
		}
	})
	run(base, "install", "claude-code", "--user")
	line := installedLine(t, filepath.Join(userHome, ".claude", "settings.json"), "claude-code")
	if got := hook.RecordedHome(line); got != def {
		t.Fatalf("the line records JOULE_HOME %q, want the default home %s: %s", got, def, line)
	}
	payload := strings.NewReplacer("WS", ws, "CMD", "dd if=/dev/null of=denied.txt").Replace(hostLines[0].payload)
	r := runLine(t, ws, line, evilEnv, payload)
	if !strings.Contains(r.stdout+r.stderr, "action-not-granted") {
		t.Fatalf("with JOULE_HOME=%s in the host's environment, the line answered %+v: want its own home's action-not-granted", evil, r)
	}
	if _, err := os.Stat(filepath.Join(evil, StoreFile)); err == nil {
		if r := joule(t, nil, []string{"JOULE_HOME=" + evil}, "receipts", "ls", "s-home"); r.code == 0 {
			t.Fatalf("the other home sealed the call: %s", r.stdout)
		}
	}
}
