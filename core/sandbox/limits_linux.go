//go:build linux

package sandbox

import "golang.org/x/sys/unix"

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
