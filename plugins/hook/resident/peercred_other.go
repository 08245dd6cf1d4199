//go:build !linux

package resident

// CheckPeer has no SO_PEERCRED here: the 0700 directory and the 0600
// socket, both checked to be the user's, are what keeps others out.
func CheckPeer(fd int) error { return nil }
