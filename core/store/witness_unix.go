//go:build unix

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes a lock on path (created 0600), exclusive or shared,
// waiting for it.
func lockFile(path string, exclusive bool) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil && !exclusive && errors.Is(err, os.ErrPermission) {
		// A reader of a witness it may not write (a read-only home): a
		// shared lock needs only a read-only descriptor, and where the lock
		// file does not exist and cannot be made, no writer can make it
		// either, so there is nothing to wait for.
		f, err = os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return func() {}, nil
		}
	}
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
