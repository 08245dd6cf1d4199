package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/sandbox"
	"github.com/joulehook/joule/plugins/hosts"
)

// execEnv is initHome's environment (the dev template active) with the
// real Go caches, a temp dir of its own and git's identity.
func execEnv(t *testing.T) ([]string, string) {
	t.Helper()
	env, ws := initHome(t)
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	caches := strings.Fields(string(out))
	tmp := t.TempDir()
	env = append(env, "GOCACHE="+caches[0], "GOMODCACHE="+caches[1], "TMPDIR="+tmp, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			os.MkdirAll(h, 0o755)
		}
	}
	return env, ws
}

func execIn(t *testing.T, env []string, dir, line string) result {
	t.Helper()
	cmd := exec.Command(jouleBin, "exec", "--", "/bin/bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout: string(out), code: code}
}

// TestExecOrdinaryWork runs what the dev template allows inside joule exec:
// the Go toolchain with its real caches, git, npm, writes in the workspace
// and the temp dir.
func TestExecOrdinaryWork(t *testing.T) {
	needLandlock(t)
	env, ws := execEnv(t)
	mod := filepath.Join(ws, "src", "mod")
	os.MkdirAll(mod, 0o755)
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/mod\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "main.go"), []byte("package main\n\nfunc add(a, b int) int { return a + b }\n\nfunc main() { println(add(1, 2)) }\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "main_test.go"), []byte("package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("old\n"), 0o644)
	// The workspace is a repository already, as it usually is.
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	steps := []struct{ name, dir, line, want string }{
		{"go test", mod, "go test -count=1 ./...", "ok  \texample.com/mod"},
		{"go vet", mod, "go vet ./... && echo vetted", "vetted"},
		{"go build", mod, "go build && ./mod", "3"},
		{"go build -o", mod, "go build -o out/app . && out/app", "3"},
		{"git", ws, "git init -q src/repo && cd src/repo && echo hi > f && git add f && git commit -qm first && git log --oneline | wc -l", "1"},
		{"git in the workspace repo", ws, "git add notes.txt && git commit -qm notes && git log --oneline | wc -l && git status --short src/mod", "1"},
		{"write in the workspace", ws, "echo new >> notes.txt && mkdir -p src/a/b && echo x > src/a/b/c && mv src/a/b/c src/a/d && rm -r src/a && cat notes.txt", "old\nnew"},
		{"temp files", ws, `f=$(mktemp) && echo t > "$f" && cat "$f" && rm "$f"`, "t"},
	}
	if _, err := exec.LookPath("npm"); err == nil {
		pkg := filepath.Join(ws, "src", "pkg")
		os.MkdirAll(pkg, 0o755)
		os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"pkg","version":"1.0.0","scripts":{"test":"node test.js"}}`), 0o644)
		os.WriteFile(filepath.Join(pkg, "test.js"), []byte("require('assert').strictEqual(1 + 1, 2); console.log('npm test passed')\n"), 0o644)
		steps = append(steps, struct{ name, dir, line, want string }{"npm test", pkg, "npm test", "npm test passed"})
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := execIn(t, env, s.dir, s.line)
			if r.code != 0 || !strings.Contains(r.stdout, s.want) {
				t.Fatalf("%s: exit %d, want %q in:\n%s", s.line, r.code, s.want, r.stdout)
			}
		})
	}
	// The workspace root holds none of the hosts' configuration, so each
	// protected name is a stand-in for the run: new entries can be made
	// there, a protected one cannot (docs/gate.md, "Containment"); with
	// Landlock alone, which has no stand-ins, the root is carved.
	r := execIn(t, env, ws, "touch top.txt && echo '{}' > .mcp.json")
	if sandbox.NamespacesAvailable() {
		if _, err := os.Stat(filepath.Join(ws, "top.txt")); err != nil || r.code == 0 || !strings.Contains(r.stdout, ".mcp.json") {
			t.Fatalf("creating entries at the workspace root: %+v", r)
		}
	} else if r.code == 0 || !strings.Contains(r.stdout, "Permission denied") {
		t.Fatalf("creating an entry in the workspace root with Landlock alone: %+v", r)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".mcp.json")); err == nil {
		t.Fatal(".mcp.json was created")
	}
}

// rootProtected are the first names of the protected paths of a workspace
// ws (gate.ProtectedPaths with the registry's hosts, less .git), a
// trailing / for a directory: while one is absent, the namespace
// construction holds a stand-in at it for each command's run, and
// Landlock alone refuses creating entries at the workspace root.
func rootProtected(ws string) []string {
	var out []string
	for _, p := range gate.ProtectedPaths("", "", []string{ws}, hosts.Config(nil, ""))[1:] {
		first, rest, _ := strings.Cut(strings.TrimPrefix(p, ws+string(filepath.Separator)), string(filepath.Separator))
		// Below it, or a dot name without an extension (.codex): a directory.
		if rest != "" || strings.HasPrefix(first, ".") && !strings.Contains(first[1:], ".") {
			first += "/"
		}
		if first != ".git/" && !slices.Contains(out, first) {
			out = append(out, first)
		}
	}
	return out
}

// TestExecRootLevelCreation: in a workspace that holds only
// .claude/settings.json of the hosts' configuration (every other protected
// name of the root absent), the namespace construction lets ordinary work
// create entries at the root (a new file, a root module's binary, git
// init, npm install), while the protected paths stay read-only and the
// absent ones uncreatable, and nothing of the stand-ins is left. With
// Landlock alone (no namespaces), the root stays closed.
func TestExecRootLevelCreation(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	env, ws := execEnv(t)
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/root\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() { println(\"built\") }\n"), 0o644)
	steps := []struct{ name, line, want string }{
		{"touch", "touch new.txt && mkdir newdir && echo x > newdir/f && mv new.txt renamed.txt && rm renamed.txt && ls", "newdir"},
		{"go build", "go build && ./root", "built"},
		{"git init", "git init -q && git add main.go go.mod && git commit -qm root && git log --oneline | wc -l", "1"},
	}
	if _, err := exec.LookPath("npm"); err == nil {
		os.MkdirAll(filepath.Join(ws, "dep"), 0o755)
		os.WriteFile(filepath.Join(ws, "dep", "package.json"), []byte(`{"name":"dep","version":"1.0.0"}`), 0o644)
		os.WriteFile(filepath.Join(ws, "package.json"), []byte(`{"name":"root","version":"1.0.0","dependencies":{"dep":"file:./dep"}}`), 0o644)
		steps = append(steps, struct{ name, line, want string }{"npm install", "npm install --offline --no-audit --no-fund >/dev/null && ls node_modules", "dep"})
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := execIn(t, env, ws, s.line)
			if r.code != 0 || !strings.Contains(r.stdout, s.want) {
				t.Fatalf("%s: exit %d, want %q in:\n%s", s.line, r.code, s.want, r.stdout)
			}
		})
	}
	for _, line := range []string{
		`echo '{"hooks":{}}' > .claude/settings.json`, `echo '{}' > .mcp.json`, `rm .mcp.json`, `mv .claude .claude.old`,
		`echo '{}' > .claude/settings.local.json`, `mkdir .claude/hooks`, `echo '{}' > .gemini/settings.json`,
		`echo '{}' > opencode.json`, `mkdir -p .opencode/plugin`, `chmod 644 opencode.jsonc`,
	} {
		r := execIn(t, env, ws, line)
		if r.code == 0 {
			t.Errorf("%s: allowed inside containment:\n%s", line, r.stdout)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json")); string(b) != "{}\n" {
		t.Errorf(".claude/settings.json changed: %q", b)
	}
	for _, p := range []string{".claude/settings.local.json", ".claude/hooks", ".gemini", ".mcp.json", "opencode.json", "opencode.jsonc", ".opencode"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s was created inside containment, or left", p)
		}
	}
	// An absent protected file reads as one that may not be opened
	// (EACCES), which hosts' configuration readers take for "not there";
	// OpenCode fails its turn on anything else (a socket node's own ENXIO).
	rd := execIn(t, env, ws, "cat opencode.json .mcp.json")
	if rd.code == 0 || strings.Count(rd.stdout, "Permission denied") != 2 || strings.Contains(rd.stdout, "No such device") {
		t.Errorf("reading the absent opencode.json and .mcp.json inside containment: %+v", rd)
	}
	r := execIn(t, append(env, sandbox.LandlockOnlyEnv+"=1"), ws, "touch top.txt")
	if r.code == 0 {
		t.Errorf("with Landlock alone, an entry was created at the workspace root:\n%s", r.stdout)
	}
}

// TestExecWithoutLandlock: where the kernel has no Landlock, joule exec
// says so and refuses, unless the configuration allows running unconfined;
// joule hook --contain denies, saying the same.
func TestExecWithoutLandlock(t *testing.T) {
	env, ws := execEnv(t)
	env = append(env, simulateNoLandlock+"=1")
	var jh string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "JOULE_HOME="); ok {
			jh = v
		}
	}
	r := execIn(t, env, ws, "touch src/ran")
	if r.code != 126 || !strings.Contains(r.stdout, "Landlock is not available") || !strings.Contains(r.stdout, `"exec_fallback": "unconfined"`) {
		t.Fatalf("without Landlock: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "src", "ran")); err == nil {
		t.Fatal("the program ran although the fallback is refuse")
	}
	payload := `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"` + ws + `"}`
	h := joule(t, []byte(payload), env, "hook", "claude-code", "--contain")
	if !strings.Contains(h.stdout, `"permissionDecision":"deny"`) || !strings.Contains(h.stdout, "containment-unavailable") {
		t.Fatalf("hook --contain without Landlock: %+v", h)
	}

	os.WriteFile(filepath.Join(jh, ConfigFile), []byte(`{"exec_fallback":"unconfined"}`), 0o600)
	if r := execIn(t, env, ws, "true"); r.code != 126 || !strings.Contains(r.stdout, "configuration not recorded") {
		t.Fatalf("exec_fallback written without a receipt still ran the command unconfined: %+v", r)
	}
	acceptTrust(t, env)
	r = execIn(t, env, ws, "touch src/ran && echo ran")
	if r.code != 0 || strings.Count(r.stdout, "Landlock is not available") != 1 || !strings.Contains(r.stdout, "unconfined") || !strings.Contains(r.stdout, "ran") {
		t.Fatalf("with exec_fallback unconfined: %+v", r)
	}
	h = joule(t, []byte(payload), env, "hook", "claude-code", "--contain")
	if h.code != 0 || strings.TrimSpace(h.stdout) != "" {
		t.Fatalf("hook --contain with the fallback should allow as analysis decides (no output): %+v", h)
	}
}

// TestHookContainRewrites checks the rewritten input: the joule binary, the
// session, the original line quoted, TCP only for a network command, and a
// line that comes back wrapped judged by its inner line.
func TestHookContainRewrites(t *testing.T) {
	needLandlock(t)
	env, ws := execEnv(t)
	type answer struct {
		HookSpecificOutput struct {
			PermissionDecision string            `json:"permissionDecision"`
			UpdatedInput       map[string]string `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	hook := func(line string) answer {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]string{"command": line, "description": "d"}, "cwd": ws})
		r := joule(t, payload, env, "hook", "claude-code", "--contain")
		var a answer
		if r.code != 0 || (r.stdout != "" && json.Unmarshal([]byte(r.stdout), &a) != nil) {
			t.Fatalf("hook: %+v", r)
		}
		return a
	}
	a := hook("echo 'it''s' && go test ./...")
	runner := filepath.Join(filepath.Dir(jouleBin), "joule-exec")
	got := a.HookSpecificOutput.UpdatedInput["command"]
	prefix := `'` + runner + `' --policy '` + filepath.Join(jhOf(env), "policy") + `/`
	suffix := `.json' -- /bin/bash -c 'echo '\''it'\'''\''s'\'' && go test ./...'`
	if a.HookSpecificOutput.PermissionDecision != "" || !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) ||
		len(got) != len(prefix)+64+len(suffix) || a.HookSpecificOutput.UpdatedInput["description"] != "d" {
		t.Fatalf("rewrite: %+v\nwant command %s<sha256>%s", a, prefix, suffix)
	}
	want := got
	if a := hook("go mod download"); !strings.Contains(a.HookSpecificOutput.UpdatedInput["command"], " --net -- ") {
		t.Fatalf("a network command gets --net: %+v", a)
	}
	// A call the host runs in the background gets --background (no link
	// made, no directory moved), and comes back unwrapped the same way.
	payload, _ := json.Marshal(map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "go test ./...", "run_in_background": true}, "cwd": ws})
	r := joule(t, payload, env, "hook", "claude-code", "--contain")
	var bg struct {
		HookSpecificOutput struct {
			UpdatedInput map[string]any `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	json.Unmarshal([]byte(r.stdout), &bg)
	bgLine, _ := bg.HookSpecificOutput.UpdatedInput["command"].(string)
	if !strings.HasSuffix(bgLine, `.json' --background -- /bin/bash -c 'go test ./...'`) || bg.HookSpecificOutput.UpdatedInput["run_in_background"] != true {
		t.Fatalf("a background call: %+v", r)
	}
	if a := hook(bgLine); !strings.HasSuffix(a.HookSpecificOutput.UpdatedInput["command"], `.json' -- /bin/bash -c 'go test ./...'`) {
		t.Fatalf("a line wrapped with --background is judged by its inner line: %+v", a)
	}
	if a := hook(want); a.HookSpecificOutput.UpdatedInput["command"] != want {
		t.Fatalf("the wrapped line is judged by its inner line and wrapped the same: %+v", a)
	}
	old := `'` + jouleBin + `' exec --session 's1' -- /bin/bash -c 'echo '\''it'\'''\''s'\'' && go test ./...'`
	if a := hook(old); a.HookSpecificOutput.UpdatedInput["command"] != want {
		t.Fatalf("a line wrapped in joule exec is judged by its inner line and wrapped in joule-exec: %+v", a)
	}
	if a := hook("curl http://127.0.0.1:1/"); a.HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("a deny stays a deny: %+v", a)
	}
}

func jhOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "JOULE_HOME="); ok {
			return v
		}
	}
	return ""
}

// TestJouleExecPolicy runs what joule hook --contain rewrote, as the host
// would: the line works where the grant lets it write and is refused
// elsewhere; a policy changed after the gate wrote it, or expired, does
// not run at all; and a contained command that runs joule-exec itself
// with a policy of its own making (every path writable) stays as
// confined as it was.
func TestJouleExecPolicy(t *testing.T) {
	needLandlock(t)
	env, ws := execEnv(t)
	payload, _ := json.Marshal(map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]string{"command": "ls"}, "cwd": ws})
	r := joule(t, payload, env, "hook", "claude-code", "--contain")
	var a struct {
		HookSpecificOutput struct {
			UpdatedInput map[string]string `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("hook: %+v", r)
	}
	rewritten := a.HookSpecificOutput.UpdatedInput["command"]
	prefix, _, ok := strings.Cut(rewritten, " -- /bin/bash -c ")
	if !ok {
		t.Fatalf("rewrite: %s", rewritten)
	}
	runner := filepath.Join(filepath.Dir(jouleBin), "joule-exec")
	policy := strings.Trim(strings.TrimPrefix(prefix, "'"+runner+"' --policy "), "'")
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	run := func(line string) result {
		t.Helper()
		cmd := exec.Command("/bin/bash", "-c", prefix+" -- /bin/bash -c "+shellQuoteT(line))
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{stdout: string(out), code: code}
	}
	if r := run("echo hi > src/ok && cat src/ok"); r.code != 0 || r.stdout != "hi\n" {
		t.Fatalf("a write the grant allows: %+v", r)
	}
	// Read-only in the namespace construction (EROFS), refused by Landlock
	// alone (EACCES): either is the kernel's refusal.
	if r := run("touch " + home + "/outside"); r.code == 0 || !strings.Contains(r.stdout, "Permission denied") && !strings.Contains(r.stdout, "Read-only file system") {
		t.Fatalf("a write outside: %+v", r)
	}
	if r := run("cat " + policy); r.code == 0 || !strings.Contains(r.stdout, "Permission denied") {
		t.Fatalf("the policy read from inside: %+v", r)
	}
	// A policy of the command's own making, with everything writable,
	// run by joule-exec inside the sandbox: Landlock only narrows.
	evil := filepath.Join(t.TempDir(), "evil")
	os.MkdirAll(evil, 0o700)
	wide := sandboxPolicyFile(t, evil, `{"links":[{"allow":["Read","Write","Bash"]}],"roots":["/"],"home":"","protected":null,"private":null}`)
	// The outer confinement holds either way: its read-only mount (EROFS)
	// or Landlock (EACCES) refuses the write.
	if r := run(runner + " --policy " + wide + " -- /bin/touch " + home + "/outside"); r.code == 0 || !strings.Contains(r.stdout, "Permission denied") && !strings.Contains(r.stdout, "Read-only file system") {
		t.Fatalf("a nested joule-exec with a wider policy: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(home, "outside")); err == nil {
		t.Fatal("a file was created outside the grant")
	}
	// Changed after the gate wrote it: refused before anything runs.
	b, _ := os.ReadFile(policy)
	os.WriteFile(policy, []byte(strings.Replace(string(b), `"Write`, `"Xrite`, 1)), 0o600)
	if r := run("touch src/ran"); r.code != 126 || !strings.Contains(r.stdout, "does not hash to its name") {
		t.Fatalf("a changed policy: %+v", r)
	}
	os.WriteFile(policy, b, 0o600)
	os.Chmod(policy, 0o644)
	if r := run("touch src/ran"); r.code != 126 || !strings.Contains(r.stdout, "want 0600") {
		t.Fatalf("a policy others can read: %+v", r)
	}
	os.Chmod(policy, 0o600)
	expired := sandboxPolicyFile(t, evil, `{"links":[{"allow":["Read","Write","Bash"]}],"roots":["`+ws+`"],"home":"","protected":null,"private":null,"not_after":1}`)
	if r := run(runner + " --policy " + expired + " -- /bin/true"); r.code != 126 || !strings.Contains(r.stdout, "expired") {
		t.Fatalf("an expired policy: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "src", "ran")); err == nil {
		t.Fatal("a refused policy ran its command")
	}
}

// sandboxPolicyFile writes body as a policy file named by its SHA-256.
func sandboxPolicyFile(t *testing.T, dir, body string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	p := filepath.Join(dir, hex.EncodeToString(sum[:])+".json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func shellQuoteT(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hostConfigTree lays out, below ws, every host's per-project
// configuration path, and every user path a variable moves, with those
// variables pointing into ws/moved (inside the write set, so that only the
// protection keeps them read-only): a directory holds a file f, a file
// (a name with an extension, or .env) holds "orig". It returns the
// variables and the paths.
func hostConfigTree(t *testing.T, ws string) (env, paths []string) {
	t.Helper()
	moved := filepath.Join(ws, "moved")
	vars := map[string]string{}
	for _, h := range hosts.All() {
		for _, d := range h.UserDirs {
			if d.Home != "" {
				vars[d.Env] = filepath.Join(moved, strings.ToLower(d.Env))
			}
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	c := hosts.Config(func(k string) string { return vars[k] }, ws)
	for _, p := range c.Project {
		paths = append(paths, filepath.Join(ws, p))
	}
	paths = append(paths, c.Abs...)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for _, p := range paths {
		if isFileName(p) {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte("orig"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			os.MkdirAll(p, 0o755)
			if err := os.WriteFile(filepath.Join(p, "f"), []byte("orig"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return env, paths
}

func isFileName(p string) bool {
	b := filepath.Base(p)
	return b == ".env" || strings.Contains(b[1:], ".")
}

// tamperScript tries, on each path, what persists past containment: write
// it (or a file in it), create beside what is there, remove it, and change
// its mode.
func tamperScript(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		q := "'" + p + "'"
		if isFileName(p) {
			b.WriteString("echo pwned > " + q + "; chmod 777 " + q + "; rm -f " + q + "\n")
		} else {
			b.WriteString("echo pwned > " + q + "/f; touch " + q + "/new; chmod 777 " + q + "; rm -f " + q + "/f\n")
		}
	}
	b.WriteString("echo done\n")
	return b.String()
}

// tampered lists the paths the script changed.
func tampered(paths []string) []string {
	var out []string
	for _, p := range paths {
		f := p
		if !isFileName(p) {
			f = filepath.Join(p, "f")
			if _, err := os.Lstat(filepath.Join(p, "new")); err == nil {
				out = append(out, p+" (new entry)")
				continue
			}
		}
		b, err := os.ReadFile(f)
		fi, _ := os.Stat(p)
		if err != nil || string(b) != "orig" || fi == nil || fi.Mode().Perm() == 0o777 {
			out = append(out, p)
		}
	}
	return out
}

// TestExecHostConfigReadOnly: inside containment every host's
// configuration is read-only, in the workspace and where a variable moved
// it, though it lies inside the write set: no write, no new entry, no
// removal, no chmod. The same script run unconfined changes every one, so
// each case is a real tamper.
func TestExecHostConfigReadOnly(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)

	control := t.TempDir()
	_, controlPaths := hostConfigTree(t, control)
	if out, err := exec.Command("/bin/bash", "-c", tamperScript(controlPaths)).CombinedOutput(); err != nil {
		t.Fatalf("control: %v\n%s", err, out)
	}
	if got := tampered(controlPaths); len(got) != len(controlPaths) {
		t.Fatalf("unconfined, the script changed %d of %d paths, so the case proves nothing", len(got), len(controlPaths))
	}

	env, ws := execEnv(t)
	moved, paths := hostConfigTree(t, ws)
	if len(paths) < 60 {
		t.Fatalf("only %d paths", len(paths))
	}
	r := execIn(t, append(env, moved...), ws, tamperScript(paths))
	if !strings.Contains(r.stdout, "done") {
		t.Fatalf("the script did not run to its end inside containment (exit %d):\n%s", r.code, r.stdout)
	}
	for _, p := range tampered(paths) {
		t.Errorf("changed inside containment: %s", p)
	}
	// The rest of the write set stays writable, the moved tree's other
	// files among them.
	r = execIn(t, append(env, moved...), ws, "echo ok > src/new.txt && echo ok > moved/other.txt && cat src/new.txt moved/other.txt")
	if r.code != 0 || strings.Count(r.stdout, "ok") != 2 {
		t.Errorf("ordinary writes beside the protected paths: exit %d\n%s", r.code, r.stdout)
	}
}
