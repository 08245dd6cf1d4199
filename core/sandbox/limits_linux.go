//go:build linux

package sandbox

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// totalMemory is the machine's memory in bytes, 0 if unknown.
func totalMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// rlimit is one limit to set: the resource and the value, never above
// what the caller has (an unprivileged process cannot raise its hard
// limit, and a lower one the caller chose stays).
type rlimit struct {
	resource int
	value    unix.Rlimit
}

// rlimits lists what l sets; procs says whether RLIMIT_NPROC is among
// them (only in a user namespace of its own, where it counts the
// command's tasks alone).
func (l Limits) rlimits(procs bool) []rlimit {
	var out []rlimit
	add := func(res int, v uint64) {
		if v == 0 {
			return
		}
		var cur unix.Rlimit
		if unix.Getrlimit(res, &cur) != nil {
			return
		}
		soft, hard := min(cur.Cur, v), min(cur.Max, v)
		if res == unix.RLIMIT_CPU && hard < unix.RLIM_INFINITY && hard == v {
			hard = min(cur.Max, v+1) // SIGXCPU first, then SIGKILL
		}
		out = append(out, rlimit{res, unix.Rlimit{Cur: soft, Max: hard}})
	}
	if procs {
		add(unix.RLIMIT_NPROC, l.Procs)
	}
	add(unix.RLIMIT_DATA, l.Data)
	add(unix.RLIMIT_CPU, l.CPU)
	add(unix.RLIMIT_FSIZE, l.FileSize)
	return out
}

// reservedPIDs is the kernel's RESERVED_PIDS: once a PID namespace's
// numbers wrap, it allocates from there up to pid_max.
const reservedPIDs = 300

// pidMax is the pid_max that bounds a PID namespace to about procs tasks
// (procs once its numbers have wrapped, procs+299 before), and whether
// this kernel keeps pid_max per PID namespace (Linux 6.14).
func pidMax(procs uint64) (uint64, bool) {
	if procs == 0 || !pidMaxPerNamespace() {
		return 0, false
	}
	return procs + reservedPIDs, true
}

// pidMaxPerNamespace reports Linux 6.14 or later, where pid_max belongs to
// the PID namespace of the task that writes it.
func pidMaxPerNamespace() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 6, 14)
}

// kernelAtLeast reports whether the release (6.18.0-1-amd64) is major.minor
// or later; a release it cannot read is not.
func kernelAtLeast(release string, major, minor int) bool {
	lead := func(s string) (int, bool) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		n, err := strconv.Atoi(s[:i])
		return n, err == nil
	}
	f := strings.SplitN(release, ".", 3)
	if len(f) < 2 {
		return false
	}
	ma, ok1 := lead(f[0])
	mi, ok2 := lead(f[1])
	return ok1 && ok2 && (ma > major || ma == major && mi >= minor)
}
