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

// mapFile extends f to size bytes (of NULs) and maps it shared, to be
// written through memory.
func mapFile(f *os.File, size int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		return nil, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Truncate(fi.Size()) // lines are written after what was there
		return nil, err
	}
	return m, nil
}

// remapFile maps f again at size bytes, unmapping m.
func remapFile(f *os.File, m []byte, size int64) ([]byte, error) {
	n, err := mapFile(f, size)
	if err != nil {
		return nil, err
	}
	unix.Munmap(m)
	return n, nil
}

func unmapFile(m []byte) { unix.Munmap(m) }
