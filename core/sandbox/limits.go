package sandbox

import "runtime"

// Limits bound what one contained command may consume, as resource limits
// (setrlimit) of every process in the sandbox; 0 leaves a limit as the
// caller's. A limit is only ever lowered: where the caller's own is lower
// already, it stays.
//
// They are per process (RLIMIT_NPROC apart), so they stop a fork bomb or
// a runaway loop, not a command that spreads its use over many processes;
// a control group of the command's own does (Memory, and Procs for uid 0
// too), where joule-exec may make one (cgroup_linux.go: as root, or in a
// subtree systemd delegates to the user). With the namespace construction
// every process of the command also ends with it (a PID namespace), which
// bounds the rest by the host's own timeout.
type Limits struct {
	// Procs bounds the processes and threads (tasks) of this user in the
	// sandbox (RLIMIT_NPROC). In a user namespace the kernel counts them
	// per namespace, so the bound is the command's own; outside one it
	// counts every process of the user, so the Landlock-only construction
	// does not set it. The kernel does not apply it to uid 0; where it
	// keeps pid_max per PID namespace (Linux 6.14), the namespace
	// construction also sets the command's PID namespace's pid_max to
	// Procs+300 (pidMax), which holds for uid 0 too.
	Procs uint64 `json:"procs,omitempty"`
	// Data bounds each process's data, heap and writable private
	// mappings in bytes (RLIMIT_DATA): what it has made writable, not the
	// address space it reserved, which Go and V8 reserve far beyond use.
	Data uint64 `json:"data,omitempty"`
	// CPU bounds each process's CPU time in seconds (RLIMIT_CPU): SIGXCPU
	// at the limit, SIGKILL a second later.
	CPU uint64 `json:"cpu,omitempty"`
	// Memory bounds the memory of all the command's processes together in
	// bytes (the cgroup's memory.max, or memory.limit_in_bytes in cgroup
	// v1), where the command gets a control group of its own
	// (cgroup_linux.go): past it the kernel reclaims, then kills one of
	// them. There the group's pids.max also bounds its tasks to Procs,
	// for uid 0 too.
	Memory uint64 `json:"memory,omitempty"`
	// FileSize bounds the size of a file a process writes in bytes
	// (RLIMIT_FSIZE): SIGXFSZ, or EFBIG where it is caught.
	FileSize uint64 `json:"file_size,omitempty"`
}

// DefaultLimits are the limits a Spec gets unless the policy says others:
// wide enough for ordinary builds and test runs (go build and go test of a
// real module, npm test), whose parallelism follows the number of cores,
// and narrow enough that a fork bomb or a memory burn ends without taking
// the machine with it:
//
//   - 256 tasks and 128 more per core: a compiler per core with its
//     threads, a test binary per core with its own;
//   - a quarter of the memory per process (2 GiB at least, unless that is
//     more than half of it): a large link or a Jest worker fits;
//   - half of the memory for all of them together, where a control group
//     bounds the sum;
//   - ten minutes of every core's time per process;
//   - 16 GiB per file.
func DefaultLimits() Limits {
	n := uint64(runtime.NumCPU())
	l := Limits{Procs: 256 + 128*n, CPU: 600 * n, FileSize: 16 << 30}
	if mem := totalMemory(); mem > 0 {
		l.Data = mem / 4
		l.Memory = mem / 2
		if l.Data < 2<<30 {
			l.Data = min(2<<30, mem/2)
		}
	}
	return l
}

// merged is l with each limit that is 0 taken from d.
func (l Limits) merged(d Limits) Limits {
	pick := func(a, b uint64) uint64 {
		if a != 0 {
			return a
		}
		return b
	}
	return Limits{Procs: pick(l.Procs, d.Procs), Data: pick(l.Data, d.Data), Memory: pick(l.Memory, d.Memory), CPU: pick(l.CPU, d.CPU), FileSize: pick(l.FileSize, d.FileSize)}
}
