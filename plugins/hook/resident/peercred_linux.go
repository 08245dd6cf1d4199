//go:build linux

package resident

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// PeerUID is the uid of the process at the other end of c (SO_PEERCRED).
func PeerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return int(cred.Uid), nil
}

// CheckPeer refuses a peer that is not the effective user.
func CheckPeer(c *net.UnixConn) error {
	uid, err := PeerUID(c)
	if err != nil {
		return err
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("%w: the peer runs as uid %d, not as you (uid %d)", ErrUnsafe, uid, os.Geteuid())
	}
	return nil
}
