//go:build unix && !linux

package resident

import "errors"

// CheckPeer has no SO_PEERCRED here: the 0700 directory and the 0600
// socket, both checked to be the user's, are what keeps others out.
func CheckPeer(fd int) error { return nil }

// Peer is who is at the other end of a Unix socket.
type Peer struct {
	PID, UID, GID int
	Groups        []int
}

// PeerOf is Linux's SO_PEERCRED; elsewhere system mode, which rests on it,
// is refused (macOS would read LOCAL_PEERCRED: docs/receipts.md, "System
// mode").
func PeerOf(fd int) (Peer, error) {
	return Peer{}, errors.New("system mode needs the kernel's peer credentials (SO_PEERCRED), which joule reads on Linux only")
}
