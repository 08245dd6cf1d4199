package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrUnavailable is Landlock missing from the kernel (or disabled at boot).
var ErrUnavailable = errors.New("Landlock is not available in this kernel (it needs Linux 5.13 or later with landlock in the lsm= boot list)")

// Missing lists what an ABI version cannot enforce of what Exec asks for,
// in words, for the one line joule exec prints about it.
func Missing(abi int, net bool) []string {
	var out []string
	if abi < 2 {
		out = append(out, "renames and links across directories are all refused (no REFER below ABI 2)")
	}
	if abi < 3 {
		out = append(out, "truncating files is not restricted (ABI 3)")
	}
	if abi < 4 && !net {
		out = append(out, "TCP connect and bind are not restricted (ABI 4)")
	}
	if abi < 5 {
		out = append(out, "device ioctls are not restricted (ABI 5)")
	}
	if abi < 6 {
		out = append(out, "abstract unix sockets and signals are not scoped (ABI 6)")
	}
	return out
}

// LandlockOnlyGaps is what the Landlock-only construction (where user
// namespaces are off, or JOULE_EXEC_LANDLOCK_ONLY=1) leaves open that the
// namespace construction closes, in words, for joule exec's warning and
// Mode: the caller reports them, the command still runs.
func LandlockOnlyGaps() []string {
	return []string{
		"file modes, owners and times outside the writable trees can be changed (Landlock has no right for chmod, chown or utimes)",
		"the number of processes is not bounded (RLIMIT_NPROC would count every process of the user)",
		"processes the command leaves running outlive it (no PID namespace)",
		"what programs run later outside read as configuration or code inside the writable trees stays writable: git's configuration and hooks, shell start-up files, PATH directories (a read-only mount needs a mount namespace; Landlock would refuse every new entry in .git), and what git would run of a repository the command makes is not taken out afterwards (joule-exec execs the program in its own place)",
		"the toolchains' caches and the workspace's git-ignored code (node_modules, .venv, an ignored .npmrc or local.mk) are writable in place (their private layer is an overlay, and a read-only bind a mount, which need a mount namespace)",
	}
}

// rootGap is what the namespace construction leaves open for uid 0 where
// the kernel keeps one pid_max for the whole machine (before Linux 6.14)
// and no control group of the command's own bounds its tasks.
const rootGap = "the number of processes is not bounded (the kernel does not apply RLIMIT_NPROC to uid 0, keeps pid_max per PID namespace only from Linux 6.14, and no pids cgroup could be made)"

// cgroupGap is what the namespace construction leaves open where no
// control group of the command's own can be made (cgroup_linux.go).
const cgroupGap = "memory spread over many processes is bounded per process only (no cgroup of the command's own: that needs root, or a cgroup v2 subtree systemd delegates to the user)"

// Mode describes the containment a command gets, for receipts and
// messages: "landlock ABI 7, network off", or "none" without Landlock.
func Mode(abi int, net bool) string { return ModeOf(abi, net, NamespacesAvailable()) }

// ModeOf is Mode for the construction the caller knows a command gets:
// with namespaces, or by Landlock alone (where user namespaces are off, or
// LandlockOnlyEnv chooses it).
func ModeOf(abi int, net, namespaces bool) string {
	if abi <= 0 {
		return "none"
	}
	s := fmt.Sprintf("landlock ABI %d, network %s", abi, map[bool]string{true: "on", false: "off"}[net])
	m := Missing(abi, net)
	if namespaces {
		s = fmt.Sprintf("landlock ABI %d and user, mount and PID namespaces, network %s", abi, map[bool]string{true: "on", false: "off"}[net])
		if !CgroupAvailable() {
			if os.Getuid() == 0 && !pidMaxPerNamespace() {
				m = append(m, rootGap)
			}
			m = append(m, cgroupGap)
		}
	} else {
		m = append(m, LandlockOnlyGaps()...)
	}
	if len(m) > 0 {
		s += " (best effort: " + strings.Join(m, "; ") + ")"
	}
	return s
}

// LandlockOnlyEnv set to 1 makes joule exec and joule-exec confine with
// Landlock alone, as where user namespaces are off: the tests run the
// attack table through both constructions with it. It can only choose
// between two confinements, never run a command unconfined.
const LandlockOnlyEnv = "JOULE_EXEC_LANDLOCK_ONLY"
