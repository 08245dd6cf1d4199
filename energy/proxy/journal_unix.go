//go:build unix

package proxy

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errLocked is lockFile's answer for a journal another process holds.
var errLocked = errors.New("locked by a running proxy")

// lockFile takes an exclusive lock on f without waiting. The lock lives as
// long as the process keeps f open, and dies with it.
func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
