//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// refuseUntracked installs a seccomp filter on the calling thread (kept
// across execve) that fails with EPERM what Landlock's TCP rules cannot
// see, with the network off: every socket but a TCP one (AF_INET or
// AF_INET6, SOCK_STREAM, protocol 0 or IPPROTO_TCP), whose connect and
// bind Landlock refuses; so no UDP, MPTCP, SCTP, raw, netlink or packet
// socket, and no unix socket, through which the command could reach a
// server outside by its path (Landlock scopes those only from ABI 9);
// socketpair stays, for pipes between the command's own processes.
// Also io_uring_setup (io_uring can open and connect sockets without
// those system calls) and every system call of another ABI than the
// native one (i386's socketcall on x86-64).
func refuseUntracked() error {
	prog, _ := untrackedFilter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}

// untrackedFilter is the program refuseUntracked installs.
func untrackedFilter() ([]unix.SockFilter, error) {
	arch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		arch = unix.AUDIT_ARCH_AARCH64
	}
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		and   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	// struct seccomp_data: nr at 0, arch at 4, args[i] at 16+8i (the low
	// word first on these little-endian architectures).
	prog := []unix.SockFilter{
		{Code: ld, K: 4},
		{Code: jeq, Jt: 1, K: arch},
		{Code: ret, K: eperm},
		{Code: ld, K: 0},
		{Code: and, K: 0xbfffffff}, // x32 system calls are the native ones with bit 30 set
		{Code: jeq, Jf: 1, K: uint32(unix.SYS_IO_URING_SETUP)},
		{Code: ret, K: eperm},
		{Code: jeq, Jf: 11, K: uint32(unix.SYS_SOCKET)}, // else allow
		{Code: ld, K: 16},                               // domain
		{Code: jeq, Jt: 1, K: unix.AF_INET},
		{Code: jeq, Jf: 7, K: unix.AF_INET6}, // else refuse
		{Code: ld, K: 24},                    // type, without SOCK_CLOEXEC and SOCK_NONBLOCK
		{Code: and, K: 0xf},
		{Code: jeq, Jf: 4, K: unix.SOCK_STREAM}, // else refuse
		{Code: ld, K: 32},                       // protocol
		{Code: jeq, Jt: 1, K: 0},
		{Code: jeq, Jf: 1, K: unix.IPPROTO_TCP}, // else refuse
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: eperm},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	return prog, nil
}
