package hosttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// netnsEnv marks the test binary that Main re-ran inside its own network
// namespace; binEnv carries the directory of the binaries built outside it.
const (
	netnsEnv = "JOULE_HOSTTEST_NETNS"
	binEnv   = "JOULE_HOSTTEST_BIN"
)

// Main is a host e2e package's TestMain: it builds joule and joule-exec,
// and the other commands named in also (joule-hook, for a test of the thin
// client), side by side (CGO_ENABLED=0, -trimpath, as make build does) from
// repo (the path of the repository root relative to the package) into
// a temporary directory, then, where the machine allows it (root, unshare),
// runs the tests again inside a loopback-only network namespace, so that
// the CLI can reach nothing but the fake model server on 127.0.0.1, and a
// private mount namespace, where a test may mount a small tmpfs. It returns
// the exit code and sets Bin to the directory of the binaries.
func Main(m *testing.M, repo string, also ...string) int {
	if dir := os.Getenv(binEnv); dir != "" && os.Getenv(netnsEnv) == "1" {
		Bin, NetNS = dir, true
		if err := loopbackUp(); err != nil {
			fmt.Fprintln(os.Stderr, "hosttest: bringing lo up in the namespace:", err)
			return 1
		}
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "joule-hosttest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// joule-exec beside joule, as make build puts it: contained lines run
	// under it. joule-hook only where a test asks for it: beside joule,
	// installed hooks run it instead of joule hook.
	for _, name := range append([]string{"joule", "joule-exec"}, also...) {
		build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, name), "./cmd/"+name)
		build.Dir = repo
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "hosttest: go build ./cmd/%s: %v\n%s", name, err, out)
			return 1
		}
	}
	Bin = dir
	if unshare, err := exec.LookPath("unshare"); err == nil && os.Geteuid() == 0 && os.Getenv("JOULE_HOSTTEST_NO_NETNS") == "" {
		if exec.Command(unshare, "-n", "-m", "true").Run() == nil {
			cmd := exec.Command(unshare, append([]string{"-n", "-m", "--", os.Args[0]}, os.Args[1:]...)...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			cmd.Env = append(os.Environ(), netnsEnv+"=1", binEnv+"="+dir)
			if err := cmd.Run(); err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					return ee.ExitCode()
				}
				fmt.Fprintln(os.Stderr, "hosttest: unshare -n -m:", err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "hosttest: no loopback-only network namespace here (needs root and unshare -n -m); the CLI runs in the machine's")
	return m.Run()
}

// Bin is the directory holding the joule binary Main built.
var Bin string

// NetNS reports whether the tests run in a loopback-only namespace.
var NetNS bool

// loopbackUp sets lo up in a fresh network namespace, where it starts down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var req [unix.IFNAMSIZ + 24]byte
	copy(req[:], "lo")
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return e
	}
	flags := (*uint16)(unsafe.Pointer(&req[unix.IFNAMSIZ]))
	*flags |= unix.IFF_UP | unix.IFF_RUNNING
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return e
	}
	return nil
}

// NeedTool fails the test when CI is set and the tool is missing (the
// setup scripts install it), and skips it otherwise.
func NeedTool(t *testing.T, what, how string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing: %s", what, how)
	}
	t.Skipf("%s is missing: %s", what, how)
}

// Run runs cmd in its own process group and returns its combined output;
// when it ends, or ctx does, every process of the group still alive (a
// CLI's MCP servers, a hook it left behind) is killed, so nothing writes
// into the test's directories after the test.
func Run(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return run(ctx, cmd)
}

// run is Run for a cmd whose SysProcAttr asks for its own process group.
func run(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A child that keeps the output open must not hold Wait past the CLI.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			syscall.Kill(-pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	syscall.Kill(-pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		err = fmt.Errorf("%v (%w)", err, ctx.Err())
	}
	return out.Bytes(), err
}

// Env returns the value of key in env, the last one set.
func Env(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}
