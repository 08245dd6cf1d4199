//go:build linux

package resident

import (
	"fmt"
	"os"
	"syscall"
)

// PeerUID is the uid of the process at the other end of the Unix socket
// fd (SO_PEERCRED).
func PeerUID(fd int) (int, error) {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return -1, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	return int(cred.Uid), nil
}

// CheckPeer refuses a peer of the Unix socket fd that is not the
// effective user.
func CheckPeer(fd int) error {
	uid, err := PeerUID(fd)
	if err != nil {
		return err
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("%w: the peer runs as uid %d, not as you (uid %d)", ErrUnsafe, uid, os.Geteuid())
	}
	return nil
}
