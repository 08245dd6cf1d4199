package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The toolchains' shared caches (the Go build and module caches, ~/.cache,
// npm's) are read by programs run later outside the sandbox: a module
// rewritten in GOMODCACHE is what another project's `go run` compiles, a
// build cache entry is what the next `go build` links. The namespace
// construction mounts each cache as an overlay (unprivileged overlayfs in
// a user namespace, Linux 5.11, with user.* extended attributes:
// userxattr): the real cache is the lower layer, read-only, and the upper
// directory is the session's own, below $JOULE_HOME/layers/<session
// hash>/<cache hash>/upper. A contained command sees the real cache with
// what its session wrote on top, and its writes, removals and mode changes
// land in the upper layer only. $JOULE_HOME is hidden inside the sandbox,
// so confined code reaches the layer only through the overlay.
//
// The overlays are volatile: unmounting one (when the command's namespace
// ends) does not sync the whole file system the layer is on, which every
// command would otherwise pay for. A volatile upper layer is not to be
// trusted after a crash of the machine, so each layer remembers the boot it
// was written in (.boot, the kernel's boot_id) and starts empty after a
// reboot (the old one is set aside, old.*, and removed by the collection
// below). A volatile mount leaves a marker in its work directory
// (work/work/incompat/volatile) that refuses the next mount there, and
// overlayfs empties a work/work it finds on every mount: before each mount
// work/work is renamed aside (trash.*, removed by the collection), which
// costs one rename where emptying it and the marker would cost six
// removals. Each mount still costs overlayfs a few inodes (its work
// directory, the marker, the check that the upper file system makes
// whiteouts): about a millisecond of file system metadata per cache on
// this VM's busy disk, a fraction of it on an idle one.
//
// One command of a session holds its layer (an exclusive flock on the
// session's directory, released when joule-exec and its namespace's init
// exit; the init unmounts the overlays first); a command of the
// same session that starts meanwhile (a background one is still running)
// takes the next free slot, <session>.1 and so on, so that no upper
// directory is used by two overlays at once. Old layers are removed at
// the start of a command, at most once an hour (layers/.gc): a layer
// not used for layerMaxAge, and every layer beyond the layerKeep most
// recently used, unless a command holds it. A layer's size is what its
// session's commands wrote to the caches.

const (
	layerSlots  = 8
	layerMaxAge = 24 * time.Hour
	layerKeep   = 16
	layerGCEach = time.Hour
)

// Overlay is a cache mounted as an overlay: the real directory at Path is
// the lower layer, Upper and Work the session's.
type Overlay struct {
	Path, Upper, Work string
	// InTree is a directory inside a writable tree (the workspace's
	// ignored code, ignored.go) rather than a cache: where its overlay
	// cannot be mounted it is bound read-only, not left writable.
	InTree bool
}

// options is the mount data of o, false where one of its paths holds a
// character the option syntax would read as a separator.
func (o Overlay) options() (string, bool) {
	for _, p := range []string{o.Path, o.Upper, o.Work} {
		if strings.ContainsAny(p, ",:\\\n") {
			return "", false
		}
	}
	return "lowerdir=" + o.Path + ",upperdir=" + o.Upper + ",workdir=" + o.Work + ",userxattr,volatile", true
}

// bootID is the kernel's id of this boot, "" if unknown.
func bootID() string {
	b, err := readProcFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// layerBase is the directory of path p's layer in slot: its upper and work
// directories, named by a hash of the path.
func layerBase(slot, p string) string {
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(slot, hex.EncodeToString(sum[:8]))
}

// prepareLayers makes the session's layer for each cache, below the
// first free slot of dir (created 0700), and returns the overlays and the
// descriptor that holds the slot (its flock is released when it is closed,
// with joule-exec's exit) and the slot's path. It removes old layers first
// (gcLayers).
func prepareLayers(dir string, caches []string, now time.Time) ([]Overlay, int, string, error) {
	if dir == "" {
		return nil, -1, "", errors.New("the policy names no private layer for them")
	}
	root := filepath.Dir(dir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, -1, "", err
	}
	gcLayers(root, now)
	boot := bootID()
	for i := 0; i < layerSlots; i++ {
		slot := dir
		if i > 0 {
			slot = dir + "." + itoa(i)
		}
		if err := syscall.Mkdir(slot, 0o700); err != nil && err != syscall.EEXIST {
			return nil, -1, "", fmt.Errorf("mkdir %s: %w", slot, err)
		}
		fd, err := openLayer(slot)
		if err != nil {
			return nil, -1, "", err
		}
		if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			syscall.Close(fd)
			continue // a command of the session runs on it
		}
		// Its time says when it was last used, for gcLayers (to the hour:
		// a write to the file system is not free).
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil || now.Sub(time.Unix(st.Mtim.Unix())) > layerGCEach/4 {
			t := []syscall.Timespec{syscall.NsecToTimespec(now.UnixNano()), syscall.NsecToTimespec(now.UnixNano())}
			syscall.UtimesNano(slot, t)
		}
		b, ok := readSmall(filepath.Join(slot, ".boot"), 64)
		stale := !ok || string(b) != boot
		var out []Overlay
		for _, c := range caches {
			base := layerBase(slot, c)
			o := Overlay{Path: c, Upper: filepath.Join(base, "upper"), Work: filepath.Join(base, "work")}
			if err := syscall.Mkdir(base, 0o700); err != nil && err != syscall.EEXIST {
				syscall.Close(fd)
				return nil, -1, "", fmt.Errorf("mkdir %s: %w", base, err)
			}
			if stale {
				syscall.Rename(o.Upper, filepath.Join(base, "old."+itoa(int(now.UnixNano()&0x7fffffffffff))))
			}
			syscall.Rename(filepath.Join(o.Work, "work"), filepath.Join(base, "trash."+itoa(int(now.UnixNano()&0x7fffffffffff))))
			for _, d := range []string{o.Upper, o.Work} {
				if err := syscall.Mkdir(d, 0o700); err != nil && err != syscall.EEXIST {
					syscall.Close(fd)
					return nil, -1, "", fmt.Errorf("mkdir %s: %w", d, err)
				}
			}
			out = append(out, o)
		}
		if stale {
			os.WriteFile(filepath.Join(slot, ".boot"), []byte(boot), 0o600)
		}
		return out, fd, slot, nil
	}
	return nil, -1, "", fmt.Errorf("the session's %d layers are all in use", layerSlots)
}

// openLayer opens a layer directory, refusing a link or one that is not
// this user's alone.
func openLayer(p string) (int, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", p, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		syscall.Close(fd)
		return -1, fmt.Errorf("%s is not a directory of this user's alone (mode 0700)", p)
	}
	return fd, nil
}

// gcLayers removes old layers of root, at most once each layerGCEach.
func gcLayers(root string, now time.Time) {
	stamp := filepath.Join(root, ".gc")
	var st syscall.Stat_t
	if syscall.Lstat(stamp, &st) == nil && now.Sub(time.Unix(st.Mtim.Unix())) < layerGCEach {
		return
	}
	fd, err := syscall.Open(stamp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	syscall.Close(fd)
	t := []syscall.Timespec{syscall.NsecToTimespec(now.UnixNano()), syscall.NsecToTimespec(now.UnixNano())}
	syscall.UtimesNano(stamp, t)
	type layer struct {
		path string
		used time.Time
	}
	var all []layer
	for _, e := range listDir(root) {
		if !e.dir || e.link || strings.HasPrefix(e.name, ".") {
			continue
		}
		p := filepath.Join(root, e.name)
		if syscall.Lstat(p, &st) == nil {
			all = append(all, layer{p, time.Unix(st.Mtim.Unix())})
		}
	}
	slices.SortFunc(all, func(a, b layer) int { return b.used.Compare(a.used) })
	for i, l := range all {
		fd, err := openLayer(l.path)
		if err != nil {
			continue
		}
		if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if i >= layerKeep || now.Sub(l.used) >= layerMaxAge {
				removeLayer(l.path)
			} else {
				// The upper layers of an earlier boot and the work
				// directories of earlier mounts, set aside.
				for _, c := range listDir(l.path) {
					for _, e := range listDir(filepath.Join(l.path, c.name)) {
						if strings.HasPrefix(e.name, "old.") || strings.HasPrefix(e.name, "trash.") {
							removeLayer(filepath.Join(l.path, c.name, e.name))
						}
					}
				}
			}
		}
		syscall.Close(fd)
	}
}

// removeLayer removes a layer: overlayfs leaves directories of mode 000
// in its work directory, which the owner must open up first.
func removeLayer(p string) {
	filepath.WalkDir(p, func(q string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(q, 0o700)
		}
		return nil
	})
	os.RemoveAll(p)
}
