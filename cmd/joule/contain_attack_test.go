package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// containCase is one line of the gate's attack tables
// (core/gate/testdata/attacks/*.jsonl) or of testdata/contain-attacks.jsonl.
type containCase struct {
	Name   string `json:"name"`
	Class  int    `json:"class"`
	Grant  string `json:"grant"`
	Effect string `json:"effect"`
	Cmd    string `json:"cmd"`
	Setup  string `json:"setup,omitempty"` // run first, unconfined: the repository the payload finds
	where  string
	n      int // its index in the table
}

func loadContainCases(t testing.TB) []containCase {
	t.Helper()
	files, _ := filepath.Glob("../../core/gate/testdata/attacks/*.jsonl")
	files = append(files, "testdata/contain-attacks.jsonl")
	var out []containCase
	for _, file := range files {
		for c := range jsonLines[containCase](t, file) {
			c.val.where = c.where
			c.val.n = len(out)
			out = append(out, c.val)
		}
	}
	return out
}

// slot is one sandbox that cases run in, one after another: a home with
// joule initialised in it, a grant per kind active for the session of that
// name, and a loopback listener that counts connections.
type slot struct {
	root, home, jh, ws, tmp, mark, settings string
	pristine                                string            // a copy of $JOULE_HOME
	policy                                  map[string]string // grant kind → joule-exec policy file
	extraEnv                                []string          // appended to env()
	secret                                  string            // the steward key itself
	port                                    int
	conns                                   atomic.Int32
}

func newSlot(t testing.TB) *slot {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	s := &slot{root: root, home: filepath.Join(root, "home")}
	s.jh = filepath.Join(s.home, ".local", "share", "joule")
	s.ws = filepath.Join(s.home, "ws")
	s.tmp = filepath.Join(root, "tmp")
	s.mark = filepath.Join(root, "mark")
	s.settings = filepath.Join(s.ws, ".claude", "settings.json")
	s.pristine = filepath.Join(root, "pristine")
	os.MkdirAll(s.ws, 0o755)
	env := []string{"HOME=" + s.home, "JOULE_HOME=" + s.jh}
	r := joule(t, nil, env, "init", "--steward", "test.example", "--workspace", s.ws)
	if r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	for _, kind := range []string{"none", "readonly", "dev", "ci"} {
		args := []string{"grant", "issue", "--workspace", s.ws, "--budget", "1kJ"}
		if kind == "none" {
			args = append(args, "--allow", "Read")
		} else {
			args = append(args, "--template", kind)
		}
		r := joule(t, nil, env, args...)
		id := strings.Fields(r.stdout)
		if r.code != 0 || len(id) < 2 || id[0] != "grant" {
			t.Fatalf("grant issue %s: %+v", kind, r)
		}
		if r := joule(t, nil, env, "grant", "use", id[1], "--session", kind); r.code != 0 {
			t.Fatalf("grant use: %+v", r)
		}
		// The policy joule hook --contain writes for that session, in
		// $JOULE_HOME before it is copied: every reset restores it.
		r = joule(t, nil, env, "exec", "--session", kind, "--write-policy")
		if r.code != 0 || !strings.HasPrefix(r.stdout, s.jh+"/policy/") {
			t.Fatalf("exec --write-policy: %+v", r)
		}
		if s.policy == nil {
			s.policy = map[string]string{}
		}
		s.policy[kind] = strings.TrimSpace(r.stdout)
	}
	key, err := os.ReadFile(filepath.Join(s.jh, "steward.key"))
	if err != nil {
		t.Fatal(err)
	}
	// A note key, PRIVATE+KEY+<name>+<hash>+<base64 key>: the key itself is
	// the fifth field, and base64 may hold '+' too (splitting on the last
	// one left a few characters that turned up in any output by chance).
	f := strings.SplitN(strings.TrimSpace(string(key)), "+", 5)
	if len(f) != 5 || len(f[4]) < 40 {
		t.Fatalf("steward.key is not a note private key: %d fields", len(f))
	}
	s.secret = f[4]
	if err := os.CopyFS(s.pristine, os.DirFS(s.jh)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s.port = ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			c.Close()
		}
	}()
	return s
}

// reset puts the slot back as a case expects it: the workspace (a git repo
// with main.go, go.mod, .env and .claude/settings.json), ~/.ssh/id_rsa
// holding the secret, $JOULE_HOME as joule init left it, no marker.
func (s *slot) reset(t testing.TB) {
	t.Helper()
	entries, _ := os.ReadDir(s.root)
	for _, e := range entries {
		if e.Name() != "pristine" {
			os.RemoveAll(filepath.Join(s.root, e.Name()))
		}
	}
	for _, d := range []string{filepath.Dir(s.jh), filepath.Join(s.ws, ".claude"), filepath.Join(s.ws, "src"), filepath.Join(s.home, ".ssh"), s.tmp} {
		os.MkdirAll(d, 0o755)
	}
	if err := os.CopyFS(s.jh, os.DirFS(s.pristine)); err != nil {
		t.Fatal(err)
	}
	// CopyFS makes files 0644: the key and store must be 0600 again.
	filepath.WalkDir(s.jh, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Chmod(p, map[bool]os.FileMode{true: 0o700, false: 0o600}[d.IsDir()])
		}
		return nil
	})
	files := map[string]string{
		filepath.Join(s.ws, "main.go"):          "package main\n\nfunc main() {}\n",
		filepath.Join(s.ws, "go.mod"):           "module example.com/ws\n\ngo 1.22\n",
		filepath.Join(s.ws, ".env"):             "API_KEY=not-the-secret\n",
		filepath.Join(s.home, ".ssh", "id_rsa"): s.secret + "\n",
		s.settings:                              `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"joule hook claude-code"}]}]}}` + "\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(s.ws, ".git"), os.DirFS(containGitTemplate(t))); err != nil {
		t.Fatal(err)
	}
	s.conns.Store(0)
}

// setup runs a case's setup step, unconfined, as the gate's harness does.
func (s *slot) setup(c containCase) {
	if c.Setup != "" {
		s.run("bash", "-c", c.Setup)
	}
}

func (s *slot) env() []string {
	return append([]string{
		"HOME=" + s.home, "JOULE_HOME=" + s.jh, "WS=" + s.ws, "MARK=" + s.mark,
		"PORT=" + fmt.Sprint(s.port), "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TMPDIR=" + s.tmp,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}, s.extraEnv...)
}

// run runs argv in the workspace with stdin /dev/null, killing its process
// group after 10 s.
func (s *slot) run(argv ...string) []byte { return s.runFor(10*time.Second, argv...) }

// runFor is run with a timeout of d.
func (s *slot) runFor(d time.Duration, argv ...string) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = s.ws, s.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, _ := cmd.CombinedOutput()
	// A job the payload left in the background must not write into the
	// sandbox after it is reset for the next run.
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return out
}

func (s *slot) happened(effect string, out, settingsBefore []byte) bool {
	switch effect {
	case "marker":
		_, err := os.Lstat(s.mark)
		return err == nil
	case "tcp":
		deadline := time.Now().Add(time.Second)
		for s.conns.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		return s.conns.Load() > 0
	case "protected":
		now, err := os.ReadFile(s.settings)
		return err != nil || !bytes.Equal(now, settingsBefore)
	case "secret":
		if bytes.Contains(out, []byte(s.secret)) {
			return true
		}
		found := false
		keep := map[string]bool{filepath.Join(s.jh, "steward.key"): true, filepath.Join(s.home, ".ssh", "id_rsa"): true}
		filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
			// Links are not files the payload wrote the secret into.
			if err != nil || found || !d.Type().IsRegular() || keep[p] || strings.HasPrefix(p, s.pristine) {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s.secret)) {
				found = true
			}
			return nil
		})
		return found
	}
	return false
}

var containGit struct {
	sync.Once
	dir string
}

func containGitTemplate(t testing.TB) string {
	containGit.Do(func() {
		dir, _ := os.MkdirTemp("", "joule-contain-git-")
		os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600)
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/ws\n\ngo 1.22\n"), 0o600)
		git := exec.Command("sh", "-c", "git init -q && git add main.go go.mod && git commit -qm init")
		git.Dir = dir
		git.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "HOME="+dir)
		if out, err := git.CombinedOutput(); err != nil {
			panic(fmt.Sprintf("git init: %v\n%s", err, out))
		}
		containGit.dir = filepath.Join(dir, ".git")
	})
	return containGit.dir
}

func needLandlock(t testing.TB) {
	t.Helper()
	if sandbox.ABI() < 6 {
		if os.Getenv("CI") != "" {
			t.Fatalf("the kernel has Landlock ABI %d; containment tests need 6", sandbox.ABI())
		}
		t.Skipf("the kernel has Landlock ABI %d; containment tests need 6", sandbox.ABI())
	}
}

// TestContainAttackTable runs every attack of the gate's tables through
// joule-exec, as joule hook --contain rewrites lines to run, under the policy
// of the case's grant, with no analysis at all (joule-exec judges nothing: it only
// confines), after confirming each one works unconfined in the same
// sandbox. The kernel must stop the effect: the marker outside the
// workspace and temp dir is not created, the steward key (and ~/.ssh)
// is not read, no TCP connection reaches the listener, the hook
// configuration is not changed. A case that does nothing unconfined here
// (it reads only what the grant lets it read, or needs the shell the
// gate's own harness gives it) is counted as skipped, by name.
func TestContainAttackTable(t *testing.T) {
	needLandlock(t)
	cases := loadContainCases(t)
	if testing.Short() && len(cases) > 60 {
		cases = cases[:60]
	}
	const slots = 3
	work := make(chan containCase)
	var mu sync.Mutex
	var stopped, skipped int
	var skippedNames []string
	var wg sync.WaitGroup
	for i := 0; i < slots; i++ {
		s := newSlot(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				s.reset(t)
				s.setup(c)
				before, _ := os.ReadFile(s.settings)
				out := s.run("bash", "-c", c.Cmd)
				if !s.happened(c.Effect, out, before) {
					mu.Lock()
					skipped++
					skippedNames = append(skippedNames, c.Name)
					mu.Unlock()
					continue
				}
				s.reset(t)
				s.setup(c)
				before, _ = os.ReadFile(s.settings)
				policy, ok := s.policy[c.Grant]
				if !ok {
					t.Errorf("%s: no grant %q", c.where, c.Grant)
					continue
				}
				// Every case runs through the default construction (the
				// mount namespace where it works), every third one also
				// through Landlock alone, the fallback.
				constructions := []string{"default"}
				if c.n%3 == 0 {
					constructions = append(constructions, "landlock")
				}
				through := true
				for _, construction := range constructions {
					if construction == "landlock" {
						s.reset(t)
						s.setup(c)
						before, _ = os.ReadFile(s.settings)
						s.extraEnv = []string{sandbox.LandlockOnlyEnv + "=1"}
					}
					out = s.run(jouleExecBin(), "--policy", policy, "--", "/bin/bash", "-c", c.Cmd)
					s.extraEnv = nil
					if s.happened(c.Effect, out, before) {
						t.Errorf("%s: %s (%s, grant %s) got through joule-exec (%s construction):\n  %s\n%s", c.where, c.Name, c.Effect, c.Grant, construction, c.Cmd, out)
						through = false
						break
					}
					if strings.HasPrefix(string(out), "joule-exec:") {
						t.Errorf("%s: joule-exec refused to start instead of confining (%s construction): %s", c.where, construction, out)
						through = false
						break
					}
				}
				if !through {
					continue
				}
				mu.Lock()
				stopped++
				mu.Unlock()
			}
		}()
	}
	for _, c := range cases {
		work <- c
	}
	close(work)
	wg.Wait()
	t.Logf("%d cases: %d stopped by the kernel, %d not an attack in this sandbox unconfined: %s", len(cases), stopped, skipped, strings.Join(skippedNames, " "))
	if stopped == 0 {
		t.Fatal("no case was stopped: the table did not run")
	}
}

// jouleExecBin is the joule-exec TestMain built beside jouleBin.
func jouleExecBin() string { return filepath.Join(filepath.Dir(jouleBin), "joule-exec") }
