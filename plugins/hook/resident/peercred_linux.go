//go:build linux

package resident

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
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

// Peer is who is at the other end of a Unix socket, as the kernel saw it
// when that end connected (a client) or listened (a gate): no later
// setuid or exec changes it.
type Peer struct {
	PID, UID, GID int
	// Groups are the peer's supplementary groups (SO_PEERGROUPS).
	Groups []int
}

// PeerOf reads the credentials of the peer of the Unix socket fd
// (SO_PEERCRED and SO_PEERGROUPS).
func PeerOf(fd int) (Peer, error) {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return Peer{}, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	p := Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}
	p.Groups, err = peerGroups(fd)
	return p, err
}

// soPeerGroups is SO_PEERGROUPS (Linux 4.13), which the syscall package
// does not name.
const soPeerGroups = 59

func peerGroups(fd int) ([]int, error) {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.SOL_SOCKET, soPeerGroups,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		if e == syscall.ERANGE && int(n/4) > len(buf) {
			buf = make([]uint32, n/4)
			continue
		}
		if e != 0 {
			return nil, fmt.Errorf("SO_PEERGROUPS: %w", e)
		}
		out := make([]int, n/4)
		for i := range out {
			out[i] = int(buf[i])
		}
		return out, nil
	}
}
