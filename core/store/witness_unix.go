//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockWait bounds the wait for a witness file's lock: a writer holds it
// for one rename, so a lock held longer is a process of the user's that
// took it to hold every decision back.
var lockWait = 10 * time.Second

// lockFile takes a lock on path (created 0600), exclusive or shared,
// waiting for it at most lockWait.
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
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for deadline, pause := time.Now().Add(lockWait), 100*time.Microsecond; ; pause = min(2*pause, 5*time.Millisecond) {
		err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == unix.EINTR {
			continue
		}
		if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
			break
		}
		time.Sleep(pause)
	}
	if err == unix.EWOULDBLOCK {
		err = fmt.Errorf("the lock %s has been held for more than %v by another process", path, lockWait)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
