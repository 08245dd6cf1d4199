//go:build linux

package rule

import (
	"errors"
	"path"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 turns out to be missing (Linux before 5.6)
// or filtered (a seccomp profile): the fast path is then skipped.
var noOpenat2 atomic.Bool

// resolveDirFast resolves the absolute, checked path p with one openat2
// call (and a close) when p names an existing directory and none of its
// components is a symlink: the kernel then proves that the clean path is the
// real one. ok is false whenever it cannot prove that (a symlink, a missing
// or unreadable component, a file, an old kernel); the caller then walks p
// component by component, which gives the same answer for everything the
// fast path accepts.
func resolveDirFast(p string) (string, bool) {
	if noOpenat2.Load() {
		return "", false
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			noOpenat2.Store(true)
		}
		return "", false
	}
	unix.Close(fd)
	return path.Clean(p), true
}
