//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The command's own control group bounds what the per-process limits
// cannot: the tasks of all its processes together (pids.max, which the
// kernel applies to uid 0 too, unlike RLIMIT_NPROC) and their memory
// together (memory.max). joule-exec makes one per command where it may:
//
//   - cgroup v2 (the unified hierarchy at /sys/fs/cgroup, or at
//     /sys/fs/cgroup/unified beside v1 controllers): as root, below the
//     hierarchy's root; as another user, below the subtree systemd
//     delegates to them (user@UID.service), when joule-exec already runs
//     inside it, since moving a process needs write access to the common
//     ancestor;
//   - cgroup v1 (a pids and a memory hierarchy of their own): as root,
//     below joule-exec's own group in each.
//
// Each is a directory "joule/c<pid>" (pid: joule-exec's own) made before
// the clone; the child enters it by writing "0" to its cgroup.procs,
// opened by joule-exec (the kernel checks the opener's credentials, not
// those of the child, which is in a user namespace of its own by then),
// before anything else, so every process of the command is in it. The
// init leaves it for joule-exec's own group before it exits, once the
// command's processes are gone, and joule-exec removes it. One left
// behind (joule-exec killed by SIGKILL) is removed by the next command
// that finds its pid gone.

// cgroupRoot is where cgroup hierarchies are mounted; a variable so that
// a test can point it at a fake tree.
var cgroupRoot = "/sys/fs/cgroup"

// cgroupEnter is what the child and the init write to a cgroup.procs: the
// writer's own process.
var cgroupEnter = [1]byte{'0'}

// cgroupHier is one hierarchy the command's group can be made in: base
// is the directory that holds the commands' groups ("…/joule"), own the
// group joule-exec runs in, v2 whether it is the unified hierarchy;
// controllers are the v1 controllers it carries (pids, memory).
type cgroupHier struct {
	base, own   string
	v2          bool
	controllers []string
}

// ownCgroups is /proc/self/cgroup as a map from controller ("" for v2,
// "pids", "memory") to the process's path in that hierarchy.
func ownCgroups() map[string]string {
	fd, err := syscall.Open("/proc/self/cgroup", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n, _ := readFull(fd, buf[:])
	out := map[string]string{}
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			out[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	return out
}

// hasWord reports whether the file at p (a cgroup's list of controllers)
// names w.
func hasWord(p, w string) bool {
	b, err := os.ReadFile(p)
	return err == nil && slices.Contains(strings.Fields(string(b)), w)
}

// cgroupHiers lists the hierarchies a command's group can be made in for
// this process, nil where none: then nothing bounds the command's
// processes and memory together. It makes nothing.
func cgroupHiers() []cgroupHier {
	own := ownCgroups()
	uid := os.Geteuid()
	// v2: at the root, or beside v1 controllers at unified/.
	for _, mnt := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
		p, ok := own[""]
		if !ok || !hasWord(filepath.Join(mnt, "cgroup.controllers"), "pids") {
			continue
		}
		if uid == 0 {
			return []cgroupHier{{base: filepath.Join(mnt, "joule"), own: filepath.Join(mnt, p), v2: true}}
		}
		svc := "/user@" + strconv.Itoa(uid) + ".service"
		i := strings.Index(p+"/", svc+"/")
		if i < 0 {
			return nil
		}
		d := filepath.Join(mnt, p[:i+len(svc)])
		if syscall.Access(d, 2 /* W_OK */) != nil || !hasWord(filepath.Join(d, "cgroup.controllers"), "pids") {
			return nil
		}
		return []cgroupHier{{base: filepath.Join(d, "joule"), own: filepath.Join(mnt, p), v2: true}}
	}
	if uid != 0 {
		return nil
	}
	var out []cgroupHier
	for _, c := range []string{"pids", "memory"} {
		p, ok := own[c]
		mnt := filepath.Join(cgroupRoot, c)
		if !ok || syscall.Access(filepath.Join(mnt, "cgroup.procs"), 2) != nil {
			continue
		}
		out = append(out, cgroupHier{base: filepath.Join(mnt, p, "joule"), own: filepath.Join(mnt, p), controllers: []string{c}})
	}
	if len(out) == 0 || out[0].controllers[0] != "pids" {
		return nil // without pids, a bomb is not bounded: the group alone is not worth its cost
	}
	return out
}

// CgroupAvailable reports whether a command's processes and memory are
// bounded together by a control group of its own (see cgroupHiers). It
// describes (Mode, in every contained decision's receipt), so it is read
// once a process; joule-exec's makeCgroup looks again for the command.
var CgroupAvailable = sync.OnceValue(func() bool { return len(cgroupHiers()) > 0 })

// cgroup is the command's groups, made: dirs to remove at the end, enter
// the descriptors of their cgroup.procs (the child writes to them), leave
// those of joule-exec's own groups (the init writes to them).
type cgroup struct {
	dirs         []string
	enter, leave []int
}

// writeSmall writes s to the file at p, which exists.
func writeSmall(p, s string) error {
	fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	_, err = syscall.Write(fd, []byte(s))
	return err
}

// makeCgroup makes the command's groups with l's bounds (tasks: l.Procs
// and one for the init; memory: l.Memory), after removing those of
// commands whose joule-exec is gone. None where this process may make
// none (Mode says so); an error leaves nothing made.
func makeCgroup(l Limits) (*cgroup, error) {
	hs := cgroupHiers()
	if len(hs) == 0 {
		return nil, nil
	}
	cg := &cgroup{}
	name := "c" + strconv.Itoa(os.Getpid())
	for _, h := range hs {
		if err := os.Mkdir(h.base, 0o755); err == nil && h.v2 {
			// A new base: its parent hands the controllers down to it, and
			// it to the commands' groups (it holds no process itself).
			writeSmall(filepath.Join(filepath.Dir(h.base), "cgroup.subtree_control"), "+pids +memory")
			writeSmall(filepath.Join(h.base, "cgroup.subtree_control"), "+pids +memory")
		} else if err != nil && !errors.Is(err, os.ErrExist) {
			cg.remove()
			return nil, err
		}
		removeStale(h.base, name)
		d := filepath.Join(h.base, name)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			cg.remove()
			return nil, err
		}
		cg.dirs = append(cg.dirs, d)
		var files [][2]string
		if h.v2 || slices.Contains(h.controllers, "pids") {
			if l.Procs > 0 {
				files = append(files, [2]string{"pids.max", strconv.FormatUint(l.Procs+1, 10)})
			}
		}
		if l.Memory > 0 {
			if h.v2 && hasWord(filepath.Join(h.base, "cgroup.subtree_control"), "memory") {
				files = append(files, [2]string{"memory.max", strconv.FormatUint(l.Memory, 10)})
			} else if slices.Contains(h.controllers, "memory") {
				files = append(files, [2]string{"memory.limit_in_bytes", strconv.FormatUint(l.Memory, 10)})
			}
		}
		for _, f := range files {
			if err := writeSmall(filepath.Join(d, f[0]), f[1]); err != nil {
				cg.remove()
				return nil, err
			}
		}
		// Swap counts in the bound where the kernel accounts it (the
		// files are absent otherwise): none beyond memory.max in v2, the
		// same sum of memory and swap in v1.
		if l.Memory > 0 && h.v2 {
			writeSmall(filepath.Join(d, "memory.swap.max"), "0")
		} else if l.Memory > 0 && slices.Contains(h.controllers, "memory") {
			writeSmall(filepath.Join(d, "memory.memsw.limit_in_bytes"), strconv.FormatUint(l.Memory, 10))
		}
		in, err := syscall.Open(filepath.Join(d, "cgroup.procs"), syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			cg.remove()
			return nil, err
		}
		cg.enter = append(cg.enter, in)
		out, err := syscall.Open(filepath.Join(h.own, "cgroup.procs"), syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			cg.remove()
			return nil, err
		}
		cg.leave = append(cg.leave, out)
	}
	return cg, nil
}

// removeStale removes the commands' groups in base whose joule-exec is
// gone (the group is named after its pid), except keep; a group that
// still holds a process is not removed (rmdir fails).
func removeStale(base, keep string) {
	f, err := os.Open(base)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		pid, err := strconv.Atoi(strings.TrimPrefix(n, "c"))
		if n == keep || !strings.HasPrefix(n, "c") || err != nil {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			syscall.Rmdir(filepath.Join(base, n))
		}
	}
}

// close closes the descriptors; remove removes the groups too, which
// succeeds once no process is left in them.
func (cg *cgroup) close() {
	if cg == nil {
		return
	}
	for _, fd := range append(cg.enter, cg.leave...) {
		syscall.Close(fd)
	}
	cg.enter, cg.leave = nil, nil
}

func (cg *cgroup) remove() {
	if cg == nil {
		return
	}
	cg.close()
	for i := len(cg.dirs) - 1; i >= 0; i-- {
		syscall.Rmdir(cg.dirs[i])
	}
}
