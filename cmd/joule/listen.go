package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// listenOn listens on addr for a command whose flag chose it. A port that
// is taken is said with the process that holds it and how to pick another
// (move), never as a bare "address already in use".
func listenOn(addr, move string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	who := "another process"
	if _, port, perr := net.SplitHostPort(addr); perr == nil {
		if p, perr := strconv.Atoi(port); perr == nil {
			if h := portHolder(p); h != "" {
				who = h
			}
		}
	}
	return nil, withHint(fmt.Errorf("%s is in use by %s", addr, who), "stop it, or "+move)
}

// portHolder names the process listening on TCP port (pid and command
// line), from /proc: the socket's inode in /proc/net/tcp{,6}, then the
// process with a descriptor on it. "" when it cannot be told (another
// user's process, or no /proc).
func portHolder(port int) string {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st ... inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		fh.Close()
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, proc := range procs {
		fds, err := os.ReadDir(filepath.Join(proc, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				cmd, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
				line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
				if len(line) > 120 {
					line = line[:120] + "…"
				}
				return fmt.Sprintf("pid %s (%s)", filepath.Base(proc), line)
			}
		}
	}
	return "another user's process"
}
