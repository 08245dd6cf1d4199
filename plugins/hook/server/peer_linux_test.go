package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook/resident"
)

// dialEnv makes the test binary a client of the socket it names (see
// TestPeerRefused) instead of running the tests.
const dialEnv = "JOULE_SERVER_TEST_DIAL"

func TestMain(m *testing.M) {
	if sock := os.Getenv(dialEnv); sock != "" {
		os.Exit(dial(sock))
	}
	os.Exit(m.Run())
}

// dial sends a status request to sock and prints how many bytes of answer
// came back.
func dial(sock string) int {
	c, err := net.DialTimeout("unix", sock, 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	resident.WriteRequest(c, &resident.Request{Op: resident.OpStatus})
	// A refusal closes the connection with the request unread: a reset.
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Print(len(b))
	return 0
}

// TestPeerRefused: a client running as another uid gets no answer, and the
// refusal is logged; one running as the gate's user is answered. The gate's
// own directory (0700) keeps other users from its socket before this check
// runs, so the connection is served here from a socket anyone may reach.
func TestPeerRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a client as another uid needs root")
	}
	h := newHome(t)
	log := new(syncBuffer)
	r, err := New(h.config(log))
	if err != nil {
		t.Fatal(err)
	}
	r.g = h.gate
	dir, err := os.MkdirTemp("", "joule-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "client")
	if err := os.WriteFile(client, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "gate.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(sock, 0o777)
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			r.handle(context.Background(), c)
		}
	}()
	for _, c := range []struct {
		name     string
		uid      uint32
		answered bool
	}{{"the gate's user", 0, true}, {"another user", 65534, false}} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(client, "-test.run=^$")
			cmd.Env = append(os.Environ(), dialEnv+"="+sock)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.uid, Gid: c.uid}}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("client: %v: %s", err, stderr.String())
			}
			if got := string(out) != "0"; got != c.answered {
				t.Errorf("answered %v (%s bytes), want %v", got, out, c.answered)
			}
			refused := strings.Contains(log.String(), "refused a client: unsafe gate directory or socket: the peer runs as uid 65534")
			if refused != !c.answered {
				t.Errorf("refusal logged %v: %q", refused, log)
			}
		})
	}
}
