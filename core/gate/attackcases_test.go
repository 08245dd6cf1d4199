package gate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
)

// attackCase is one line of testdata/attacks/*.jsonl: a payload that
// really has its effect when bash runs it, and that the gate must deny.
type attackCase struct {
	Name   string `json:"name"`
	Class  int    `json:"class"`
	Grant  string `json:"grant"`
	Effect string `json:"effect"`
	Cmd    string `json:"cmd"`
}

// benignCase is one line of testdata/benign.jsonl: a line the gate must
// allow under its grant.
type benignCase struct {
	Name  string `json:"name"`
	Grant string `json:"grant"`
	Cmd   string `json:"cmd"`
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var c T
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, c)
	}
	return out
}

// sandbox is a throwaway workspace and home as the attack table describes.
type sandbox struct {
	root, ws, home, jh, mark, secret string
	port                             int
	connected                        chan struct{}
}

func newSandbox(t *testing.T) *sandbox {
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
	s := &sandbox{root: root, ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"), mark: filepath.Join(root, "mark")}
	s.jh = filepath.Join(s.home, ".local", "share", "joule")
	for _, d := range []string{s.ws + "/.claude", s.jh} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	s.secret = hex.EncodeToString(tok)
	files := map[string]string{
		filepath.Join(s.jh, "steward.key"):              s.secret,
		filepath.Join(s.ws, "main.go"):                  "package main\n\nfunc main() {}\n",
		filepath.Join(s.ws, ".env"):                     "TOKEN=x\n",
		filepath.Join(s.ws, ".claude", "settings.json"): "{}\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("git", "init", "-q", s.ws)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	return s
}

// run runs cmd with bash in the sandbox and returns its output.
func (s *sandbox) run(t *testing.T, cmd string) []byte {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s.port = ln.Addr().(*net.TCPAddr).Port
	s.connected = make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case s.connected <- struct{}{}:
			default:
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = s.ws
	c.Env = []string{"HOME=" + s.home, "JOULE_HOME=" + s.jh, "MARK=" + s.mark, "PORT=" + strconv.Itoa(s.port),
		"WS=" + s.ws, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "GOCACHE=" + goEnv("GOCACHE"),
		"GOMODCACHE=" + goEnv("GOMODCACHE"), "GOTOOLCHAIN=local", "GOPROXY=off", "GOTELEMETRY=off",
		"npm_config_update_notifier=false", "npm_config_offline=true"}
	c.Stdin = nil
	c.WaitDelay = time.Second
	out, _ := c.CombinedOutput()
	return out
}

var goEnvs = map[string]string{}

func goEnv(name string) string {
	if v, ok := goEnvs[name]; ok {
		return v
	}
	out, _ := exec.Command("go", "env", name).Output()
	goEnvs[name] = strings.TrimSpace(string(out))
	return goEnvs[name]
}

// happened reports whether the payload had its effect.
func (s *sandbox) happened(t *testing.T, effect string, out []byte) bool {
	switch effect {
	case "marker":
		_, err := os.Lstat(s.mark)
		return err == nil
	case "secret":
		if bytes.Contains(out, []byte(s.secret)) {
			return true
		}
		found := false
		filepath.WalkDir(s.root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || p == filepath.Join(s.jh, "steward.key") {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s.secret)) {
				found = true
			}
			return nil
		})
		return found
	case "tcp":
		select {
		case <-s.connected:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	case "protected":
		b, err := os.ReadFile(filepath.Join(s.ws, ".claude", "settings.json"))
		return err != nil || string(b) != "{}\n"
	}
	t.Fatalf("unknown effect %q", effect)
	return false
}

// policy is the named grant over the sandbox: "none" holds only Read,
// the others are joule's templates.
func (s *sandbox) policy(t *testing.T, name string) *Policy {
	t.Helper()
	g := &grant.Grant{Subject: grant.AnySubject, Roots: []string{s.ws}, Tiers: []string{"l0"}, BudgetUJ: 1 << 40,
		NotBefore: testNow.Add(-time.Hour).Unix(), NotAfter: testNow.Add(time.Hour).Unix()}
	if name == "none" {
		g.Allow = []string{"Read"}
	} else {
		tpl, ok := grant.Templates[name]
		if !ok {
			t.Fatalf("unknown grant %q", name)
		}
		g.Allow, g.Ask, g.Deny = tpl.Allow, tpl.Ask, tpl.Deny
	}
	seed := core.Sum([]byte("attack table issuer"))
	is, err := grant.NewIssuer("attack-test", ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := is.Sign(g)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(grant.Chain{signed}, s.home, ProtectedPaths(s.jh, s.home, []string{s.ws}), DefaultCosts, testNow)
	if err != nil {
		t.Fatal(err)
	}
	p.Private = []string{s.jh}
	return p
}

func (s *sandbox) decide(t *testing.T, grantName, cmd string) Verdict {
	in, _ := json.Marshal(map[string]any{"command": cmd})
	return Decide(&Event{SessionID: "s", Tool: "Bash", Input: in, Cwd: s.ws}, s.policy(t, grantName))
}

// TestAnalyzerAttackTable proves every case of the analyser's attack files
// (classes 1, 3, 4, 5 and 8 of issue 14: files 01-05 and 08) is a real attack by running it,
// then requires the gate to deny it.
func TestAnalyzerAttackTable(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	goEnv("GOCACHE") // filled before the parallel cases only read it
	goEnv("GOMODCACHE")
	files, _ := filepath.Glob("testdata/attacks/0[1-58]-*.jsonl")
	if len(files) == 0 {
		t.Fatal("no attack files")
	}
	names := map[string]bool{}
	total := 0
	for _, f := range files {
		for _, c := range readJSONL[attackCase](t, f) {
			total++
			if names[c.Name] {
				t.Fatalf("%s: duplicate case name %q", f, c.Name)
			}
			names[c.Name] = true
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				s := newSandbox(t)
				if v := s.decide(t, c.Grant, c.Cmd); v.Decision != Deny {
					t.Errorf("gate under %s: %s/%s (%s), want deny", c.Grant, v.Decision, v.Code, v.Reason)
				}
				if testing.Short() {
					return
				}
				if c.Class == 8 && os.Geteuid() != 0 {
					t.Skip("privilege wrappers switch users only when run as root (as CI does)")
				}
				out := s.run(t, c.Cmd)
				if !s.happened(t, c.Effect, out) {
					t.Errorf("the payload did not have its effect %q; output: %s", c.Effect, out)
				}
			})
		}
	}
	if total < 200 {
		t.Errorf("only %d cases", total)
	}
}

// TestAnalyzerBenignTable requires the gate to allow every benign line.
func TestAnalyzerBenignTable(t *testing.T) {
	s := newSandbox(t)
	for _, c := range readJSONL[benignCase](t, "testdata/benign.jsonl") {
		t.Run(c.Name, func(t *testing.T) {
			if v := s.decide(t, c.Grant, c.Cmd); v.Decision != Allow {
				t.Errorf("gate under %s: %s/%s (%s), want allow", c.Grant, v.Decision, v.Code, v.Reason)
			}
		})
	}
}
