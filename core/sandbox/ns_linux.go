//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// NamespacesAvailable reports whether this kernel lets an unprivileged
// process create a user namespace (the sysctls Debian, Ubuntu and the
// upstream kernel use to turn that off), so that Exec uses the namespace
// construction. It reads three files and creates nothing; Exec still falls
// back to Landlock alone if the clone fails.
func NamespacesAvailable() bool {
	read := func(p string) (int, bool) {
		b, err := readProcFile(p)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil
	}
	if n, ok := read("/proc/sys/user/max_user_namespaces"); !ok || n == 0 {
		return false
	}
	if n, ok := read("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 {
		return false
	}
	if n, ok := read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && n != 0 {
		return false
	}
	return true
}

// readProcFile reads a small file of /proc with plain system calls:
// os.ReadFile registers a /proc file with the runtime's poller, which it
// starts for that (an epoll instance, an eventfd, a thread waiting on
// them), a cost on every contained command for reading a number.
func readProcFile(p string) ([]byte, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var buf [64]byte
	n, err := readFull(fd, buf[:])
	if err != nil {
		return nil, err
	}
	if n == len(buf) {
		return nil, fmt.Errorf("%s: longer than %d bytes", p, len(buf)-1)
	}
	return buf[:n], nil
}

// rawCall is one system call the cloned child makes before exec'ing the
// program, its arguments computed beforehand: the child is a copy of a
// multi-threaded Go process with one thread, so it may not allocate, take a
// lock or grow its stack, only make system calls (as the standard
// library's forkAndExecInChild does).
type rawCall struct {
	trap   uintptr
	a      [6]uintptr
	setFD  bool   // the result is an fd the following calls use
	fdTo   *int32 // with setFD, the fd is also stored here (a struct a later call reads)
	useFD  bool   // a[0] is that fd
	ignore bool   // a failure is not one
	// skipOnSuccess calls after this one are not made if it succeeds: the
	// ones that report its failure.
	skipOnSuccess int
}

// nsStep names the calls of a child for the message when one fails.
type nsStep struct {
	calls []rawCall
	what  []string
}

func (s *nsStep) add(what string, c rawCall) {
	s.calls = append(s.calls, c)
	s.what = append(s.what, what)
}

// ptr keeps b alive in keep and returns its address.
func ptr(keep *[][]byte, b []byte) uintptr {
	*keep = append(*keep, b)
	return uintptr(unsafe.Pointer(&b[0]))
}

func cstr(keep *[][]byte, s string) uintptr {
	return ptr(keep, append([]byte(s), 0))
}

// remountFlags are the flags of the mount p is on that a bind of it must
// keep when remounted (the kernel locks them in a user namespace).
func remountFlags(p string) uintptr {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return 0
	}
	var f uintptr
	for _, m := range [][2]uintptr{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&m[0] != 0 {
			f |= m[1]
		}
	}
	return f
}

// pathBeneath is struct landlock_path_beneath_attr (packed: the access
// rights, then the descriptor), which a child fills in with the
// descriptor it opened.
type pathBeneath struct {
	access uint64
	fd     int32
	_      int32
}

// makePlaceholders creates the guards' absent paths that git reads as it
// reads none (persist.go), so that a read-only mount can cover them, and
// forgets what st knew of them.
func makePlaceholders(gs []guard, st stats) {
	for _, g := range gs {
		if g.make.kind == 0 || st.lstat(g.path).exists {
			continue
		}
		for d := g.path; d != "/" && d != "."; d = filepath.Dir(d) {
			delete(st, d)
		}
		switch g.make.kind {
		case 'd':
			os.MkdirAll(g.path, 0o755)
		case 'f':
			if os.MkdirAll(filepath.Dir(g.path), 0o755) != nil {
				continue
			}
			fd, err := syscall.Open(g.path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
			if err != nil {
				continue
			}
			syscall.Write(fd, []byte(g.make.content))
			syscall.Close(fd)
		}
	}
}

// errNamespace is the namespace construction failing before the program
// ran; Exec then confines with Landlock alone.
type errNamespace struct{ err error }

func (e errNamespace) Error() string { return e.err.Error() }

// execNamespace runs the program in the namespace construction (see
// plan.go) and, once it has started, waits for it and exits with its
// status: it returns only when the program did not start.
func execNamespace(spec Spec, abi int, path string, argv, env []string, warn io.Writer) error {
	spec.guarded = spec.guards()
	makePlaceholders(spec.guarded, spec.stats)
	for _, t := range spec.ignoredStopped {
		if warn != nil {
			fmt.Fprintf(warn, "joule-exec: the look for git-ignored paths below %s stopped (more than %d directories, %d levels or %d files): what lies further is writable in place for this command, and the sweep after it takes out only what it recognises as code\n", t, maxIgnoredListings, ignoredDepth, maxIgnoredFiles)
		}
	}
	if spec.stats == nil {
		spec.stats = stats{}
	}
	// An absent cache is not made: it stays absent, and unwritable, until
	// its toolchain makes it outside (as before there were layers).
	var caches []string
	for _, c := range spec.Caches {
		if st := spec.stats.lstat(c); st.dir && !st.link {
			caches = append(caches, c)
		}
	}
	// The workspace's ignored code (ignored.go) gets the caches' private
	// layer too; where none can be made it is bound read-only.
	if len(caches) > 0 || len(spec.ignoredDirs) > 0 || spec.LayerDir != "" {
		ovs, lock, slot, err := prepareLayers(spec.LayerDir, append(slices.Clone(caches), spec.ignoredDirs...), time.Now())
		if err != nil && warn != nil && len(caches)+len(spec.ignoredDirs) > 0 {
			fmt.Fprintf(warn, "joule-exec: the toolchains' caches and the workspace's ignored code (%s) are read-only for this command: %v\n", strings.Join(append(slices.Clone(caches), spec.ignoredDirs...), ", "), err)
		}
		_ = lock // held (its flock) until joule-exec exits; closed on exec
		spec.slot = slot
		for _, o := range ovs {
			o.InTree = slices.Contains(spec.ignoredDirs, o.Path)
			if _, ok := o.options(); ok {
				spec.overlays = append(spec.overlays, o)
				continue
			}
			if o.InTree {
				spec.guarded = append(spec.guarded, guard{path: o.Path})
			}
			if warn != nil {
				fmt.Fprintf(warn, "joule-exec: %s is read-only for this command: its path holds a character overlayfs options cannot carry (, : \\)\n", o.Path)
			}
		}
		if err != nil {
			for _, d := range spec.ignoredDirs {
				spec.guarded = append(spec.guarded, guard{path: d})
			}
		}
	}
	// The stand-ins for absent protected names (standin_linux.go): held
	// until every process of the command has ended, released on every
	// return before the program ran (the caller may then confine with
	// Landlock alone, which carves instead).
	want, dirs := spec.wantStandIns()
	held, stand := takeStandIns(standInState(spec.LayerDir), want, dirs, spec.stats)
	spec.standIns = held
	defer stand.release(spec.stats)
	plan, err := spec.Plan()
	if err != nil {
		return err
	}
	var keep [][]byte
	var s nsStep
	// SIGKILL: the program is the init of its PID namespace, which
	// ignores every other signal sent from outside it without a handler.
	s.add("prctl(PR_SET_PDEATHSIG)", rawCall{trap: unix.SYS_PRCTL, a: [6]uintptr{unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL)}})
	// The command's control group (cgroup_linux.go), entered first, so
	// that every process of the command is in it; removed once they are
	// gone, or by the next command if joule-exec is killed first.
	cg, err := makeCgroup(spec.Limits)
	if err != nil && warn != nil {
		fmt.Fprintf(warn, "joule-exec: the command's processes and memory are bounded per process only: its control group could not be made: %v\n", err)
	}
	started := false
	defer func() {
		if !started {
			cg.remove()
		}
	}()
	var leave []uintptr
	if cg != nil {
		for i, fd := range cg.enter {
			s.add("enter cgroup "+cg.dirs[i], rawCall{trap: unix.SYS_WRITE, a: [6]uintptr{uintptr(fd), uintptr(unsafe.Pointer(&cgroupEnter[0])), 1}, ignore: true, skipOnSuccess: 1})
			msg := "joule-exec: the command's processes and memory are bounded per process only: it could not enter its control group " + cg.dirs[i] + "\n"
			s.add("write", rawCall{trap: unix.SYS_WRITE, a: [6]uintptr{2, ptr(&keep, []byte(msg)), uintptr(len(msg))}, ignore: true})
		}
		for _, fd := range cg.leave {
			leave = append(leave, uintptr(fd))
		}
	}
	cwd := unix.AT_FDCWD
	writeFile := func(name, content string) {
		s.add("open "+name, rawCall{trap: unix.SYS_OPENAT, a: [6]uintptr{uintptr(cwd), cstr(&keep, name), unix.O_WRONLY | unix.O_CLOEXEC}, setFD: true})
		s.add("write "+name, rawCall{trap: unix.SYS_WRITE, a: [6]uintptr{0, ptr(&keep, []byte(content)), uintptr(len(content))}, useFD: true})
		s.add("close "+name, rawCall{trap: unix.SYS_CLOSE, useFD: true})
	}
	uid, gid := os.Getuid(), os.Getgid()
	writeFile("/proc/self/setgroups", "deny")
	writeFile("/proc/self/uid_map", fmt.Sprintf("%d %d 1\n", uid, uid))
	writeFile("/proc/self/gid_map", fmt.Sprintf("%d %d 1\n", gid, gid))
	// The command's tasks are bounded by its PID namespace's pid_max too,
	// which the kernel applies to uid 0 as well (it exempts uid 0 from
	// RLIMIT_NPROC). The child, which holds every capability in its user
	// namespace until it drops them, writes it while /proc is still
	// writable. Only where the kernel keeps pid_max per PID namespace:
	// before Linux 6.14 the file is the machine's, and a root user's
	// child could write it.
	if max, ok := pidMax(spec.Limits.Procs); ok {
		name := "/proc/sys/kernel/pid_max"
		v := []byte(strconv.FormatUint(max, 10))
		s.add("open "+name, rawCall{trap: unix.SYS_OPENAT, a: [6]uintptr{uintptr(cwd), cstr(&keep, name), unix.O_WRONLY | unix.O_CLOEXEC}, setFD: true, ignore: true})
		s.add("write "+name, rawCall{trap: unix.SYS_WRITE, a: [6]uintptr{0, ptr(&keep, v), uintptr(len(v))}, useFD: true, ignore: true})
		s.add("close "+name, rawCall{trap: unix.SYS_CLOSE, useFD: true, ignore: true})
	}
	mount := func(what, src, target, fstype string, flags uintptr, data string) {
		var a [6]uintptr
		if src != "" {
			a[0] = cstr(&keep, src)
		}
		a[1] = cstr(&keep, target)
		if fstype != "" {
			a[2] = cstr(&keep, fstype)
		}
		a[3] = flags
		if data != "" {
			a[4] = cstr(&keep, data)
		}
		s.add(what+" "+target, rawCall{trap: unix.SYS_MOUNT, a: a})
	}
	// Everything read-only, as bubblewrap's --ro-bind / / makes it: Landlock
	// has no right for chmod, chown, utimes or xattrs, the mount has. Then
	// each writable tree is bound onto itself and made writable again
	// (with what is mounted below it, where the kernel lets it: a mount
	// that was read-only outside stays so, and then only the tree's own is).
	rdonly := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	rdwr := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	setattr := func(what, target string, flags uintptr, attr *unix.MountAttr, ignore bool) {
		s.add(what+" "+target, rawCall{trap: unix.SYS_MOUNT_SETATTR, a: [6]uintptr{uintptr(cwd), cstr(&keep, target), flags,
			uintptr(unsafe.Pointer(attr)), unix.MOUNT_ATTR_SIZE_VER0}, ignore: ignore})
	}
	setattr("mount_setattr(read-only)", "/", unix.AT_RECURSIVE, rdonly, false)
	for _, t := range plan.Writable {
		mount("bind", t, t, "", unix.MS_BIND|unix.MS_REC, "")
		setattr("mount_setattr(writable, recursive)", t, unix.AT_RECURSIVE, rdwr, true)
		setattr("mount_setattr(writable)", t, 0, rdwr, false)
	}
	// The caches' overlays: each session layer's directory is bound
	// writable first (overlayfs refuses an upper layer on a read-only
	// mount; $JOULE_HOME, which holds it, is hidden below), then each
	// cache is mounted over itself. One that fails stays read-only, as
	// everything outside the writable trees is, and says so.
	slots := map[string]bool{}
	for _, o := range plan.Overlays {
		slot := filepath.Dir(filepath.Dir(o.Upper))
		if !slots[slot] {
			slots[slot] = true
			mount("bind", slot, slot, "", unix.MS_BIND, "")
			setattr("mount_setattr(writable)", slot, 0, rdwr, true)
		}
		data, _ := o.options()
		skip := 1
		if o.InTree {
			skip = 3 // the read-only bind below, made only where the overlay failed
		}
		s.add("mount overlay "+o.Path, rawCall{trap: unix.SYS_MOUNT, a: [6]uintptr{cstr(&keep, "overlay"), cstr(&keep, o.Path), cstr(&keep, "overlay"),
			unix.MS_NOSUID | unix.MS_NODEV, cstr(&keep, data)}, ignore: true, skipOnSuccess: skip})
		if o.InTree {
			// Inside a writable tree a directory without its overlay would
			// be writable in place: it is bound read-only instead.
			mount("bind", o.Path, o.Path, "", unix.MS_BIND|unix.MS_REC, "")
			mount("remount read-only", "", o.Path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|remountFlags(o.Path), "")
		}
		msg := "joule-exec: " + o.Path + " is read-only for this command: the overlay with the session's private layer could not be mounted\n"
		s.add("write", rawCall{trap: unix.SYS_WRITE, a: [6]uintptr{2, ptr(&keep, []byte(msg)), uintptr(len(msg))}, ignore: true})
	}
	for _, m := range plan.Mounts {
		switch m.Kind {
		case MountPin:
			mount("bind", m.Path, m.Path, "", unix.MS_BIND|unix.MS_REC, "")
		case MountReadOnly:
			mount("bind", m.Path, m.Path, "", unix.MS_BIND|unix.MS_REC, "")
			mount("remount read-only", "", m.Path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|remountFlags(m.Path), "")
		case MountHideDir:
			mount("tmpfs over", "tmpfs", m.Path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=000")
		case MountHideFile:
			mount("bind /dev/null over", "/dev/null", m.Path, "", unix.MS_BIND, "")
			mount("remount read-only", "", m.Path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|remountFlags("/dev/null"), "")
		}
	}
	// A procfs of the command's own PID namespace over the host's: the
	// host's processes are not there to be read (their command lines, which
	// hold what people pass as arguments; their environments and open files
	// are behind the ptrace check Landlock refuses), and $$ and /proc/self
	// agree. Read-only, as the host's was below it. Where the kernel refuses
	// it (a /proc with parts hidden by overmounts, as in some containers),
	// the host's stays and joule-exec says so.
	s.add("mount proc /proc", rawCall{trap: unix.SYS_MOUNT, a: [6]uintptr{cstr(&keep, "proc"), cstr(&keep, "/proc"), cstr(&keep, "proc"),
		unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, 0}, ignore: true, skipOnSuccess: 1})
	procMsg := "joule-exec: the command sees the host's processes in /proc: a procfs of its own PID namespace could not be mounted\n"
	s.add("write", rawCall{trap: unix.SYS_WRITE, a: [6]uintptr{2, ptr(&keep, []byte(procMsg)), uintptr(len(procMsg))}, ignore: true})
	// The rulesets are made here, in the parent; the child only enforces
	// them. A rule on an overlay's path is added in the child once the
	// overlay is mounted: a rule holds the inode it was opened on, and the
	// real directory's is hidden below the overlay.
	fs := handledFS(abi)
	var fds []int
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	var attrs []*pathBeneath
	for i, rules := range plan.Rules {
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
		fds = append(fds, fd)
		if err := addConnect(fd, spec, abi); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
		for _, r := range rules {
			if !slices.ContainsFunc(plan.Overlays, func(o Overlay) bool { return o.Path == r.Path }) {
				if err := addRule(fd, r, fs); err != nil {
					return fmt.Errorf("layer %d: %w", i, err)
				}
				continue
			}
			// Failing, it grants nothing: the overlay stays unwritable.
			pb := &pathBeneath{access: r.Access & fs, fd: -1}
			attrs = append(attrs, pb)
			s.add("open "+r.Path, rawCall{trap: unix.SYS_OPENAT, a: [6]uintptr{uintptr(cwd), cstr(&keep, r.Path), unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_DIRECTORY},
				setFD: true, fdTo: &pb.fd, ignore: true})
			s.add("landlock_add_rule "+r.Path, rawCall{trap: unix.SYS_LANDLOCK_ADD_RULE, a: [6]uintptr{uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(pb))}, ignore: true})
			s.add("close "+r.Path, rawCall{trap: unix.SYS_CLOSE, useFD: true, ignore: true})
		}
	}
	// The working directory is looked up again: the one inherited is on
	// the mount below the ones just made, now read-only.
	if wd, err := syscall.Getwd(); err == nil {
		s.add("chdir "+wd, rawCall{trap: unix.SYS_CHDIR, a: [6]uintptr{cstr(&keep, wd)}, ignore: true})
	}
	// Here the child, the init of the new PID namespace, forks the
	// program and waits for it (initLoop): when the program ends, so does
	// every process it left behind, killed by the kernel with its init.
	// The program itself is not the init, which would ignore the signals
	// it has no handler for (SIGINT, SIGPIPE, SIGXCPU).
	s.add("clone (the program)", rawCall{trap: trapInit})
	s.add("prctl(PR_SET_NO_NEW_PRIVS)", rawCall{trap: unix.SYS_PRCTL, a: [6]uintptr{unix.PR_SET_NO_NEW_PRIVS, 1}})
	for _, fd := range fds {
		s.add("landlock_restrict_self", rawCall{trap: unix.SYS_LANDLOCK_RESTRICT_SELF, a: [6]uintptr{uintptr(fd)}})
	}
	var fprog *unix.SockFprog
	if !spec.Net && abi >= 4 {
		prog, err := untrackedFilter()
		if err != nil {
			return err
		}
		fprog = &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		s.add("seccomp", rawCall{trap: unix.SYS_PRCTL, a: [6]uintptr{unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(fprog))}})
	}
	// No capability survives into the program, even for uid 0: the
	// bounding set is emptied, the ambient set cleared, then the rest.
	last := 63
	if b, err := readProcFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		s.add("prctl(PR_CAPBSET_DROP)", rawCall{trap: unix.SYS_PRCTL, a: [6]uintptr{unix.PR_CAPBSET_DROP, uintptr(c)}})
	}
	s.add("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", rawCall{trap: unix.SYS_PRCTL, a: [6]uintptr{unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL}})
	hdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := &[2]unix.CapUserData{}
	s.add("capset", rawCall{trap: unix.SYS_CAPSET, a: [6]uintptr{uintptr(unsafe.Pointer(hdr)), uintptr(unsafe.Pointer(&data[0]))}})
	limits := spec.Limits.rlimits(true)
	for i := range limits {
		s.add("prlimit", rawCall{trap: unix.SYS_PRLIMIT64, a: [6]uintptr{0, uintptr(limits[i].resource), uintptr(unsafe.Pointer(&limits[i].value))}})
	}
	// Signal handlers go back to the default before the mask is restored,
	// so that no signal runs Go's handler in the child; ignored ones stay
	// ignored, as exec would keep them.
	zero := make([]byte, 64)
	old := make([]byte, 64)
	for sig := 1; sig < 65; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old[0])), 8, 0, 0); e != 0 {
			continue
		}
		if *(*uintptr)(unsafe.Pointer(&old[0])) == 1 { // SIG_IGN
			continue
		}
		s.add("rt_sigaction", rawCall{trap: unix.SYS_RT_SIGACTION, a: [6]uintptr{uintptr(sig), uintptr(unsafe.Pointer(&zero[0])), 0, 8}, ignore: true})
	}
	var all, orig uint64 = ^uint64(0), 0
	s.add("rt_sigprocmask", rawCall{trap: unix.SYS_RT_SIGPROCMASK, a: [6]uintptr{unix.SIG_SETMASK, uintptr(unsafe.Pointer(&orig)), 0, 8}})
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	s.add("execve "+path, rawCall{trap: unix.SYS_EXECVE, a: [6]uintptr{cstr(&keep, path), uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0]))}})

	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return err
	}
	report := &[2]uint32{}
	status := &[2]uint32{}
	// The runtime cannot stop this goroutine while the init runs on its
	// stack, so no collection may start meanwhile: the time-triggered one
	// would wait for it, waking every 100µs for the command's whole run.
	debug.SetGCPercent(-1)

	runtime.LockOSThread() // kept: PDEATHSIG follows the thread that cloned
	syscall.ForkLock.Lock()
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&orig)), 8, 0, 0)
	// The init unmounts the overlays once the command's processes are
	// gone, before it exits and so before the layer's lock is released
	// (with its files, which the kernel closes before it drops the
	// namespace): the next command of the session never mounts a layer an
	// overlay still has.
	var umounts []uintptr
	for _, o := range plan.Overlays {
		umounts = append(umounts, cstr(&keep, o.Path))
	}
	spec.started = time.Now()
	pid, errno := forkChild(s.calls, p[1], report, status, umounts, leave)
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&orig)), 0, 8, 0, 0)
	syscall.ForkLock.Unlock()
	syscall.Close(p[1])
	runtime.KeepAlive(keep)
	runtime.KeepAlive(umounts)
	runtime.KeepAlive(leave)
	runtime.KeepAlive(fprog)
	runtime.KeepAlive(rdonly)
	runtime.KeepAlive(rdwr)
	runtime.KeepAlive(limits)
	runtime.KeepAlive(hdr)
	runtime.KeepAlive(data)
	runtime.KeepAlive(zero)
	runtime.KeepAlive(argvp)
	runtime.KeepAlive(envp)
	runtime.KeepAlive(attrs)
	if errno != 0 {
		syscall.Close(p[0])
		return errNamespace{fmt.Errorf("clone(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): %w", errno)}
	}
	var buf [8]byte
	n, _ := readFull(p[0], buf[:])
	syscall.Close(p[0])
	if n == 8 {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(int(pid), &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		step := *(*uint32)(unsafe.Pointer(&buf[0]))
		e := syscall.Errno(*(*uint32)(unsafe.Pointer(&buf[4])))
		what := "?"
		if int(step) < len(s.what) {
			what = s.what[step]
		}
		if strings.HasPrefix(what, "execve") {
			return fmt.Errorf("exec %s: %w", path, e) // confined, but the program would not start
		}
		return errNamespace{fmt.Errorf("%s: %w", what, e)}
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	fds = nil
	started = true
	cg.close()
	// Once no process of the command is left: the stand-ins go, and the
	// sweep takes out what git would run of the repositories the
	// discovery did not guard (sweep_linux.go).
	os.Exit(waitForProgram(int(pid), status, func() {
		stand.release(spec.stats)
		cg.remove()
		spec.sweep(warn)
	}))
	return nil
}

// waitForProgram waits for the program and returns its exit status; a
// program killed by a signal kills joule-exec with the same signal, so that
// the host sees what it would have seen. ended runs first, once no process
// of the command is left (the stand-ins are released then). Signals are
// not forwarded (setting up os/signal cost more than the rest of the
// wait): the ones a terminal or a host sends to the process group reach
// the program directly, and one that ends joule-exec alone reaches it as
// SIGTERM (its PDEATHSIG).
func waitForProgram(pid int, status *[2]uint32, ended func()) int {
	var ws syscall.WaitStatus
	if status[1] == 1 {
		// The init reaped the program and every other process of the
		// namespace before it began to exit: its exit, which tears the
		// namespaces down (a wait for RCU, for the mounts), is not waited
		// for; the process that started joule-exec inherits and reaps it.
		ws = syscall.WaitStatus(status[0])
	} else {
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err == nil {
				break
			}
			if !errors.Is(err, syscall.EINTR) {
				return 126
			}
		}
	}
	ended()
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		sig := ws.Signal()
		// The default action, not Go's handler, which would print a
		// traceback for a SIGSEGV it did not cause.
		var dfl [4]uint64
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl[0])), 0, 8, 0, 0)
		var none uint64
		unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&none)), 0, 8, 0, 0)
		syscall.Kill(os.Getpid(), sig)
		return 128 + int(sig)
	}
	return 126
}

// forkChild clones the calling thread into a new user, mount and PID
// namespace and, in the child, makes the calls in order: the last execs the program.
// A call that fails has its index and errno written to pipe, and the child
// exits. In the parent it returns the child's pid. Where the child shares
// the parent's memory and stack (cloneShared), the parent must return at
// once, using nothing but rawClone's results, which it writes itself after
// the child is gone; the child never returns from here.
//
// The call trapInit forks the program off the child, which stays in
// initLoop: see there.
//
//go:nosplit
//go:norace
func forkChild(calls []rawCall, pipe int, report, status *[2]uint32, umounts, leave []uintptr) (uintptr, syscall.Errno) {
	r, e := rawClone(uintptr(unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_NEWPID|unix.CLONE_VFORK|syscall.SIGCHLD) | cloneShared)
	if e != 0 || r != 0 {
		return r, e
	}
	var fd uintptr
	for i := 0; i < len(calls); i++ {
		c := &calls[i]
		if c.trap == trapInit {
			// The program is a child sharing this stack, like this one
			// is of joule-exec: the init resumes once it exec'd (or
			// failed), and reads nothing the program changed but what
			// rawClone returned.
			r, e := rawClone(uintptr(unix.CLONE_VFORK|syscall.SIGCHLD) | cloneShared)
			if e != 0 {
				report[0], report[1] = uint32(i), uint32(e)
				syscall.RawSyscall(syscall.SYS_WRITE, uintptr(pipe), uintptr(unsafe.Pointer(report)), 8)
				syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
			}
			if r != 0 {
				initLoop(r, status, umounts, leave)
			}
			continue
		}
		a0 := c.a[0]
		if c.useFD {
			a0 = fd
		}
		r1, _, e1 := syscall.RawSyscall6(c.trap, a0, c.a[1], c.a[2], c.a[3], c.a[4], c.a[5])
		if e1 != 0 && !c.ignore {
			report[0], report[1] = uint32(i), uint32(e1)
			syscall.RawSyscall(syscall.SYS_WRITE, uintptr(pipe), uintptr(unsafe.Pointer(report)), 8)
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
		}
		if c.setFD {
			fd = r1
			if c.fdTo != nil {
				*c.fdTo = int32(r1)
			}
		}
		if e1 == 0 {
			i += c.skipOnSuccess
		}
	}
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
	return 0, 0
}

// trapInit is the pseudo call at which forkChild forks the program off
// the init of its PID namespace.
const trapInit = ^uintptr(0)

// initLoop is the init of the command's PID namespace: it reaps every
// process that ends in it until the program does, then kills every other
// process of the namespace and reaps them all (they are all its children
// by then, or become so as their parents die), leaves the program's wait
// status in status (memory it shares with joule-exec) and exits: when
// joule-exec goes on, nothing of the command runs any more. joule-exec
// waits with it, stopped in the vfork, and kills it if it dies
// (PDEATHSIG). Its signals stay blocked as joule-exec blocked them for
// the clone: none but SIGKILL reaches it.
//
//go:nosplit
//go:norace
func initLoop(prog uintptr, status *[2]uint32, umounts, leave []uintptr) {
	for {
		r, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(&status[0])), unix.WALL, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
		}
		if r == prog {
			break
		}
	}
	syscall.RawSyscall(syscall.SYS_KILL, ^uintptr(0), uintptr(syscall.SIGKILL), 0)
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, ^uintptr(0), 0, unix.WALL, 0, 0, 0)
		if e == syscall.ECHILD {
			break
		}
	}
	for i := 0; i < len(umounts); i++ {
		syscall.RawSyscall(syscall.SYS_UMOUNT2, umounts[i], unix.MNT_DETACH, 0)
	}
	// Out of the command's control group, into joule-exec's own: the
	// group is empty once the init is gone from it, and joule-exec can
	// remove it without waiting for the init's exit.
	for i := 0; i < len(leave); i++ {
		syscall.RawSyscall(syscall.SYS_WRITE, leave[i], uintptr(unsafe.Pointer(&cgroupEnter[0])), 1)
	}
	status[1] = 1
	// Where the init does not share joule-exec's memory (cloneShared 0),
	// its exit status is the program's, as a shell would give it.
	ws := status[0]
	code := uintptr(ws>>8) & 0xff
	if ws&0x7f != 0 {
		code = 128 + uintptr(ws&0x7f)
	}
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, code, 0, 0)
}
