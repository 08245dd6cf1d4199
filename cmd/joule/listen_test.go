package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/joulehook/joule/energy/proxy"
	"github.com/joulehook/joule/tiers/config"
)

// TestPortsApartAndTakenPorts: the resident gate and the proxy have
// default ports of their own, so both start; a port that is taken is
// said with the process holding it and the flag (for joule serve, the
// install) that moves it.
func TestPortsApartAndTakenPorts(t *testing.T) {
	if config.DefaultServeAddr == proxy.DefaultListen {
		t.Fatalf("joule serve and joule proxy share %s", proxy.DefaultListen)
	}
	env, ws := initHome(t)
	if r := joule(t, nil, env, "proxy", "-h"); !strings.Contains(r.stdout, proxy.DefaultListen) {
		t.Errorf("proxy -h does not say its port:\n%s", r.stdout)
	}
	if r := joule(t, nil, env, "serve", "-h"); !strings.Contains(r.stdout, config.DefaultServeAddr) {
		t.Errorf("serve -h does not say its port:\n%s", r.stdout)
	}

	addr := freeAddr(t)
	first := exec.Command(jouleBin, "proxy", "--listen", addr, "--quiet")
	first.Env = append(os.Environ(), env...)
	out, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { first.Process.Signal(syscall.SIGINT); first.Wait() }()
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(l, "listening") {
		t.Fatalf("first proxy: %q %v", l, err)
	}
	r := joule(t, nil, env, "proxy", "--listen", addr)
	want := fmt.Sprintf("%s is in use by pid %d (%s proxy --listen %s --quiet)", addr, first.Process.Pid, jouleBin, addr)
	if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "hint: stop it, or give joule proxy --listen 127.0.0.1:PORT") {
		t.Fatalf("second proxy on %s: %+v\nwant %q", addr, r, want)
	}

	// joule serve on a port this test holds: the way to move it is
	// installing again with --addr, as the hooks name the port.
	ln, err := net.Listen("tcp", freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if r := jouleIn(t, ws, nil, env, "install", "claude-code", "--project", "--resident", "--addr", ln.Addr().String()); r.code != 0 {
		t.Fatal(r)
	}
	r = joule(t, nil, env, "serve")
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("is in use by pid %d", os.Getpid())) ||
		!strings.Contains(r.stderr, "joule install claude-code --project "+ws+" --resident --addr 127.0.0.1:PORT; then joule serve") {
		t.Fatalf("serve on a taken port: %+v", r)
	}
}
