//go:build linux && !(amd64 || arm64)

package sandbox

import "syscall"

// cloneShared is none here: without an assembly clone for this
// architecture that keeps its return address off the stack, the child
// gets its own copy of joule-exec's memory (see clone_linux_vm.go).
const cloneShared = 0

//go:nosplit
//go:norace
func rawClone(flags uintptr) (uintptr, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, flags, 0, 0, 0, 0, 0)
	return r, e
}
