//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// binary is joule-exec, built once for the tests in a directory any user
// can reach (the process-count test runs it as nobody when run as root).
var binary string

func TestMain(m *testing.M) {
	if sandbox.ABI() == 0 {
		fmt.Println("skipping cmd/joule-exec's tests: no Landlock in this kernel")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "joule-exec-bin-*")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		binary = filepath.Join(dir, "joule-exec")
		// As the Makefile builds it: without cgo (go-landlock's psx would
		// link libc and pthreads, a dynamic binary slower to start).
		build := exec.Command("go", "build", "-trimpath", "-o", binary, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, berr := build.CombinedOutput()
		if berr != nil {
			err = fmt.Errorf("go build: %v: %s", berr, out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// box is a sandboxed temp dir: a home with a workspace in it, a temp dir
// and a policy that allows Read and Write in the workspace.
type box struct {
	base, home, ws, tmp, policy string
	uid                         int // the user joule-exec runs as; -1: this one
	landlockOnly                bool
	net                         bool
}

func newBox(t testing.TB, limits *sandbox.Limits, asNobody bool) *box {
	t.Helper()
	base, err := os.MkdirTemp("", "joule-exec-test-*")
	if err != nil {
		t.Fatal(err)
	}
	base, _ = filepath.EvalSymlinks(base)
	t.Cleanup(func() { os.RemoveAll(base) })
	b := &box{base: base, home: filepath.Join(base, "home"), tmp: filepath.Join(base, "tmp"), uid: -1}
	b.ws = filepath.Join(b.home, "ws")
	// ws/.claude exists, so that the absent settings.json in it freezes
	// that directory rather than the workspace root (see sandbox.Plan).
	for _, d := range []string{b.ws, b.tmp, filepath.Join(b.ws, ".claude"), filepath.Join(b.home, ".claude"), filepath.Join(b.home, "go", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(b.ws, ".mcp.json"), []byte("{}\n"), 0o644)
	p := sandbox.Policy{Links: []sandbox.PolicyLink{{Allow: []string{"Read", "Write"}}}, Roots: []string{b.ws}, Home: b.home,
		Protected: []string{filepath.Join(b.ws, ".mcp.json"), filepath.Join(b.ws, ".claude", "settings.json")}, Limits: limits,
		Layer: sandbox.LayerDir(filepath.Join(base, "joule"), "s")}
	pdir := filepath.Join(base, "policy")
	if b.policy, err = p.Write(pdir); err != nil {
		t.Fatal(err)
	}
	if asNobody && os.Getuid() == 0 {
		b.uid = 65534
		os.Chmod(base, 0o755)
		filepath.WalkDir(base, func(p string, _ os.DirEntry, _ error) error { return os.Lchown(p, b.uid, b.uid) })
	}
	return b
}

// cmd is joule-exec running script with bash in the workspace.
func (b *box) cmd(script string) *exec.Cmd {
	args := []string{"--policy", b.policy}
	if b.net {
		args = append(args, "--net")
	}
	c := exec.Command(binary, append(args, "--", "/bin/bash", "-c", script)...)
	c.Dir = b.ws
	c.Env = []string{"HOME=" + b.home, "TMPDIR=" + b.tmp, "PATH=" + os.Getenv("PATH"), "LANG=C"}
	if b.landlockOnly {
		c.Env = append(c.Env, sandbox.LandlockOnlyEnv+"=1")
	}
	if b.uid >= 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(b.uid), Gid: uint32(b.uid)}}
	}
	return c
}

// run runs script confined and returns its output and exit status.
func (b *box) run(t testing.TB, script string) (string, int) {
	t.Helper()
	c := b.cmd(script)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return out.String(), 128 + int(ws.Signal())
		}
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("joule-exec: %v", err)
	return "", 0
}

func needNamespaces(t *testing.T) {
	if !sandbox.NamespacesAvailable() {
		t.Skip("unprivileged user namespaces are off in this kernel: the namespace construction is not used here")
	}
}

// TestMetadataOutsideTheWriteSet runs issue 33's metadata attacks: modes,
// set-uid bits, times and the executable bit outside the writable trees,
// and on a protected path inside one. With the namespace construction
// every one fails and the files are as before; a file of the workspace
// still takes a chmod (the sandbox is not merely broken). With Landlock
// alone they succeed: the gap LandlockOnlyGaps names.
func TestMetadataOutsideTheWriteSet(t *testing.T) {
	for _, landlockOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "namespaces", true: "landlock-only"}[landlockOnly], func(t *testing.T) {
			if !landlockOnly {
				needNamespaces(t)
			}
			b := newBox(t, nil, false)
			b.landlockOnly = landlockOnly
			bashrc, profile, claude, joule := filepath.Join(b.home, ".bashrc"), filepath.Join(b.home, ".profile"), filepath.Join(b.home, ".claude"), filepath.Join(b.home, "go", "bin", "joule")
			mcp, own := filepath.Join(b.ws, ".mcp.json"), filepath.Join(b.ws, "own.txt")
			os.WriteFile(bashrc, []byte("# rc\n"), 0o644)
			os.WriteFile(profile, []byte("# profile\n"), 0o644)
			os.WriteFile(joule, []byte("#!/bin/sh\n"), 0o755)
			os.WriteFile(own, nil, 0o644)
			paths := []string{bashrc, profile, claude, joule, mcp}
			before := map[string]os.FileInfo{}
			for _, p := range paths {
				before[p], _ = os.Stat(p)
			}
			out, code := b.run(t, `chmod 0777 ~/.bashrc; chmod 04777 ~/.profile; chmod 0700 ~/.claude; touch -d 2001-01-01 ~/.claude ~/.bashrc
chmod -x ~/go/bin/joule; chmod 0777 .mcp.json; touch -d 2001-01-01 .mcp.json; chmod 0600 own.txt`)
			changed := 0
			for _, p := range paths {
				fi, _ := os.Stat(p)
				if fi.Mode() != before[p].Mode() || !fi.ModTime().Equal(before[p].ModTime()) {
					changed++
					if !landlockOnly {
						t.Errorf("%s changed from %v %v to %v %v", p, before[p].Mode(), before[p].ModTime(), fi.Mode(), fi.ModTime())
					}
				}
			}
			if fi, _ := os.Stat(own); fi.Mode().Perm() != 0o600 {
				t.Errorf("chmod of a workspace file was refused (mode %v, exit %d): %s", fi.Mode(), code, out)
			}
			// What an unconfined program sees afterwards: joule still runs.
			if !landlockOnly {
				if err := exec.Command(joule).Run(); err != nil {
					t.Errorf("~/go/bin/joule no longer runs unconfined: %v", err)
				}
			}
			if landlockOnly && changed == 0 {
				t.Errorf("with Landlock alone the metadata attacks all failed; LandlockOnlyGaps says they succeed (%s)", out)
			}
			if landlockOnly && !strings.Contains(strings.Join(sandbox.LandlockOnlyGaps(), "\n"), "chmod") {
				t.Errorf("LandlockOnlyGaps does not name the metadata gap: %q", sandbox.LandlockOnlyGaps())
			}
		})
	}
}

// procsWith counts the processes whose command line contains marker (a
// fork bomb's processes are forks of one bash and keep its command line).
func procsWith(marker string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			n++
		}
	}
	return n
}

// forkCount forks up to 500 children that sleep 3 seconds and prints how
// many it made and the errno of the fork that failed.
const forkCount = `python3 -c 'import os,time
n=0
try:
    while n < 500:
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
except OSError as e:
    print("forked", n, e.errno)'`

// TestForkBomb: with 64 tasks allowed, a harmless count finds the bound;
// then the classic fork bomb ends with its call, and one that stays in
// the foreground is held at the bound until joule-exec is stopped, when
// every one of its processes ends. As root the command runs as nobody:
// the kernel does not apply RLIMIT_NPROC to uid 0.
func TestForkBomb(t *testing.T) {
	needNamespaces(t)
	b := newBox(t, &sandbox.Limits{Procs: 64}, true)
	if os.Getuid() == 0 && b.uid < 0 {
		t.Skip("running as root and cannot run joule-exec as another user: the kernel does not bound uid 0's processes")
	}
	out, code := b.run(t, `ulimit -u`)
	if code != 0 || strings.TrimSpace(out) != "64" {
		t.Fatalf("the limit is not in place (exit %d): %s", code, out)
	}
	count := forkCount
	if _, err := exec.LookPath("python3"); err == nil {
		out, _ := b.run(t, count)
		var n, errno int
		if _, err := fmt.Sscanf(strings.TrimSpace(out), "forked %d %d", &n, &errno); err != nil || n >= 64 || errno != int(syscall.EAGAIN) {
			t.Fatalf("a harmless count of forks was not stopped below 64 with EAGAIN: %q", out)
		}
	}
	marker := fmt.Sprintf("bomb-%d", time.Now().UnixNano())
	start := time.Now()
	c := b.cmd(":(){ :|:& };: # " + marker)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		c.Process.Kill()
		t.Fatal("the background fork bomb did not end with its call within 60s")
	}
	time.Sleep(200 * time.Millisecond)
	if n := procsWith(marker); n != 0 {
		t.Errorf("%d processes of the background fork bomb outlived the call (%v)", n, time.Since(start))
	}

	marker += "-fg"
	c = b.cmd(":(){ :|: ; };: # " + marker)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	peak := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		peak = max(peak, procsWith(marker))
	}
	c.Process.Signal(syscall.SIGTERM)
	c.Wait()
	time.Sleep(200 * time.Millisecond)
	// joule-exec and the namespace's init (a clone of it) have the
	// marker in their command line too; the init counts in the 64.
	if peak > 65 {
		t.Errorf("the foreground fork bomb reached %d processes, above the 64 allowed and joule-exec", peak)
	}
	if n := procsWith(marker); n != 0 {
		t.Errorf("%d processes of the foreground fork bomb outlived joule-exec", n)
	}
}

// TestBurns: a memory burn (bash doubling a string) and a CPU burn (an
// empty loop), made of shell builtins only, end at the policy's limits,
// in both constructions.
func TestBurns(t *testing.T) {
	for _, landlockOnly := range []bool{false, true} {
		for _, tc := range []struct {
			name   string
			limits sandbox.Limits
			script string
			want   int // exit status; 0: any failure
		}{
			{"memory", sandbox.Limits{Data: 128 << 20}, `s=x; while :; do s=$s$s; done`, 0},
			{"cpu", sandbox.Limits{CPU: 1}, `while :; do :; done`, 128 + int(syscall.SIGXCPU)},
		} {
			t.Run(fmt.Sprintf("%s/landlock-only=%v", tc.name, landlockOnly), func(t *testing.T) {
				if !landlockOnly {
					needNamespaces(t)
				}
				b := newBox(t, &tc.limits, false)
				b.landlockOnly = landlockOnly
				start := time.Now()
				c := b.cmd(tc.script)
				var out bytes.Buffer
				c.Stdout, c.Stderr = &out, &out
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- c.Wait() }()
				var err error
				select {
				case err = <-done:
				case <-time.After(90 * time.Second):
					c.Process.Kill()
					<-done
					t.Fatalf("the %s burn did not end within 90s", tc.name)
				}
				ws := c.ProcessState.Sys().(syscall.WaitStatus)
				code := ws.ExitStatus()
				if ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
				if err == nil || (tc.want != 0 && code != tc.want) {
					t.Errorf("the %s burn ended with %d (%v) after %v, want %d: %s", tc.name, code, err, time.Since(start), tc.want, out.String())
				}
			})
		}
	}
}

// TestNoUDPOrUnixSockets: with the network off, a UDP datagram to a
// listener outside (bash's /dev/udp and python's socket) is not received
// and a connect to a named unix socket outside is refused; unconfined,
// both reach it, and with --net the UDP datagram does. socketpair works.
func TestNoUDPOrUnixSockets(t *testing.T) {
	b := newBox(t, nil, false)
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	port := udp.LocalAddr().(*net.UDPAddr).Port
	sock := filepath.Join(b.base, "outside.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	accepted := make(chan struct{}, 10)
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	received := func() string {
		udp.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 64)
		n, _, err := udp.ReadFrom(buf)
		if err != nil {
			return ""
		}
		return string(buf[:n])
	}
	send := fmt.Sprintf(`echo bash-udp > /dev/udp/127.0.0.1/%d`, port)
	_, py := exec.LookPath("python3")
	if py == nil {
		send += fmt.Sprintf(`; python3 -c 'import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"py-udp", ("127.0.0.1", %d))'`, port)
	}
	// Unconfined, the datagram arrives: the listener works.
	if err := exec.Command("/bin/bash", "-c", send).Run(); err != nil || !strings.Contains(received(), "udp") {
		t.Fatalf("the unconfined UDP send did not arrive (%v)", err)
	}
	for received() != "" {
	}
	out, _ := b.run(t, send)
	if got := received(); got != "" {
		t.Errorf("a confined UDP datagram arrived outside: %q (%s)", got, out)
	}
	if py == nil {
		connect := fmt.Sprintf(`python3 -c 'import socket
s = socket.socket(socket.AF_UNIX)
s.connect(%q)
print("connected")'`, sock)
		if err := exec.Command("/bin/bash", "-c", connect).Run(); err != nil {
			t.Fatalf("the unconfined connect to the unix socket failed: %v", err)
		}
		<-accepted
		out, code := b.run(t, connect+`; python3 -c 'import socket
a, b = socket.socketpair(); a.send(b"ok"); print("pair", b.recv(2).decode())'`)
		select {
		case <-accepted:
			t.Errorf("a confined process connected to a unix socket outside: %s", out)
		case <-time.After(200 * time.Millisecond):
		}
		if strings.Contains(out, "connected") || !strings.Contains(out, "pair ok") || code != 0 {
			t.Errorf("want the unix connect refused and socketpair working (exit %d): %s", code, out)
		}
	}
	b.net = true
	b.run(t, send)
	if got := received(); !strings.Contains(got, "udp") {
		t.Errorf("with --net the UDP datagram did not arrive")
	}
}

// TestBackgroundProcessEndsWithTheCall races issue 33's swap: a process
// the command leaves behind replaces a workspace file by a link to
// ~/.bashrc half a second after the call returned. Unconfined the swap
// happens; confined, the process ends with the call and the file stays.
func TestBackgroundProcessEndsWithTheCall(t *testing.T) {
	needNamespaces(t)
	b := newBox(t, nil, false)
	file := filepath.Join(b.ws, "file")
	race := `(sleep 0.5; ln -sf ~/.bashrc ` + file + `) >/dev/null 2>&1 &`
	os.WriteFile(file, []byte("data\n"), 0o644)
	c := exec.Command("/bin/bash", "-c", race)
	c.Env = append(os.Environ(), "HOME="+b.home)
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if fi, err := os.Lstat(file); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("unconfined, the racing process did not swap the file: the test proves nothing (%v)", err)
	}
	os.Remove(file)
	os.WriteFile(file, []byte("data\n"), 0o644)
	if out, code := b.run(t, race); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	time.Sleep(1500 * time.Millisecond)
	if fi, err := os.Lstat(file); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("a process of the call outlived it and swapped %s (%v)", file, err)
	}
}

// TestOrdinaryWork: under the default limits and the read-only root, a Go
// module builds and tests, and git commits.
func TestOrdinaryWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	b := newBox(t, nil, false)
	os.WriteFile(filepath.Join(b.ws, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(b.ws, "m.go"), []byte("package m\n\nfunc Two() int { return 2 }\n"), 0o644)
	os.WriteFile(filepath.Join(b.ws, "m_test.go"), []byte("package m\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal()\n\t}\n}\n"), 0o644)
	gocache, _ := exec.Command("go", "env", "GOCACHE").Output()
	c := b.cmd(`set -e; go build ./... && go vet ./... && go test -count=1 ./... && git init -q && git add -A && git -c user.name=t -c user.email=t@e commit -qm m && echo done`)
	c.Env = append(c.Env, "GOCACHE="+strings.TrimSpace(string(gocache)), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done") {
		t.Fatalf("ordinary work failed under the sandbox (%v): %s", err, out)
	}
}

// TestConnectOnlyToAllowedPorts: a policy's Connect opens TCP connect to
// its ports alone with the network off (how joule acp's contained remote
// agent reaches joule proxy): a confined connect to the allowed port is
// accepted and one to another port is refused, in both constructions;
// unconfined, both connect; with --net, both do too.
func TestConnectOnlyToAllowedPorts(t *testing.T) {
	listen := func() (net.Listener, uint16) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return l, uint16(l.Addr().(*net.TCPAddr).Port)
	}
	_, allowed := listen()
	_, other := listen()
	connect := func(port uint16) string {
		return fmt.Sprintf(`python3 -c 'import socket
s=socket.socket()
try:
    s.connect(("127.0.0.1", %d)); print("port %d connected")
except OSError as e:
    print("port %d refused", e)'`, port, port, port)
	}
	script := connect(allowed) + "; " + connect(other)
	out, err := exec.Command("/bin/bash", "-c", script).CombinedOutput()
	if err != nil || strings.Count(string(out), "connected") != 2 {
		t.Fatalf("unconfined, both connects should succeed: %v: %s", err, out)
	}
	for _, tt := range []struct {
		name         string
		landlockOnly bool
		net          bool
		want         []string
	}{
		{"namespaces", false, false, []string{fmt.Sprintf("port %d connected", allowed), fmt.Sprintf("port %d refused", other)}},
		{"landlock alone", true, false, []string{fmt.Sprintf("port %d connected", allowed), fmt.Sprintf("port %d refused", other)}},
		{"--net", false, true, []string{fmt.Sprintf("port %d connected", allowed), fmt.Sprintf("port %d connected", other)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.landlockOnly {
				needNamespaces(t)
			}
			b := newBox(t, nil, false)
			p, err := sandbox.ReadPolicy(b.policy)
			if err != nil {
				t.Fatal(err)
			}
			p.Connect = []uint16{allowed}
			if b.policy, err = p.Write(filepath.Join(b.base, "policy")); err != nil {
				t.Fatal(err)
			}
			b.landlockOnly, b.net = tt.landlockOnly, tt.net
			out, code := b.run(t, script)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q (exit %d): %s", w, code, out)
				}
			}
		})
	}
}

// TestListenOnlyOnAllowedPorts: a policy's Listen opens TCP bind (and
// connect) on its ports alone with the network off (how joule acp's
// contained OpenCode serves its own API and calls it): a confined server
// on the allowed port accepts a confined client, binding another port is
// refused, and so is binding a port the kernel picks; unconfined, all
// three bind.
func TestListenOnlyOnAllowedPorts(t *testing.T) {
	free := func() uint16 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return uint16(l.Addr().(*net.TCPAddr).Port)
	}
	allowed, other := free(), free()
	script := fmt.Sprintf(`python3 -c 'import socket
def bind(port, name):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port)); s.listen(1)
    except OSError as e:
        print(name, "refused", e); return
    if port:
        c = socket.socket(); c.connect(("127.0.0.1", port)); s.accept()
        print(name, "served")
    else:
        print(name, "bound")
bind(%d, "allowed"); bind(%d, "other"); bind(0, "any")'`, allowed, other)
	out, err := exec.Command("/bin/bash", "-c", script).CombinedOutput()
	if err != nil || strings.Count(string(out), "served") != 2 || !strings.Contains(string(out), "any bound") {
		t.Fatalf("unconfined, every bind should succeed: %v: %s", err, out)
	}
	for _, tt := range []struct {
		name         string
		landlockOnly bool
	}{{"namespaces", false}, {"landlock alone", true}} {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.landlockOnly {
				needNamespaces(t)
			}
			b := newBox(t, nil, false)
			p, err := sandbox.ReadPolicy(b.policy)
			if err != nil {
				t.Fatal(err)
			}
			p.Listen = []uint16{allowed}
			if b.policy, err = p.Write(filepath.Join(b.base, "policy")); err != nil {
				t.Fatal(err)
			}
			b.landlockOnly = tt.landlockOnly
			out, code := b.run(t, script)
			for _, w := range []string{"allowed served", "other refused", "any refused"} {
				if !strings.Contains(out, w) {
					t.Errorf("want %q (exit %d): %s", w, code, out)
				}
			}
		})
	}
}

// commandCgroups are the control groups a command's output of
// /proc/self/cgroup names as its own (below a "joule" directory), as
// paths below /sys/fs/cgroup.
func commandCgroups(out string) []string {
	var dirs []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.Contains(f[2], "/joule/c") {
			continue
		}
		switch {
		case f[1] == "":
			for _, m := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if _, err := os.Stat(filepath.Join(m, "cgroup.controllers")); err == nil {
					dirs = append(dirs, filepath.Join(m, f[2]))
					break
				}
			}
		case f[1] == "pids" || f[1] == "memory":
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", f[1], f[2]))
		}
	}
	return dirs
}

// TestCgroupBounds: where the command gets a control group of its own,
// its processes together are held at Procs (for uid 0 too, which
// RLIMIT_NPROC does not bound, and below the PID namespace's pid_max of
// Procs+300), memory spread over many processes, each within its own
// limit, is held at Memory (one of them is killed), and the group is gone
// after the command, also after joule-exec was killed with SIGKILL (the
// next command removes it).
func TestCgroupBounds(t *testing.T) {
	needNamespaces(t)
	if !sandbox.CgroupAvailable() {
		t.Skip("no control group this process may make (cgroup v2 needs root or a delegated subtree; v1 needs root)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	b := newBox(t, &sandbox.Limits{Procs: 64, Memory: 256 << 20, Data: 1 << 30}, false)
	out, code := b.run(t, `cat /proc/self/cgroup`)
	dirs := commandCgroups(out)
	if code != 0 || len(dirs) == 0 {
		t.Fatalf("the command is in no control group of its own (exit %d): %s", code, out)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the command's control group %s is still there after it (%v)", d, err)
		}
	}
	out, _ = b.run(t, forkCount)
	var n, errno int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "forked %d %d", &n, &errno); err != nil || n >= 64 || errno != int(syscall.EAGAIN) {
		t.Errorf("a count of forks was not stopped below 64 with EAGAIN: %q", out)
	}
	// Eight processes of 64 MiB each, touched, alive together: 512 MiB
	// against a bound of 256 MiB.
	spread := `python3 -c 'import os,time
kids=[]
for i in range(8):
    pid=os.fork()
    if pid == 0:
        b=bytearray(64<<20)
        for j in range(0, len(b), 4096): b[j]=1
        time.sleep(2); os._exit(0)
    kids.append(pid)
killed=0
for p in kids:
    _, st = os.waitpid(p, 0)
    if os.WIFSIGNALED(st): killed+=1
print("killed", killed)'`
	out, _ = b.run(t, spread)
	if !strings.HasPrefix(strings.TrimSpace(out), "killed ") || strings.TrimSpace(out) == "killed 0" {
		t.Errorf("memory spread over 8 processes was not bounded: %q", out)
	}
	// joule-exec killed while its command runs: its group stays (empty)
	// until the next command.
	c := b.cmd(`cat /proc/self/cgroup; exec sleep 30`)
	// A file, not a buffer: the command writes it directly, while this
	// goroutine reads it.
	outFile := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(outFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c.Stdout = f
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(left) == 0; time.Sleep(50 * time.Millisecond) {
		got, _ := os.ReadFile(outFile)
		left = commandCgroups(string(got))
	}
	c.Process.Kill()
	c.Wait()
	if len(left) == 0 {
		got, _ := os.ReadFile(outFile)
		t.Fatalf("the killed command named no control group: %q", got)
	}
	time.Sleep(200 * time.Millisecond)
	if out, code := b.run(t, `true`); code != 0 {
		t.Fatalf("the next command failed (exit %d): %s", code, out)
	}
	for _, d := range left {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the killed command's control group %s is still there after the next command (%v)", d, err)
		}
	}
}
