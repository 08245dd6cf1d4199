package gate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
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

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
)

// attackCase is one line of testdata/attacks/*.jsonl: a real payload, the
// grant it runs under, and the effect that proves it is an attack.
type attackCase struct {
	Name   string `json:"name"`
	Class  int    `json:"class"`
	Grant  string `json:"grant"`  // "none" (Read only, no Bash rule) or a template name
	Effect string `json:"effect"` // marker, secret, tcp or protected
	Cmd    string `json:"cmd"`
	// Setup, when given, runs first and is not judged: the state of a
	// repository the payload finds (a hook configuration committed).
	Setup string `json:"setup,omitempty"`
	file  string
	line  int
}

// benignCase is one line of testdata/benign.jsonl: a command the grant must
// allow, so that closing a bypass does not deny ordinary work.
type benignCase struct {
	Name  string `json:"name"`
	Grant string `json:"grant"`
	Cmd   string `json:"cmd"`
}

// readJSONL decodes every non-comment line of a JSON Lines file strictly.
func readJSONL[T any](t testing.TB, path string, each func(v T, line int)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var v T
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		each(v, n)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func loadAttacks(t testing.TB) []attackCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "attacks", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no attack tables in testdata/attacks: %v", err)
	}
	var cases []attackCase
	names := map[string]string{}
	for _, file := range files {
		readJSONL(t, file, func(c attackCase, line int) {
			c.file, c.line = file, line
			where := fmt.Sprintf("%s:%d", file, line)
			switch {
			case c.Name == "" || c.Cmd == "":
				t.Fatalf("%s: a case needs a name and a cmd", where)
			case names[c.Name] != "":
				t.Fatalf("%s: name %q is also used at %s", where, c.Name, names[c.Name])
			case !validEffect(c.Effect):
				t.Fatalf("%s: effect %q is not marker, secret, tcp or protected", where, c.Effect)
			case c.Grant != "none" && grant.Templates[c.Grant].Allow == nil:
				t.Fatalf("%s: grant %q is neither none nor a template", where, c.Grant)
			}
			names[c.Name] = where
			cases = append(cases, c)
		})
	}
	return cases
}

func validEffect(e string) bool {
	switch e {
	case "marker", "secret", "tcp", "protected":
		return true
	}
	return false
}

var gitOnce struct {
	sync.Once
	dir string
	err error
}

// gitTemplate returns a .git directory with main.go and go.mod committed,
// made once and copied into each sandbox: a git init and commit per case
// would cost more than the cases.
func gitTemplate(t testing.TB) string {
	gitOnce.Do(func() {
		dir, err := os.MkdirTemp("", "joule-attack-git-")
		if err != nil {
			gitOnce.err = err
			return
		}
		os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600)
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/ws\n\ngo 1.22\n"), 0o600)
		git := exec.Command("sh", "-c", "git init -q && git add main.go go.mod && git commit -qm init")
		git.Dir = dir
		git.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "HOME="+dir)
		if out, err := git.CombinedOutput(); err != nil {
			gitOnce.err = fmt.Errorf("git init: %v\n%s", err, out)
			return
		}
		gitOnce.dir = filepath.Join(dir, ".git")
	})
	if gitOnce.err != nil {
		t.Fatal(gitOnce.err)
	}
	return gitOnce.dir
}

// arena is a throwaway home and workspace in which a payload runs for real.
type arena struct {
	root, home, jh, ws, mark, settings string
	secret                             string
	port                               int
	conns                              atomic.Int32
	ln                                 net.Listener
}

func newSandbox(t testing.TB) *arena {
	t.Helper()
	// Not t.TempDir: a payload may leave a process behind that still
	// writes there (go's telemetry, a background job) when the test ends.
	dir, err := os.MkdirTemp("", "joule-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 20 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	})
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &arena{root: root, home: filepath.Join(root, "home")}
	s.jh = filepath.Join(s.home, ".local", "share", "joule")
	s.ws = filepath.Join(s.home, "ws")
	s.mark = filepath.Join(root, "mark")
	s.settings = filepath.Join(s.ws, ".claude", "settings.json")
	var b [16]byte
	rand.Read(b[:])
	s.secret = "joule-secret-" + hex.EncodeToString(b[:])
	for _, d := range []string{s.jh, filepath.Join(s.ws, ".claude"), filepath.Join(s.ws, "src"), filepath.Join(s.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(s.jh, "steward.key"):      s.secret + "\n",
		filepath.Join(s.ws, "main.go"):          "package main\n\nfunc main() {}\n",
		filepath.Join(s.ws, "go.mod"):           "module example.com/ws\n\ngo 1.22\n",
		filepath.Join(s.ws, ".env"):             "API_KEY=" + s.secret + "\n",
		filepath.Join(s.home, ".ssh", "id_rsa"): s.secret + "\n",
		s.settings:                              `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"joule hook claude-code"}]}]}}` + "\n",
	}
	for p, content := range files {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(s.ws, ".git"), os.DirFS(gitTemplate(t))); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
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
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *arena) env() []string {
	return []string{
		"HOME=" + s.home, "JOULE_HOME=" + s.jh, "WS=" + s.ws, "MARK=" + s.mark,
		"PORT=" + fmt.Sprint(s.port), "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TMPDIR=" + s.root,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		// The toolchains' own caches, offline, so go and npm payloads run
		// as they would in the user's session.
		"GOCACHE=" + goEnv("GOCACHE"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOTOOLCHAIN=local", "GOPROXY=off",
		"GOTELEMETRY=off", "npm_config_update_notifier=false", "npm_config_offline=true",
	}
}

var goEnvs sync.Map

// goEnv is `go env NAME`, asked once.
func goEnv(name string) string {
	if v, ok := goEnvs.Load(name); ok {
		return v.(string)
	}
	out, _ := exec.Command("go", "env", name).Output()
	v := strings.TrimSpace(string(out))
	goEnvs.Store(name, v)
	return v
}

// run runs line with bash -c in the workspace, as a host's Bash tool does,
// and returns what it printed. The whole process group is killed at the
// deadline, which is generous: payloads that build a Go program or run npm
// take seconds, and many more on a loaded machine.
func (s *arena) run(t testing.TB, line string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
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

// happened reports whether the payload's effect took place, and what was
// seen when it did not.
func (s *arena) happened(effect string, out []byte, settingsBefore []byte) (bool, string) {
	switch effect {
	case "marker":
		_, err := os.Lstat(s.mark)
		return err == nil, "no file at $MARK"
	case "tcp":
		deadline := time.Now().Add(2 * time.Second)
		for s.conns.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		return s.conns.Load() > 0, "no connection reached 127.0.0.1:$PORT"
	case "protected":
		now, err := os.ReadFile(s.settings)
		return err != nil || !bytes.Equal(now, settingsBefore), ".claude/settings.json unchanged"
	case "secret":
		if bytes.Contains(out, []byte(s.secret)) {
			return true, ""
		}
		found := false
		keep := map[string]bool{filepath.Join(s.jh, "steward.key"): true, filepath.Join(s.ws, ".env"): true,
			filepath.Join(s.home, ".ssh", "id_rsa"): true}
		filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || found || d.IsDir() || keep[p] {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s.secret)) {
				found = true
			}
			return nil
		})
		return found, "the secret appeared neither in the output nor in a written file"
	}
	return false, "unknown effect"
}

// policy signs a one-link grant for the sandbox's workspace and returns the
// gate's policy for it, protected paths included.
func (s *arena) policy(t testing.TB, name string) *Policy {
	t.Helper()
	g := &grant.Grant{Subject: grant.AnySubject, Roots: []string{s.ws}, Allow: []string{"Read"}, BudgetUJ: 1 << 40}
	if name != "none" {
		tpl := grant.Templates[name]
		g.Allow, g.Ask, g.Deny, g.Tiers = tpl.Allow, tpl.Ask, tpl.Deny, tpl.Tiers
	}
	now := time.Now()
	g.NotBefore, g.NotAfter = now.Add(-time.Hour).Unix(), now.Add(time.Hour).Unix()
	seed := core.Sum([]byte("attack table issuer"))
	is, err := grant.NewIssuer("attack-test", ed25519.NewKeyFromSeed(seed[:]))
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

func (s *arena) judge(t testing.TB, grantName, line string) Verdict {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"command": line})
	return Decide(&Event{SessionID: "attack", Tool: "Bash", Input: input, Cwd: s.ws}, s.policy(t, grantName))
}

// TestAttackTable runs every payload of testdata/attacks for real in a
// sandbox, to prove it is an attack, and requires the gate to deny it.
func TestAttackTable(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to confirm the attack table")
	}
	cases := loadAttacks(t)
	if len(cases) < 400 && os.Getenv("JOULE_ATTACKS_PARTIAL") == "" {
		t.Errorf("the attack table has %d cases; it must keep at least 400", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			if c.Setup != "" {
				if out := s.run(t, c.Setup+" || echo SETUP-FAILED"); bytes.Contains(out, []byte("SETUP-FAILED")) {
					t.Fatalf("%s:%d: setup failed:\n%s", c.file, c.line, out)
				}
			}
			// Judged first, as a host asks before it runs the line.
			v := s.judge(t, c.Grant, c.Cmd)
			if v.Decision != Deny {
				t.Errorf("%s:%d: %s under grant %s: %s %s (%s), want deny\n  %s", c.file, c.line, c.Name, c.Grant,
					v.Decision, v.Code, v.Reason, c.Cmd)
			}
			if testing.Short() {
				return // the verdicts only
			}
			if c.Class == 8 && os.Geteuid() != 0 {
				t.Skip("privilege wrappers switch users only when run as root (as CI does)")
			}
			before, _ := os.ReadFile(s.settings)
			out := s.run(t, c.Cmd)
			if ok, seen := s.happened(c.Effect, out, before); !ok {
				t.Fatalf("%s:%d: not a working attack (%s); output:\n%s", c.file, c.line, seen, out)
			}
		})
	}
}

// TestBenignTable keeps ordinary commands allowed by the grants that should
// allow them.
func TestBenignTable(t *testing.T) {
	s := newSandbox(t)
	readJSONL(t, filepath.Join("testdata", "benign.jsonl"), func(c benignCase, line int) {
		if v := s.judge(t, c.Grant, c.Cmd); v.Decision != Allow {
			t.Errorf("benign.jsonl:%d: %s under grant %s: %s %s (%s), want allow\n  %s", line, c.Name, c.Grant,
				v.Decision, v.Code, v.Reason, c.Cmd)
		}
	})
}

// FuzzAttackMutations mutates the attack table's payloads. A mutation the
// gate allows under a grant with no Bash rule is run for real: if it still
// creates the marker, the gate let arbitrary code through.
func FuzzAttackMutations(f *testing.F) {
	for _, c := range loadAttacks(f) {
		if c.Effect == "marker" {
			f.Add(c.Cmd)
		}
	}
	// Shapes where a parser and bash may disagree on where code ends.
	for _, s := range []string{
		"cat <<'EOF'\n$(touch \"$MARK\")\nEOF\n",
		"true <<EOF\nx\nEOF \ntouch \"$MARK\"\nEOF\n",
		": <<-EOF\n\tEOF\n$(touch \"$MARK\")\nEOF",
		": \"$(: ')' ; touch \"$MARK\")\"",
		": ${x:-$(touch \"$MARK\")}",
		"case x in (x) : ;; esac; : $(touch \"$MARK\")",
		": `: \\` ; touch \"$MARK\"`",
		"test -v 'a[$(touch \"$MARK\")]'",
		"cd \"$(touch \"$MARK\")\"",
	} {
		f.Add(s)
	}
	s := newSandbox(f)
	p := s.policy(f, "none")
	f.Fuzz(func(t *testing.T, line string) {
		input, _ := json.Marshal(map[string]string{"command": line})
		v := Decide(&Event{SessionID: "fuzz", Tool: "Bash", Input: input, Cwd: s.ws}, p)
		if v.Decision != Allow || !strings.Contains(line, "MARK") {
			return
		}
		os.Remove(s.mark)
		out := s.run(t, line)
		if _, err := os.Lstat(s.mark); err == nil {
			t.Fatalf("allowed under a grant with no Bash rule, and it ran code (%s):\n  %s\n%s", v.Reason, line, out)
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if gitOnce.dir != "" {
		os.RemoveAll(filepath.Dir(gitOnce.dir))
	}
	os.Exit(code)
}
