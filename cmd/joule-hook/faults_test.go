//go:build unix

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook/hosttest"
	"github.com/joulehook/joule/plugins/hook/resident"
)

// TestGateKilledWhileClientWaits: the gate is stopped (SIGSTOP) with a
// client's request in its socket, then killed with -9. The client still
// answers the decision, through a new gate.
func TestGateKilledWhileClientWaits(t *testing.T) {
	f := newFixture(t)
	if r := f.client("claude-code", f.claude("k", "go test ./...")); !isClaudeAllow(r) {
		t.Fatalf("warm-up: %+v", r)
	}
	pid := f.waitGate(0)
	syscall.Kill(pid, syscall.SIGSTOP)
	cmd := exec.Command(filepath.Join(f.bin, "joule-hook"), "claude-code")
	cmd.Env = append(os.Environ(), f.env...)
	cmd.Stdin = bytes.NewReader(f.claude("k", "git status"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if cmd.ProcessState != nil {
		t.Fatal("the client did not wait for the stopped gate")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	err := cmd.Wait()
	r := result{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		r.code = cmd.ProcessState.ExitCode()
	}
	if !isClaudeAllow(r) {
		t.Fatalf("after kill -9: %+v", r)
	}
	f.waitGate(pid)
}

// TestStaleSocket: a socket file no process listens on (a gate that died)
// is replaced by a new gate.
func TestStaleSocket(t *testing.T) {
	f := newFixture(t)
	os.MkdirAll(f.dir(), 0o700)
	sock := filepath.Join(f.dir(), resident.SocketName)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	os.Chmod(sock, 0o600)
	if _, err := net.Dial("unix", sock); err == nil {
		t.Fatal("the stale socket answers")
	}
	if r := f.client("claude-code", f.claude("s", "go test ./...")); !isClaudeAllow(r) {
		t.Fatalf("%+v", r)
	}
	f.waitGate(0)
}

// TestUnsafeGateDirectory: a gate directory or socket others may enter,
// or that belongs to another uid, is never used: the client decides
// in-process (joule hook) and starts no gate there.
func TestUnsafeGateDirectory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir, sock string)
	}{
		{"directory 0755", func(t *testing.T, dir, sock string) { os.Chmod(dir, 0o755) }},
		{"socket 0666", func(t *testing.T, dir, sock string) { os.Chmod(sock, 0o666) }},
		{"directory of another uid", func(t *testing.T, dir, sock string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a directory to another uid")
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket of another uid", func(t *testing.T, dir, sock string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a socket to another uid")
			}
			if err := os.Lchown(sock, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket is a symlink", func(t *testing.T, dir, sock string) {
			os.Remove(sock)
			os.Symlink("/dev/null", sock)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if r := f.client("claude-code", f.claude("u", "go test ./...")); !isClaudeAllow(r) {
				t.Fatalf("warm-up: %+v", r)
			}
			pid := f.waitGate(0)
			f.joule(nil, "gate", "stop")
			waitGone(t, pid)
			dir := f.dir()
			sock := filepath.Join(dir, resident.SocketName)
			// A listener someone else might have left, on the path.
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			os.Chmod(sock, 0o600)
			asked := make(chan bool, 1)
			go func() {
				c, err := ln.Accept()
				if err == nil {
					c.Close()
					asked <- true
				}
			}()
			tc.spoil(t, dir, sock)
			defer os.Chmod(dir, 0o700)
			defer os.Chown(dir, os.Geteuid(), os.Getegid())
			r := f.client("claude-code", f.claude("u", "git status"))
			if !isClaudeAllow(r) {
				t.Fatalf("in-process decision expected: %+v", r)
			}
			select {
			case <-asked:
				t.Fatal("the client connected to an unsafe socket")
			default:
			}
			if !strings.Contains(f.log(), "not using the resident gate") {
				t.Errorf("gate.log does not say why:\n%s", f.log())
			}
			if s := f.joule(nil, "gate", "status"); s.code == 0 {
				t.Errorf("status calls an unsafe gate running: %+v", s)
			}
			if r := f.joule(nil, "receipts", "verify"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("\n%d receipts verified", initReceipts+2)) {
				t.Errorf("verify: %+v", r)
			}
		})
	}
}

// TestReadOnlyHome: with $JOULE_HOME read-only no gate can start; the
// client still answers what joule hook answers.
func TestReadOnlyHome(t *testing.T) {
	f := newFixture(t)
	if os.Geteuid() == 0 {
		// Root ignores permission bits: mount the home read-only instead.
		if err := exec.Command("mount", "--bind", f.home, f.home).Run(); err != nil {
			t.Skipf("cannot bind-mount as root: %v", err)
		}
		defer exec.Command("umount", f.home).Run()
		if out, err := exec.Command("mount", "-o", "remount,bind,ro", f.home).CombinedOutput(); err != nil {
			t.Skipf("cannot remount read-only: %v %s", err, out)
		}
	} else {
		os.Chmod(f.home, 0o500)
		defer os.Chmod(f.home, 0o700)
	}
	p := f.claude("ro", "go test ./...")
	in := f.joule(p, "hook", "claude-code")
	out := f.client("claude-code", p)
	if in.stdout != out.stdout || in.code != out.code {
		t.Fatalf("joule hook %+v\njoule-hook %+v", in, out)
	}
	if out.stdout == "" && out.stderr == "" && out.code == 0 && !isClaudeAllow(in) {
		t.Fatalf("empty answer: %+v", out)
	}
	if f.gatePID() != 0 {
		t.Fatal("a gate runs in a read-only home")
	}
	if out.took > 10*time.Second {
		t.Fatalf("took %s", out.took)
	}
}

// TestRaceToStart: eight clients at once find no gate; all are answered
// and exactly one gate ever served.
func TestRaceToStart(t *testing.T) {
	f := newFixture(t)
	const n = 8
	var wg sync.WaitGroup
	res := make([]result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = f.client("claude-code", f.claude(fmt.Sprintf("r%d", i), "go test ./..."))
		}()
	}
	wg.Wait()
	for i, r := range res {
		if !isClaudeAllow(r) {
			t.Errorf("client %d: %+v", i, r)
		}
	}
	f.waitGate(0)
	// The calls after the race go through the one gate.
	for i := range 4 {
		if r := f.client("claude-code", f.claude(fmt.Sprintf("r%d", i), "git status")); !isClaudeAllow(r) {
			t.Errorf("after the race: %+v", r)
		}
	}
	if got := strings.Count(f.log(), ": serving "); got != 1 {
		t.Fatalf("%d gates served; log:\n%s", got, f.log())
	}
}

// TestOldGateReplaced: the joule binary is replaced (an upgrade) while its
// gate runs; the next call is answered by a gate of the new binary, and
// the old one exits.
func TestOldGateReplaced(t *testing.T) {
	f := newFixture(t)
	f.ownBinaries()
	if r := f.client("claude-code", f.claude("v", "go test ./...")); !isClaudeAllow(r) {
		t.Fatalf("%+v", r)
	}
	old := f.waitGate(0)
	// A new build at the same path: another file (inode, mtime, size).
	j := filepath.Join(f.bin, "joule")
	b, _ := os.ReadFile(j)
	os.WriteFile(j+".new", append(b, 0), 0o755)
	if err := os.Rename(j+".new", j); err != nil {
		t.Fatal(err)
	}
	if r := f.client("claude-code", f.claude("v", "git status")); !isClaudeAllow(r) {
		t.Fatalf("after the upgrade: %+v", r)
	}
	waitGone(t, old)
	f.waitGate(old)
	if !strings.Contains(f.log(), "changed") {
		t.Fatalf("the old gate did not say why it exited:\n%s", f.log())
	}
}

// TestOtherStoreNotAnswered: a client whose $JOULE_STORE selects another
// store is not answered by the running gate; its decision lands in its
// own store.
func TestOtherStoreNotAnswered(t *testing.T) {
	f := newFixture(t)
	if r := f.client("claude-code", f.claude("m", "go test ./...")); !isClaudeAllow(r) {
		t.Fatalf("%+v", r)
	}
	pid := f.waitGate(0)
	other := filepath.Join(t.TempDir(), "other.db")
	r := f.client("claude-code", f.claude("m2", "go test ./..."), "JOULE_STORE="+other)
	if r.code == 0 && r.stdout == "" && r.stderr == "" {
		// an allow: it must have been sealed in the other store
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("the other store was not used: %v (%+v)", err, r)
	}
	if f.gatePID() != pid {
		t.Fatal("the gate changed")
	}
	// By the SESSION column: a head hash may contain the letters "m2".
	v := f.joule(nil, "receipts", "ls")
	for _, line := range strings.Split(v.stdout, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == "m2" {
			t.Fatalf("the running gate sealed the other store's decision:\n%s", v.stdout)
		}
	}
	// A changed config.json makes the running gate stale.
	cfg := filepath.Join(f.home, "config.json")
	b, _ := os.ReadFile(cfg)
	if len(b) == 0 {
		b = []byte("{}")
	}
	os.WriteFile(cfg, append(b, '\n'), 0o600)
	if r := f.client("claude-code", f.claude("m3", "go test ./...")); !isClaudeAllow(r) {
		t.Fatalf("after the config change: %+v", r)
	}
	waitGone(t, pid)
}

// TestBadInput: a payload above the limit and a payload cut short (the
// host closed stdin early) get the same sealed deny as from joule hook.
func TestBadInput(t *testing.T) {
	f := newFixture(t)
	big := append([]byte(`{"session_id":"big","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"`), bytes.Repeat([]byte("a"), resident.MaxPayload+10)...)
	full := f.claude("cut", "go test ./...")
	for name, p := range map[string][]byte{"too large": big, "cut short": full[:len(full)/2]} {
		in := f.joule(p, "hook", "claude-code")
		out := f.client("claude-code", p)
		if !isClaudeDeny(out) || in.stdout != out.stdout || in.code != out.code {
			t.Errorf("%s: joule hook %q %d, joule-hook %q %d", name, in.stdout, in.code, out.stdout, out.code)
		}
	}
}

// TestNoAnswerInTime: a gate that hangs and a budget too short for the
// fallback: the client answers the host's explicit deny before the budget
// ends.
func TestNoAnswerInTime(t *testing.T) {
	f := newFixture(t)
	if r := f.client("claude-code", f.claude("n", "go test ./...")); !isClaudeAllow(r) {
		t.Fatalf("%+v", r)
	}
	pid := f.waitGate(0)
	syscall.Kill(pid, syscall.SIGSTOP)
	defer syscall.Kill(pid, syscall.SIGKILL)
	for _, host := range []string{"claude-code", "codex", "cline", "opencode"} {
		r := f.client(host, f.claude("n", "git status"), "JOULE_HOOK_TIMEOUT=400ms")
		o, e, code := resident.Deny(host, "x")
		_ = e
		if r.took > 3*time.Second || r.code != code || (len(o) > 0) != (r.stdout != "") || !strings.Contains(r.stdout+r.stderr, "joule deny") {
			t.Errorf("%s: %+v", host, r)
		}
	}
}

// TestConcurrentBudget: 64 clients at once against one grant that pays
// for 40: exactly 40 allow, no sequence twice, every receipt verifies.
func TestConcurrentBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("64 processes")
	}
	f := newFixture(t, "--template", "", "--allow", "Bash(go test:*)", "--budget", "2J") // Bash costs 50 mJ: 40 calls
	f.serveGate()
	const n = 64
	var wg sync.WaitGroup
	res := make([]result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = f.client("claude-code", f.claude(fmt.Sprintf("b%d", i%4), "go test ./..."))
		}()
	}
	wg.Wait()
	allowed, exceeded := 0, 0
	for i, r := range res {
		switch {
		case isClaudeAllow(r):
			allowed++
		case strings.Contains(r.stdout, "budget-exceeded"):
			exceeded++
		default:
			t.Errorf("client %d: %+v", i, r)
		}
	}
	if allowed != 40 || exceeded != 24 {
		t.Fatalf("allowed %d, budget-exceeded %d; want 40 and 24", allowed, exceeded)
	}
	r := f.joule(nil, "receipts", "verify")
	// 64 decisions and joule init's trust receipts.
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("\n%d receipts verified", 64+initReceipts)) {
		t.Fatalf("verify: %+v", r)
	}
	ls := f.joule(nil, "receipts", "ls")
	total := 0
	for _, l := range strings.Split(ls.stdout, "\n")[1:] {
		var s string
		var k int
		if _, err := fmt.Sscan(l, &s, &k); err == nil {
			total += k
		}
	}
	if total != 64+initReceipts {
		t.Fatalf("receipts ls counts %d:\n%s", total, ls.stdout)
	}
}

// TestDiskFull: the store's disk fills up under a running gate; the seal
// fails and the host gets a deny, and what was sealed before verifies.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	f := newFixture(t)
	mnt := filepath.Join(t.TempDir(), "disk")
	os.MkdirAll(mnt, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", "-l", mnt).Run()
	// The home moves onto the small disk.
	if out, err := exec.Command("cp", "-a", f.home+"/.", mnt).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	f.home = mnt
	f.env[0] = "JOULE_HOME=" + mnt
	if r := f.client("claude-code", f.claude("d", "go test ./...")); !isClaudeAllow(r) {
		t.Fatalf("before the disk fills: %+v", r)
	}
	fill, _ := os.Create(filepath.Join(mnt, "fill"))
	buf := make([]byte, 64<<10)
	for {
		if _, err := fill.Write(buf); err != nil {
			break
		}
	}
	fill.Sync()
	denied := 0
	for i := 0; i < 5; i++ {
		r := f.client("claude-code", f.claude("d", fmt.Sprintf("go test ./%d/... && git status && go vet ./... # %s", i, strings.Repeat("x", 8000))))
		switch {
		case isClaudeDeny(r):
			denied++
		case isClaudeAllow(r):
		default:
			t.Fatalf("neither allow nor deny: %+v", r)
		}
	}
	if denied == 0 {
		t.Fatal("a full disk denied nothing")
	}
	fill.Close()
	os.Remove(filepath.Join(mnt, "fill"))
	if r := f.joule(nil, "receipts", "verify"); r.code != 0 {
		t.Fatalf("verify after the full disk: %+v", r)
	}
}

// TestGateStopWaits: joule gate stop returns only once no gate process is
// left: it waits for a gate still starting (one holding the lock but not
// yet listening, as a client leaves behind when it answered in-process),
// and for a running gate to exit, so a caller that removes $JOULE_HOME
// next finds nothing writing into it.
func TestGateStopWaits(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(f.stopGate)
	if err := os.MkdirAll(f.dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(f.dir(), resident.LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan result, 1)
	go func() { stopped <- f.joule(nil, "gate", "stop") }()
	select {
	case r := <-stopped:
		t.Fatalf("gate stop returned while a gate held the lock: %+v", r)
	case <-time.After(500 * time.Millisecond):
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if r := <-stopped; r.code != 0 || !strings.Contains(r.stdout, "no resident gate runs") {
		t.Fatalf("gate stop once the lock was free: %+v", r)
	}

	pid := f.serveGate()
	if r := f.joule(nil, "gate", "stop"); r.code != 0 {
		t.Fatalf("gate stop: %+v", r)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if alive := syscall.Kill(pid, 0) == nil; alive && (err != nil || !strings.Contains(string(b), ") Z")) {
		t.Fatalf("gate %d still runs after gate stop returned", pid)
	}
}

// TestFallbackAllOrNothing: with no gate, the joule hook the client runs
// writes part of its answer (on its stdout, its stderr and the answer
// pipe) and then hangs past the deadline, or dies. The host reads only
// the client's deny, whole, never the partial answer before it.
func TestFallbackAllOrNothing(t *testing.T) {
	for _, tc := range []struct{ name, then string }{
		{"killed at the deadline", "exec sleep 60"},
		{"killed by someone else", "kill -9 $$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.ownBinaries()
			pidFile := filepath.Join(t.TempDir(), "pid")
			// A joule whose hook answers part of an allow, then stops;
			// its other commands (the fixture's gate stop) are joule's.
			partial := "#!/bin/sh\n[ \"$1\" = hook ] || exec " + filepath.Join(binDir, "joule") + " \"$@\"\n" +
				"echo $$ > \"$FAKE_PID_FILE\"\n" +
				`printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"'` + "\n" +
				"printf 'partial stderr' >&2\n" +
				"printf 'JHA1A' >&3\n" + tc.then + "\n"
			if err := os.WriteFile(filepath.Join(f.bin, "joule"), []byte(partial), 0o755); err != nil {
				t.Fatal(err)
			}
			r := f.client("claude-code", f.claude("p", "go test ./..."), "JOULE_HOOK_TIMEOUT=1500ms", "FAKE_PID_FILE="+pidFile)
			reason := strings.TrimSuffix(r.stderr, "\n")
			o, e, code := resident.Deny("claude-code", reason)
			if r.stdout != string(o) || r.stderr != string(e) || r.code != code ||
				!strings.HasPrefix(reason, "joule deny (internal-error): ") || strings.Contains(r.stdout+r.stderr, "partial") || strings.Contains(r.stdout, "allow") {
				t.Fatalf("the host did not get the deny alone: %+v", r)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the fake joule did not run: %v", err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			waitGone(t, pid)
			if !strings.Contains(f.log(), "partial stderr") {
				t.Errorf("the child's own stderr is not in gate.log:\n%s", f.log())
			}
		})
	}
}

// TestFirstCallHoldsGateLock: the joule that decides a first call (and
// stays as the gate) holds the gate lock from before it decides, so that
// joule gate stop waits for it and nothing of it writes into $JOULE_HOME
// after stop returns. The store is locked, so the decision cannot have
// been answered while the lock is seen held.
func TestFirstCallHoldsGateLock(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(f.stopGate)
	release := hosttest.LockStore(t, filepath.Join(f.home, "joule.db"))
	answered := make(chan result, 1)
	go func() { answered <- f.client("claude-code", f.claude("held", "go test ./...")) }()
	held := false
	for deadline := time.Now().Add(20 * time.Second); !held && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		lock, err := os.Open(filepath.Join(f.dir(), resident.LockName))
		if err != nil {
			continue
		}
		held = syscall.Flock(int(lock.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil
		lock.Close()
	}
	select {
	case r := <-answered:
		t.Fatalf("the first call was answered with the store locked: %+v", r)
	default:
	}
	if !held {
		t.Fatal("the joule deciding the first call does not hold the gate lock")
	}
	stopped := make(chan result, 1)
	go func() { stopped <- f.joule(nil, "gate", "stop") }()
	release()
	if r := <-answered; !isClaudeAllow(r) {
		t.Fatalf("first call once the store was free: %+v", r)
	}
	if r := <-stopped; r.code != 0 {
		t.Fatalf("gate stop: %+v", r)
	}
	if lock, err := os.Open(filepath.Join(f.dir(), resident.LockName)); err == nil {
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			t.Error("the gate lock is still held after gate stop returned")
		}
		lock.Close()
	}
}
