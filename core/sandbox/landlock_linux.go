//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI returns the kernel's Landlock ABI version, 0 when Landlock is missing
// or disabled.
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// handledFS is what each ABI can restrict on the file system.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 5:
		return writeRights // all 16 rights
	case abi >= 3:
		return writeRights &^ fsIoctlDev
	case abi == 2:
		return writeRights &^ (fsIoctlDev | fsTruncate)
	case abi == 1:
		return writeRights &^ (fsIoctlDev | fsTruncate | fsRefer)
	}
	return 0
}

// Exec runs the program at path confined to spec, and returns only on
// failure, before or after confining. Where user namespaces work (and not
// spec.LandlockOnly) it uses the namespace construction (plan.go): the
// program runs in a clone of this process, which waits for it and exits
// with its status. Otherwise, or when that construction fails before the
// program started (said on warn when namespaces looked available), it
// confines the calling process with Landlock alone and replaces it with
// the program: the confinement is applied to the OS thread that calls
// execve, which is the thread the new program runs on.
func Exec(spec Spec, path string, argv, env []string, warn io.Writer) error {
	abi := ABI()
	if abi == 0 {
		return ErrUnavailable
	}
	if !spec.LandlockOnly && NamespacesAvailable() {
		err := execNamespace(spec, abi, path, argv, env, warn)
		var ns errNamespace
		if !errors.As(err, &ns) {
			return err
		}
		if warn != nil {
			fmt.Fprintf(warn, "joule: the mount namespace construction failed (%v); confining with Landlock alone, so: %s\n", err, strings.Join(LandlockOnlyGaps(), "; "))
		}
	}
	runtime.LockOSThread()
	// Never unlocked: after a failed confinement the thread must not go
	// back to the scheduler half-confined; the caller exits.
	if err := confineThread(spec, abi); err != nil {
		return err
	}
	if !spec.Net && abi >= 4 {
		if err := refuseUntracked(); err != nil {
			return err
		}
	}
	for _, l := range spec.Limits.rlimits(false) {
		if err := unix.Prlimit(0, l.resource, &l.value, nil); err != nil {
			return fmt.Errorf("prlimit(%d): %w", l.resource, err)
		}
	}
	err := syscall.Exec(path, argv, env)
	return fmt.Errorf("exec %s: %w", path, err)
}

func confineThread(spec Spec, abi int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	fs := handledFS(abi)
	st := spec.stats
	if st == nil {
		st = stats{}
	}
	for i, l := range spec.Layers {
		rules, err := l.rules(st, spec.writeAccess())
		if err != nil {
			return err
		}
		attr := ll.RulesetAttr{HandledAccessFS: fs}
		if abi >= 4 && !spec.Net {
			attr.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		}
		if abi >= 6 {
			attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
		}
		fd, err := ll.LandlockCreateRuleset(&attr, 0)
		if err != nil {
			return fmt.Errorf("landlock_create_ruleset: %w", err)
		}
		for _, r := range rules {
			if err := addRule(fd, r, fs); err != nil {
				syscall.Close(fd)
				return fmt.Errorf("layer %d: %w", i, err)
			}
		}
		if err := addConnect(fd, spec, abi); err != nil {
			syscall.Close(fd)
			return fmt.Errorf("layer %d: %w", i, err)
		}
		err = ll.LandlockRestrictSelf(fd, 0)
		syscall.Close(fd)
		if err != nil {
			return fmt.Errorf("landlock_restrict_self: %w", err)
		}
	}
	return nil
}

// addConnect grants TCP connect to spec.Connect's ports, and bind and
// connect to spec.Listen's, in the ruleset
// fd, which handles the network when spec.Net is off (ABI 4 and later).
func addConnect(fd int, spec Spec, abi int) error {
	if spec.Net || abi < 4 {
		return nil
	}
	for _, port := range spec.Connect {
		if err := ll.LandlockAddNetPortRule(fd, &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(port)}, 0); err != nil {
			return fmt.Errorf("landlock_add_rule (connect to TCP port %d): %w", port, err)
		}
	}
	for _, port := range spec.Listen {
		if err := ll.LandlockAddNetPortRule(fd, &ll.NetPortAttr{AllowedAccess: ll.AccessNetBindTCP | ll.AccessNetConnectTCP, Port: uint64(port)}, 0); err != nil {
			return fmt.Errorf("landlock_add_rule (bind TCP port %d): %w", port, err)
		}
	}
	return nil
}

// addRule opens r.Path without following a final symlink (Rules never
// lists one; a link swapped in since is refused here, not followed).
func addRule(fd int, r PathRule, handled uint64) error {
	access := r.Access & handled
	if access == 0 {
		return nil
	}
	pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // gone since it was listed: nothing to grant
		}
		return fmt.Errorf("open %s: %w", r.Path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", r.Path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return nil
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	attr := ll.PathBeneathAttr{ParentFd: pfd, AllowedAccess: access}
	if err := ll.LandlockAddPathBeneathRule(fd, &attr, 0); err != nil {
		return fmt.Errorf("landlock_add_rule %s: %w", r.Path, err)
	}
	return nil
}
