//go:build unix

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes a lock on path (created 0600), exclusive or shared,
// waiting for it.
func lockFile(path string, exclusive bool) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		how := unix.LOCK_SH
		if exclusive {
			how = unix.LOCK_EX
		}
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
