// Package litewitnesstest runs torchwood's litewitness
// (filippo.io/torchwood/cmd/litewitness, v0.6.1), a tlog-witness written
// by others, as a separate process for tests: a fresh Ed25519 key in a
// dedicated ssh-agent (where litewitness keeps its key), a SQLite
// database that knows one log (witnessctl add-log, add-key), and the
// witness on a free loopback port. The binaries come from
// .ci/setup.d/45-litewitness.sh (go install into GOPATH/bin); they are
// never a requirement of joule's own module.
package litewitnesstest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the torchwood release the tests run.
const Version = "v0.6.1"

const install = "go install filippo.io/torchwood/cmd/litewitness@" + Version + " filippo.io/torchwood/cmd/witnessctl@" + Version

// Binaries finds litewitness and witnessctl ($JOULE_LITEWITNESS_BIN, a
// directory; PATH; GOPATH/bin), ssh-agent, ssh-add and ssh-keygen; or ends
// the test: a failure when CI=true, where .ci/setup.d installs them, a
// skip elsewhere.
func Binaries(t testing.TB) (litewitness, witnessctl string) {
	t.Helper()
	find := func(name string) (string, error) {
		if dir := os.Getenv("JOULE_LITEWITNESS_BIN"); dir != "" {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s is not installed (.ci/setup.d/45-litewitness.sh: %s)", name, install)
	}
	var paths []string
	for _, name := range []string{"litewitness", "witnessctl", "ssh-agent", "ssh-add", "ssh-keygen"} {
		p, err := find(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true: %v", err)
			}
			t.Skip(err)
		}
		paths = append(paths, p)
	}
	return paths[0], paths[1]
}

// Witness is a running litewitness.
type Witness struct {
	Name string // its key name
	URL  string // its submission prefix
	VKey string // its cosignature verifier key, as it printed it
	DB   string

	t           testing.TB
	dir, sock   string
	fingerprint string
	addr        string
	bin         string

	mu    sync.Mutex // guards cmd, done
	cmd   *exec.Cmd
	done  chan struct{}
	logMu sync.Mutex // guards log
	log   *strings.Builder
}

// Start runs a litewitness named name that knows the log origin, whose
// checkpoints the signed-note verifier key logKey signs. It is stopped
// when the test ends.
func Start(t testing.TB, name, origin, logKey string) *Witness {
	t.Helper()
	lite, ctl := Binaries(t)
	// A unix socket path is at most 108 bytes: a short directory.
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &Witness{Name: name, DB: filepath.Join(dir, "litewitness.db"), t: t, dir: dir, sock: filepath.Join(dir, "agent.sock"), bin: lite}
	key := filepath.Join(dir, "witness")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "litewitness-test", "-f", key)
	agent := exec.Command("ssh-agent", "-D", "-a", w.sock)
	agent.Stdout, agent.Stderr = io.Discard, io.Discard
	if err := agent.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	waitFor(t, func() bool { _, err := os.Stat(w.sock); return err == nil }, "ssh-agent's socket")
	add := exec.Command("ssh-add", key)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+w.sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}
	fp := strings.Fields(run(t, "ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub"))
	if len(fp) < 2 || !strings.HasPrefix(fp[1], "SHA256:") {
		t.Fatalf("ssh-keygen -l: %q", fp)
	}
	w.fingerprint = fp[1]
	run(t, ctl, "add-log", "-db", w.DB, "-origin", origin)
	run(t, ctl, "add-key", "-db", w.DB, "-origin", origin, "-key", logKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.addr = ln.Addr().String()
	ln.Close()
	w.URL = "http://" + w.addr
	t.Cleanup(w.Stop)
	w.Restart()
	return w
}

// AddLog has the running witness know one more log (witnessctl add-log
// and add-key, which litewitness reads as it runs): another machine of a
// team, say.
func (w *Witness) AddLog(origin, logKey string) {
	w.t.Helper()
	_, ctl := Binaries(w.t)
	run(w.t, ctl, "add-log", "-db", w.DB, "-origin", origin)
	run(w.t, ctl, "add-key", "-db", w.DB, "-origin", origin, "-key", logKey)
}

var vkeyLine = regexp.MustCompile(`msg="verifier key" vkey="?([^"\s]+)"?`)

// Restart starts the witness again after Stop (on the same port,
// database and key).
func (w *Witness) Restart() {
	t := w.t
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd != nil {
		t.Fatal("litewitness is running already")
	}
	cmd := exec.Command(w.bin, "-db", w.DB, "-name", w.Name, "-key", w.fingerprint, "-ssh-agent", w.sock, "-listen", w.addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("litewitness: %v", err)
	}
	w.logMu.Lock()
	w.log = &strings.Builder{}
	w.logMu.Unlock()
	w.cmd, w.done = cmd, make(chan struct{})
	vkey := make(chan string, 1)
	go func(log *strings.Builder, done chan struct{}) {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if m := vkeyLine.FindStringSubmatch(line); m != nil {
				select {
				case vkey <- m[1]:
				default:
				}
			}
			w.logMu.Lock()
			log.WriteString(line + "\n")
			w.logMu.Unlock()
		}
		cmd.Wait()
		close(done)
	}(w.log, w.done)
	select {
	case k := <-vkey:
		if w.VKey != "" && k != w.VKey {
			t.Fatalf("litewitness came back with the key %s, not %s", k, w.VKey)
		}
		w.VKey = k
	case <-w.done:
		t.Fatalf("litewitness exited:\n%s", w.Log())
	case <-time.After(20 * time.Second):
		t.Fatal("litewitness printed no verifier key within 20s")
	}
	waitFor(t, func() bool {
		c, err := net.DialTimeout("tcp", w.addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "litewitness to listen on "+w.addr)
}

// Stop stops the witness; its state stays for Restart.
func (w *Witness) Stop() {
	w.mu.Lock()
	cmd, done := w.cmd, w.done
	w.cmd = nil
	w.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Log returns what litewitness wrote on its standard error.
func (w *Witness) Log() string {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	if w.log == nil {
		return ""
	}
	return w.log.String()
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func waitFor(t testing.TB, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("timed out waiting for " + what))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
