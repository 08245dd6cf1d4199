package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// rootBox is a throwaway home and workspace, a git repository with one
// commit, under a grant whose bare Bash rule lets the analysis allow any
// line: what is stopped is stopped by the kernel. Lines run as the host
// runs them: the line `joule hook claude-code --contain` rewrote, with
// bash, in the workspace.
type rootBox struct {
	env   []string
	ws    string
	names []string // the protected names of the workspace root (rootProtected), a trailing / for a directory
}

func newRootBox(t *testing.T, grant ...string) *rootBox {
	t.Helper()
	env, ws := execEnv(t)
	return setUpRootBox(t, env, ws, grant...)
}

func setUpRootBox(t *testing.T, env []string, ws string, grant ...string) *rootBox {
	t.Helper()
	args := append([]string{"grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Edit", "--allow", "Bash", "--budget", "500J",
		"--workspace", ws, "--use"}, grant...)
	if r := joule(t, nil, env, args...); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	b := &rootBox{env: env, ws: ws, names: rootProtected(ws)}
	os.WriteFile(filepath.Join(ws, "README"), []byte("readme\n"), 0o644)
	if r := b.unconfined(t, ws, "git init -q && git add README && git commit -qm init"); r.code != 0 {
		t.Fatalf("git init: %+v", r)
	}
	return b
}

// rewrite is what the hook makes of line: the joule-exec line, or a
// failure if the gate does not allow it contained.
func (b *rootBox) rewrite(t *testing.T, line string, background bool) string {
	t.Helper()
	input := map[string]any{"command": line}
	if background {
		input["run_in_background"] = true
	}
	payload, _ := json.Marshal(map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": input, "cwd": b.ws})
	r := joule(t, payload, b.env, "hook", "claude-code", "--contain")
	var a struct {
		HookSpecificOutput struct {
			PermissionDecision string         `json:"permissionDecision"`
			Reason             string         `json:"permissionDecisionReason"`
			UpdatedInput       map[string]any `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &a) != nil {
		t.Fatalf("hook: %+v", r)
	}
	c, _ := a.HookSpecificOutput.UpdatedInput["command"].(string)
	if a.HookSpecificOutput.PermissionDecision != "" || !strings.Contains(c, "joule-exec' --policy ") {
		t.Fatalf("%s: not allowed contained: %s %s", line, a.HookSpecificOutput.PermissionDecision, a.HookSpecificOutput.Reason)
	}
	return c
}

// policyLine is the rewritten line's joule-exec with its policy, for
// scripts the gate never sees (the kernel alone stands in their way).
func (b *rootBox) policyLine(t *testing.T, background bool) string {
	t.Helper()
	prefix, _, ok := strings.Cut(b.rewrite(t, "true", background), " -- /bin/bash -c ")
	if !ok {
		t.Fatal("no joule-exec line")
	}
	return prefix
}

func (b *rootBox) bash(t *testing.T, dir, line string, extra ...string) result {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), b.env...), extra...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout: string(out), code: code}
}

func (b *rootBox) unconfined(t *testing.T, dir, script string) result {
	t.Helper()
	return b.bash(t, dir, script)
}

// contained runs script under the policy line (the gate never sees it).
func (b *rootBox) contained(t *testing.T, prefix, script string) result {
	t.Helper()
	return b.bash(t, b.ws, prefix+" -- /bin/bash -c "+shellQuoteT(script))
}

// planted is what an unconfined program finds of the protected names in
// dir: each that exists (a host discovers its configuration by name), and
// each git lists (the person's `git status`).
func (b *rootBox) planted(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range b.names {
		n = strings.TrimSuffix(n, "/")
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			out = append(out, n)
		}
	}
	st := b.unconfined(t, dir, "git status --porcelain --ignored -uall")
	for _, l := range strings.Split(st.stdout, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || strings.Contains(f[0], "D") {
			continue // deleted: nothing there
		}
		first, _, _ := strings.Cut(f[len(f)-1], "/")
		if slices.ContainsFunc(b.names, func(n string) bool { return strings.TrimSuffix(n, "/") == first }) && !slices.Contains(out, first) {
			out = append(out, "git status: "+first)
		}
	}
	return out
}

// TestContainRootOrdinary: with none of the hosts' configuration in the
// workspace (so every protected name of the root is absent, as in most
// repositories), ordinary work that creates entries at the workspace root
// runs through the line the hook rewrote and has its effect, and leaves
// nothing behind: no protected name, nothing git lists but its own work.
// The dev template's lines are rewritten too (the analysis does not refuse
// creating an entry at the root).
func TestContainRootOrdinary(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	b := newRootBox(t)
	steps := []struct{ name, line, want, creates string }{
		{"touch", "touch new.txt && ls new.txt", "new.txt", "new.txt"},
		{"mkdir", "mkdir newdir && echo hi > newdir/f && cat newdir/f", "hi", "newdir"},
		{"redirection", "echo note > notes.txt && cat notes.txt", "note", "notes.txt"},
		{"sed -i", "printf 'a\\n' > s.txt && sed -i s/a/b/ s.txt && cat s.txt", "b", "s.txt"},
		{"mv, cp, rm", "cp README r2 && mv r2 r3 && rm r3 && cp -r newdir newdir2 && ls", "newdir2", "newdir2"},
		{"go mod init, go build -o", "go mod init example.com/app && printf 'package main\\n\\nfunc main() { println(\"built\") }\\n' > main.go && go build -o app . && ./app",
			"built", "app"},
		{"git init in a subdirectory", "git init -q sub && cd sub && echo x > f && git add f && git commit -qm one && git log --oneline | wc -l", "1", "sub"},
		{"git add -A and commit at the root", "git add -A && git commit -qm work && git show --stat --format= HEAD", "notes.txt", ""},
		{"tar and mktemp", `d=$(mktemp -d) && echo t > "$d/t" && tar -C "$d" -cf bundle.tar t && mkdir unpacked && tar -C unpacked -xf bundle.tar && cat unpacked/t`, "t", "unpacked"},
	}
	if _, err := exec.LookPath("npm"); err == nil && !testing.Short() {
		steps = append(steps, struct{ name, line, want, creates string }{"npm init -y", "npm init -y >/dev/null && cat package.json", `"name"`, "package.json"})
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil && !testing.Short() {
		steps = append(steps, struct{ name, line, want, creates string }{"python -m venv", "/usr/bin/python3 -m venv --without-pip .venv && ls .venv", "pyvenv.cfg", ".venv"})
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := b.bash(t, b.ws, b.rewrite(t, s.line, false))
			if r.code != 0 || !strings.Contains(r.stdout, s.want) {
				t.Fatalf("%s: exit %d, want %q in:\n%s", s.line, r.code, s.want, r.stdout)
			}
			if s.creates != "" {
				if _, err := os.Lstat(filepath.Join(b.ws, s.creates)); err != nil {
					t.Errorf("%s was not created at the root: %v", s.creates, err)
				}
			}
			if p := b.planted(t, b.ws); len(p) > 0 {
				t.Errorf("left behind: %v", p)
			}
		})
	}
	// The commit holds the work and nothing of the stand-ins.
	r := b.unconfined(t, b.ws, "git ls-tree -r --name-only HEAD")
	for _, n := range b.names {
		if first, _, _ := strings.Cut(n, "/"); strings.Contains("\n"+r.stdout, "\n"+first) {
			t.Errorf("the commit holds %s:\n%s", first, r.stdout)
		}
	}
	// The dev template rewrites such lines as well.
	env, ws := execEnv(t)
	dev := &rootBox{env: env, ws: ws}
	for _, line := range []string{"touch x.txt", "mkdir d", "go build -o app .", "echo hi > notes.txt", "go mod init example.com/y"} {
		dev.rewrite(t, line, false)
	}
}

// rootAttacks try to leave a host's configuration at the workspace root
// (where it is absent) for an unconfined program to read later. plants is
// the name the attack leaves when it runs unconfined (the control); wait,
// how long the planted name may take to appear. MARK is a file an
// unconfined program would create if it ran what was planted.
var rootAttacks = []struct {
	name, setup, attack, plants string
	wait                        time.Duration
	background                  bool
}{
	{name: "file", attack: `echo '{"mcpServers":{"x":{"command":"sh","args":["-c","touch $MARK"]}}}' > .mcp.json`, plants: ".mcp.json"},
	{name: "file by tee", attack: `echo '{"plugin":["./p.js"]}' | tee opencode.json`, plants: "opencode.json"},
	{name: "file by python", attack: `/usr/bin/python3 -c 'open(".env","w").write("NODE_OPTIONS=--require ./x.js\n")'`, plants: ".env"},
	{name: "directory", attack: `mkdir .gemini && echo '{"hooks":{}}' > .gemini/settings.json`, plants: ".gemini"},
	{name: "mkdir -p through a protected directory", attack: `mkdir -p .claude/hooks && echo '{"hooks":{}}' > .claude/settings.local.json`, plants: ".claude"},
	{name: "deeper file below an absent directory", attack: `mkdir -p .vscode && echo '{"servers":{}}' > .vscode/mcp.json`, plants: ".vscode"},
	{name: "symbolic link to a file", attack: `echo '{}' > "$TMPDIR/evil.json"; ln -s "$TMPDIR/evil.json" .mcp.json`, plants: ".mcp.json"},
	{name: "symbolic link to a directory", attack: `mkdir -p "$TMPDIR/q" && echo '{}' > "$TMPDIR/q/settings.json"; ln -s "$TMPDIR/q" .qwen`, plants: ".qwen"},
	{name: "symbolic link forced over", attack: `ln -sfn "$TMPDIR" .codex; ln -sfT /etc/passwd opencode.jsonc`, plants: ".codex"},
	{name: "hard link", attack: `echo 'X=1' > e && ln e .env`, plants: ".env"},
	{name: "rename onto the name", attack: `echo '{}' > m && mv m .mcp.json`, plants: ".mcp.json"},
	{name: "rename a directory onto the name", attack: `mkdir -p d && echo '{}' > d/settings.json && mv -T d .gemini`, plants: ".gemini"},
	{name: "rename from the temp dir", attack: `mkdir -p "$TMPDIR/c" && echo '{"hooks":{}}' > "$TMPDIR/c/settings.json" && mv "$TMPDIR/c" .claude`, plants: ".claude"},
	{name: "rename exchange", attack: `echo '{}' > m && perl -e 'require "syscall.ph"; syscall(&SYS_renameat2, -100, "m", -100, ".mcp.json", 2) == 0 or die "renameat2: $!\n"' 2>&1 || mv m .mcp.json`, plants: ".mcp.json"},
	{name: "created, removed, created again", attack: `echo a > .env; rm -f .env; echo b > .env`, plants: ".env"},
	{name: "mkfifo and a socket at the name", attack: `mkfifo .env; /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(".mcp.json")'`, plants: ".env"},
	{name: "the stand-in removed first", attack: `rm -rf .mcp.json .gemini; rmdir .codex; unlink .env; echo '{}' > .mcp.json; mkdir .gemini`, plants: ".mcp.json"},
	{name: "the stand-in renamed away first", attack: `mv .opencode o; mv .claude "$TMPDIR/c2"; mkdir -p .opencode/plugin .claude`, plants: ".opencode"},
	{name: "the stand-in unmounted first", attack: `umount .mcp.json; umount -l .gemini; unshare -Urm sh -c 'umount -l .mcp.json; echo "{}" > .mcp.json'; echo '{}' > .mcp.json; mkdir .gemini`, plants: ".mcp.json"},
	{name: "through a symbolic link to the workspace", attack: `ln -s . self && echo '{}' > self/.mcp.json; ln -s "$PWD" "$TMPDIR/wsl" && mkdir "$TMPDIR/wsl/.gemini"`, plants: ".mcp.json"},
	{name: "through /proc/self/cwd", attack: `echo '{}' > /proc/self/cwd/.mcp.json; mkdir /proc/self/cwd/.qwen`, plants: ".mcp.json"},
	{name: "cp -r of a prepared tree", attack: `mkdir -p "$TMPDIR/t/.claude" && echo '{"hooks":{}}' > "$TMPDIR/t/.claude/settings.json" && echo '{}' > "$TMPDIR/t/.mcp.json" && cp -r "$TMPDIR/t/." .`, plants: ".mcp.json"},
	{name: "tar -x of an archive", attack: `mkdir -p "$TMPDIR/a/.gemini" && echo '{}' > "$TMPDIR/a/.gemini/settings.json" && tar -C "$TMPDIR/a" -cf "$TMPDIR/a.tar" . && tar -xf "$TMPDIR/a.tar"`, plants: ".gemini"},
	{name: "git checkout of a branch that tracks it", setup: `git checkout -qb evil && echo '{}' > .mcp.json && git add .mcp.json && git commit -qm evil && git checkout -q - && git clean -qfdx`,
		attack: `git checkout -q evil; git checkout -q evil -- .mcp.json`, plants: ".mcp.json"},
	{name: "a process that forks into the background", attack: `(sleep 0.5; echo '{}' > .mcp.json) & disown; setsid sh -c 'sleep 0.5; mkdir .gemini' </dev/null >/dev/null 2>&1 &`, plants: ".mcp.json", wait: 1500 * time.Millisecond},
	{name: "a background call", attack: `sleep 0.3; echo '{}' > .mcp.json; mkdir -p .claude/hooks`, plants: ".mcp.json", background: true},
}

// TestContainRootAttacks runs each attack of rootAttacks first unconfined
// in a copy of the workspace (the control: the name is planted), then
// through the policy of the line the hook rewrote, and requires that
// nothing of it is left: no protected name exists, git lists none, and the
// stand-ins made for the run are gone; the names a case variant spells
// differently are other names on this case-sensitive file system and are
// created (not a false deny).
func TestContainRootAttacks(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	b := newRootBox(t)
	prefix := b.policyLine(t, false)
	bgPrefix := b.policyLine(t, true)
	mark := filepath.Join(t.TempDir(), "mark")
	b.env = append(b.env, "MARK="+mark)
	control := filepath.Join(t.TempDir(), "control")
	os.MkdirAll(control, 0o755)
	os.WriteFile(filepath.Join(control, "README"), []byte("readme\n"), 0o644)
	b.unconfined(t, control, "git init -q && git add README && git commit -qm init")
	// What an attack made that is not protected, and what it planted in
	// the control.
	const reset = "git checkout -q master 2>/dev/null || git checkout -q main 2>/dev/null; git clean -qfdx; git branch -qD evil 2>/dev/null; true"
	cases := rootAttacks
	if testing.Short() {
		cases = cases[:8]
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer b.unconfined(t, control, reset)
			defer b.unconfined(t, b.ws, reset)
			if c.setup != "" {
				b.unconfined(t, control, c.setup)
				if r := b.unconfined(t, b.ws, c.setup); r.code != 0 {
					t.Fatalf("setup: %+v", r)
				}
			}
			b.unconfined(t, control, c.attack)
			time.Sleep(c.wait)
			if p := b.planted(t, control); !slices.Contains(p, c.plants) {
				t.Fatalf("unconfined, the attack planted %v, not %s: the case proves nothing", p, c.plants)
			}
			p := prefix
			if c.background {
				p = bgPrefix
			}
			b.contained(t, p, c.attack)
			time.Sleep(c.wait)
			if p := b.planted(t, b.ws); len(p) > 0 {
				t.Errorf("planted through containment: %v", p)
			}
		})
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("something planted ran")
	}
	t.Run("the host's discovery", func(t *testing.T) {
		// Claude Code's own reading of the project's MCP servers finds the
		// one planted unconfined, and none after the contained attack.
		if testing.Short() {
			t.Skip("starts the real Claude Code CLI")
		}
		claude := claudeBin(t)
		list := func(dir string) string {
			cmd := exec.Command(claude, "mcp", "list")
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/local/bin:/usr/bin:/bin", "ANTHROPIC_API_KEY=sk-ant-test-dummy-key-0000000000",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
			out, _ := cmd.CombinedOutput()
			return string(out)
		}
		attack := `echo '{"mcpServers":{"planted":{"command":"sh","args":["-c","touch $MARK"]}}}' > .mcp.json`
		b.unconfined(t, control, attack)
		defer b.unconfined(t, control, reset)
		if out := list(control); !strings.Contains(out, "planted") {
			t.Fatalf("claude mcp list does not find the server planted unconfined:\n%s", out)
		}
		b.contained(t, prefix, attack)
		if out := list(b.ws); strings.Contains(out, "planted") || !strings.Contains(out, "No MCP servers configured") {
			t.Errorf("claude mcp list after the contained attack:\n%s", out)
		}
	})
	t.Run("case variants are other names here", func(t *testing.T) {
		r := b.contained(t, prefix, `echo '{}' > .MCP.JSON && mkdir .Gemini && ls -a`)
		if r.code != 0 || !strings.Contains(r.stdout, ".MCP.JSON") {
			t.Fatalf("a case variant was refused: %+v", r)
		}
		if p := b.planted(t, b.ws); len(p) > 0 {
			t.Errorf("planted: %v", p)
		}
		b.unconfined(t, b.ws, reset)
	})
}

// TestContainRootStandIns runs the stand-ins' life: a background command
// holds them while a foreground one starts and ends, and its write after
// that one ended is still refused; once it ends they are gone. While a
// command tries again and again to plant configuration, an unconfined
// reader finds none at any moment (no window, as a check after the run
// would leave). A
// joule-exec killed outright leaves its stand-ins, which the next command
// removes; an empty directory of the user's own at a protected name is
// never removed; and with Landlock alone (no stand-ins) the root is
// carved, as before.
func TestContainRootStandIns(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	b := newRootBox(t)
	prefix := b.policyLine(t, false)
	out := filepath.Join(t.TempDir(), "bg.out")
	long := exec.Command("/bin/bash", "-c", b.policyLine(t, true)+" -- /bin/bash -c "+shellQuoteT(`touch started; while [ ! -e go ]; do sleep 0.05; done; echo '{}' > .mcp.json; mkdir .gemini; ls -la .mcp.json; echo bg done`)+" > "+out+" 2>&1")
	long.Dir, long.Env = b.ws, append(os.Environ(), b.env...)
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(filepath.Join(b.ws, "started")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := b.contained(t, prefix, "touch fg.txt"); r.code != 0 {
		t.Fatalf("a foreground command beside a background one: %+v", r)
	}
	if fi, err := os.Lstat(filepath.Join(b.ws, ".mcp.json")); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("the background command's stand-in is gone after the foreground one ended: %v", err)
	}
	os.WriteFile(filepath.Join(b.ws, "go"), nil, 0o644)
	if err := long.Wait(); err != nil {
		t.Logf("background command: %v", err)
	}
	log, _ := os.ReadFile(out)
	if !strings.Contains(string(log), "bg done") || !strings.Contains(string(log), "s---------") { // the stand-in: a socket node of mode 0
		t.Errorf("the background command's log:\n%s", log)
	}
	if p := b.planted(t, b.ws); len(p) > 0 {
		t.Errorf("left behind: %v\n%s", p, log)
	}

	// During the run an unconfined reader (a host watching for its
	// settings) finds no configuration at any protected name: the command
	// tries to plant one again and again while this process reads.
	plant := `for i in $(seq 100); do echo '{"hooks":{}}' > .mcp.json; mkdir -p .claude .gemini; echo '{"hooks":{}}' > .claude/settings.local.json; echo '{}' > .gemini/settings.json; echo '{}' > opencode.json; echo X=1 > .env; sleep 0.01; done 2>/dev/null; echo tried`
	readDuring := func(dir string, run func() result) ([]string, result) {
		names := []string{".mcp.json", ".claude/settings.local.json", ".gemini/settings.json", "opencode.json", ".env"}
		stop := make(chan struct{})
		found := make(chan []string)
		go func() {
			var seen []string
			for {
				for _, n := range names {
					if data, err := os.ReadFile(filepath.Join(dir, n)); err == nil && len(data) > 0 && !slices.Contains(seen, n) {
						seen = append(seen, n)
					}
				}
				select {
				case <-stop:
					found <- seen
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
		r := run()
		close(stop)
		return <-found, r
	}
	control := t.TempDir()
	if seen, _ := readDuring(control, func() result { return b.unconfined(t, control, plant) }); len(seen) == 0 {
		t.Error("unconfined, the reader saw nothing planted: the check proves nothing")
	}
	seen, r := readDuring(b.ws, func() result { return b.contained(t, prefix, plant) })
	if !strings.Contains(r.stdout, "tried") || len(seen) > 0 {
		t.Errorf("an unconfined reader saw %v during the run (%+v)", seen, r)
	}

	// Killed outright: its stand-ins stay, recorded, until the next
	// command of the workspace ends.
	kill := exec.Command("/bin/bash", "-c", "exec "+prefix+" -- /bin/sleep 30")
	kill.Dir, kill.Env = b.ws, append(os.Environ(), b.env...)
	if err := kill.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Lstat(filepath.Join(b.ws, ".mcp.json")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	kill.Process.Signal(syscall.SIGKILL)
	kill.Wait()
	if _, err := os.Lstat(filepath.Join(b.ws, ".mcp.json")); err != nil {
		t.Fatalf("no stand-in was left by the killed command: %v", err)
	}
	if r := b.contained(t, prefix, "echo '{}' > .mcp.json; touch after-kill"); !strings.Contains(r.stdout, ".mcp.json") {
		t.Errorf("the leftover stand-in did not hold: %+v", r)
	}
	if p := b.planted(t, b.ws); len(p) > 0 {
		t.Errorf("left behind after the next command: %v", p)
	}

	// The user's own empty .vscode/ stays.
	os.Mkdir(filepath.Join(b.ws, ".vscode"), 0o755)
	if r := b.contained(t, prefix, "mkdir -p .vscode/x && touch own.txt"); r.code == 0 {
		t.Errorf("created inside the user's .vscode: %+v", r)
	}
	if fi, err := os.Lstat(filepath.Join(b.ws, ".vscode")); err != nil || !fi.IsDir() {
		t.Errorf("the user's own .vscode was removed: %v", err)
	}
	os.Remove(filepath.Join(b.ws, ".vscode"))

	// Landlock alone has no mounts, so no stand-ins: the root stays carved.
	r = b.bash(t, b.ws, prefix+" -- /bin/bash -c "+shellQuoteT("touch landlock-only.txt"), sandbox.LandlockOnlyEnv+"=1")
	if r.code == 0 {
		t.Errorf("with Landlock alone, an entry was created at the root: %+v", r)
	}
	if p := b.planted(t, b.ws); len(p) > 0 {
		t.Errorf("left behind by Landlock alone: %v", p)
	}
}

// TestContainDenyRuleStandIns: a Write deny rule of the grant on a path
// that does not exist yet (dist/, src/gen/) keeps it uncreatable while the
// rest of the workspace root and of src stays creatable.
func TestContainDenyRuleStandIns(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	b := newRootBox(t, "--deny", "Write(dist/**)", "--deny", "Write(src/gen/**)")
	prefix := b.policyLine(t, false)
	r := b.contained(t, prefix, "mkdir -p dist/x; echo x > dist/a.js; mkdir -p src/gen && echo x > src/gen/a.go; touch top.txt src/ok.go && echo made")
	if !strings.Contains(r.stdout, "made") {
		t.Fatalf("root and src creation: %+v", r)
	}
	for _, p := range []string{"dist", "src/gen"} {
		if _, err := os.Lstat(filepath.Join(b.ws, p)); err == nil {
			t.Errorf("%s was created or left behind", p)
		}
	}
	for _, p := range []string{"top.txt", "src/ok.go"} {
		if _, err := os.Lstat(filepath.Join(b.ws, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestContainTempWorkspace: a workspace inside the temp dir's tree (a
// direct child of /tmp with TMPDIR unset, a deeper one, one inside a
// TMPDIR of its own) is writable as a workspace elsewhere is, root
// included, while what is protected in it stays so (.git/config, the
// hosts' names) and $JOULE_HOME beside it stays unreadable.
func TestContainTempWorkspace(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	if runtime.GOOS != "linux" {
		t.Skip("linux")
	}
	tmpdir := filepath.Join(t.TempDir(), "tmpdir")
	os.MkdirAll(tmpdir, 0o755)
	direct, err := os.MkdirTemp("/tmp", "joule-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAllForce(direct) })
	deeper, err := os.MkdirTemp("/tmp", "joule-deep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAllForce(deeper) })
	for _, c := range []struct {
		name, ws, tmpdir string
	}{
		{"a direct child of /tmp", direct, ""},
		{"deeper in /tmp", filepath.Join(deeper, "a", "b", "ws"), ""},
		{"in a TMPDIR of its own", filepath.Join(tmpdir, "x"), tmpdir},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.MkdirAll(filepath.Join(c.ws, "src"), 0o755)
			ws, err := filepath.EvalSymlinks(c.ws)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			env := []string{"JOULE_HOME=" + filepath.Join(dir, "jh"), "HOME=" + filepath.Join(dir, "home"),
				"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
			os.MkdirAll(filepath.Join(dir, "home"), 0o755)
			if c.tmpdir != "" {
				env = append(env, "TMPDIR="+c.tmpdir)
			} else {
				env = append(env, "TMPDIR=")
			}
			if r := joule(t, nil, env, "init", "--steward", "test.example", "--workspace", ws); r.code != 0 {
				t.Fatalf("init: %+v", r)
			}
			b := setUpRootBox(t, env, ws)
			r := b.bash(t, ws, b.rewrite(t, `touch top.txt && mkdir -p newdir src/a && echo hi > src/a/f && cat src/a/f && t=$(mktemp) && echo tmp > "$t" && cat "$t"`, false))
			if r.code != 0 || !strings.Contains(r.stdout, "hi\ntmp") {
				t.Fatalf("writes in a workspace in the temp tree: %+v", r)
			}
			prefix := b.policyLine(t, false)
			r = b.contained(t, prefix, `echo x >> .git/config; echo '{}' > .mcp.json; mkdir .gemini; cat "$JOULE_HOME/steward.key"; echo end`)
			if !strings.Contains(r.stdout, "end") {
				t.Fatalf("%+v", r)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); strings.Contains(string(b), "\nx\n") {
				t.Error(".git/config was written")
			}
			if key, _ := os.ReadFile(filepath.Join(dir, "jh", "steward.key")); len(key) > 0 && strings.Contains(r.stdout, strings.TrimSpace(string(key))) {
				t.Error("the steward key was read")
			}
			if p := b.planted(t, ws); len(p) > 0 {
				t.Errorf("planted: %v", p)
			}
		})
	}
}
