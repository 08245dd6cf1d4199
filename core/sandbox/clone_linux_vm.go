//go:build linux && (amd64 || arm64)

package sandbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// cloneShared is the flag the namespace child is cloned with on top of
// CLONE_VFORK: it shares joule-exec's memory until it execs, so that the
// kernel copies no page tables (copying them and write-protecting every
// page for the copy-on-write cost milliseconds on each contained command).
// The child runs only forkChild's system calls, on the stack of the
// parent, which waits: nothing of the parent's memory is written but the
// failure report.
const cloneShared = unix.CLONE_VM

// rawClone is clone(2) safe for a child that shares the stack (assembly).
func rawClone(flags uintptr) (pid uintptr, err syscall.Errno)
