//go:build linux

package resident_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/plugins/hook/resident"
)

// serveEnv makes the test binary a gate of its own on the socket it names
// (see serveAs) instead of running the tests: it answers every request
// with the uid it runs as, so a test sees whose answer it got.
const serveEnv = "JOULE_RESIDENT_TEST_SERVE"

func TestMain(m *testing.M) {
	if sock := os.Getenv(serveEnv); sock != "" {
		serve(sock)
		return
	}
	os.Exit(m.Run())
}

func serve(sock string) {
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Chmod(sock, 0o666)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if _, err := resident.ReadRequest(c); err != nil {
				return
			}
			resident.WriteResponse(c, &resident.Response{Kind: resident.Answer, Stdout: []byte("uid " + strconv.Itoa(os.Geteuid()))})
		}()
	}
}

// The uids of the test: the system user, and a person on the machine (no
// password database entry is needed for either: the kernel compares uids).
const (
	sysUID    = 61001
	personUID = 61002
)

// serveAs runs a gate of serve's kind on sock as uid, until the test ends:
// a copy of the test binary that uid may run (the go tool's is in a
// directory only root may enter).
func serveAs(t *testing.T, uid int, sock string) {
	t.Helper()
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "joule-resident-server-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{serveEnv + "=" + sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, err := os.Lstat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server as uid %d did not listen on %s: %s", uid, sock, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// machine is a system configuration whose socket directory is base/run,
// the system user's own, 0755, below a root-owned 0755 base.
func machine(t *testing.T) (*home.System, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the system-mode checks are tested as root, which can run processes as other uids")
	}
	base, err := os.MkdirTemp("", "joule-resident-system-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	run := filepath.Join(base, "run")
	os.Mkdir(run, 0o755)
	os.Chown(run, sysUID, sysUID)
	if err := home.TrustedPath(run, sysUID); err != nil {
		t.Skipf("the temporary directory is not a trusted path here: %v", err)
	}
	return &home.System{User: "jsys", UID: sysUID, GID: sysUID, AdminGroup: "jadmin", AdminGID: 61000,
		Home: filepath.Join(base, "home"), Run: run, Bin: "/usr/local/libexec/joule"}, base
}

// personDir is a directory of the person's own below base.
func personDir(t *testing.T, base string) string {
	d := filepath.Join(base, "person")
	os.Mkdir(d, 0o755)
	os.Chown(d, personUID, personUID)
	return d
}

func ask(sys *home.System) (*resident.Response, error) {
	return resident.AskSystem(sys, &resident.Request{Op: resident.OpStatus}, time.Now().Add(5*time.Second), 200*time.Millisecond)
}

// TestDialSystem: the client talks to the system user's gate and to no
// other process: an impostor as the person (or as root) on the gate's
// path, in a socket directory the person could write, behind a socket
// chowned to the system user, or behind a symbolic link, gets nothing
// sent to it (ErrImpostor); a missing gate is no answer, not an impostor.
func TestDialSystem(t *testing.T) {
	t.Run("the system user's gate", func(t *testing.T) {
		sys, _ := machine(t)
		serveAs(t, sysUID, sys.Socket())
		resp, err := ask(sys)
		if err != nil || string(resp.Stdout) != "uid "+strconv.Itoa(sysUID) {
			t.Fatalf("%+v %v", resp, err)
		}
	})
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, sys *home.System, base string)
		want  string // in the error
	}{
		{"the person on the gate's path, the directory open to them", func(t *testing.T, sys *home.System, base string) {
			os.Chmod(sys.Run, 0o777)
			serveAs(t, personUID, sys.Socket())
		}, "mode 0777"},
		{"the person's socket chowned to the system user", func(t *testing.T, sys *home.System, base string) {
			// The person listens in their own directory; the socket is then
			// moved into place and given to the system user, so that only
			// the kernel's peer credentials tell it apart.
			own := filepath.Join(personDir(t, base), "gate.sock")
			serveAs(t, personUID, own)
			if err := os.Rename(own, sys.Socket()); err != nil {
				t.Fatal(err)
			}
			os.Chown(sys.Socket(), sysUID, sysUID)
		}, "runs as uid 61002"},
		{"root on the gate's path", func(t *testing.T, sys *home.System, base string) {
			serveAs(t, 0, sys.Socket())
		}, "belongs to uid 0"},
		{"a socket directory that is a symbolic link to the person's", func(t *testing.T, sys *home.System, base string) {
			own := personDir(t, base)
			serveAs(t, personUID, filepath.Join(own, "gate.sock"))
			os.Remove(sys.Run)
			os.Symlink(own, sys.Run)
		}, "symbolic link"},
		{"a socket directory of the person's", func(t *testing.T, sys *home.System, base string) {
			os.Chown(sys.Run, personUID, personUID)
			serveAs(t, personUID, sys.Socket())
		}, "belongs to uid 61002"},
		{"a directory above the socket directory the person may write", func(t *testing.T, sys *home.System, base string) {
			os.Chmod(base, 0o777)
			serveAs(t, sysUID, sys.Socket())
		}, "mode 0777"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sys, base := machine(t)
			c.setup(t, sys, base)
			resp, err := ask(sys)
			if !errors.Is(err, resident.ErrImpostor) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want ErrImpostor (%s), got %+v %v", c.want, resp, err)
			}
		})
	}
	t.Run("no gate", func(t *testing.T) {
		sys, _ := machine(t)
		start := time.Now()
		_, err := ask(sys)
		if err == nil || errors.Is(err, resident.ErrImpostor) {
			t.Fatalf("want a plain failure, got %v", err)
		}
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Errorf("gave up after %v, before the wait for a restarting gate", took)
		}
	})
}

// TestPeerOf reads the credentials of the other end, the groups included.
func TestPeerOf(t *testing.T) {
	a, b, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(a)
	defer syscall.Close(b)
	p, err := resident.PeerOf(a)
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := os.Getgroups()
	if p.UID != os.Geteuid() || p.GID != os.Getegid() || p.PID != os.Getpid() || len(p.Groups) != len(groups) {
		t.Fatalf("%+v; want uid %d gid %d pid %d groups %v", p, os.Geteuid(), os.Getegid(), os.Getpid(), groups)
	}
}

func socketPair() (int, int, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	return fds[0], fds[1], err
}
