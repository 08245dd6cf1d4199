//go:build linux

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Stand-ins. A protected name that is absent (.mcp.json, .gemini/,
// opencode.json, .claude/ with the settings in it, a path a deny rule of
// the grant names) cannot be covered by a mount, which needs a name to sit
// on, and Landlock cannot refuse one name in a directory where others may
// be created: carving it out refuses every new entry of that directory,
// which at the workspace root is `touch x`, `go build -o app .`, `npm init`.
// So for the command's run the namespace construction makes the name
// exist: a stand-in (a socket node with no permission bits, makeStandIn),
// made in the real directory before the namespace and bound read-only
// inside it, as an existing protected path is. Inside, nothing can be
// created in its place (EEXIST), through it (ENOTDIR) or written to it
// (EACCES), and it cannot be removed, renamed or replaced (EBUSY: a mount
// point), while every other name of the directory can be created. Opened
// for reading it gives EACCES, which hosts' configuration readers take
// for an absent file (OpenCode reads opencode.json during a turn and
// fails the turn on any other error, ENXIO included). Outside, during the
// run, the name is a node that git does not list, that cannot be opened
// (EACCES; ENXIO for a process with CAP_DAC_OVERRIDE), and behind which
// no configuration can be: a host reads no configuration there. Once no
// contained command holds it, it is removed. Nothing is
// checked after the command: a host that re-reads its settings while the
// command runs (Claude Code watches .claude/ appear) never sees any.
//
// Bookkeeping, per directory that holds stand-ins, in
// $JOULE_HOME/layers/.standins/<hash of the directory>:
//
//   - the records file lists the stand-ins joule made there (path, device,
//     inode); its exclusive flock orders every change, briefly;
//   - the users file is flocked shared by each command that relies on the
//     directory's stand-ins, for its whole run. When a command ends it
//     takes the records' lock and then tries the users file exclusively:
//     if no other command holds it, it removes every recorded stand-in that
//     is still the node joule made (a directory somebody filled outside is
//     theirs: it is forgotten, not removed). A command that starts takes
//     the records' lock before it looks, so it either finds the stand-ins
//     or makes them again. (Removing a name that is a mount point in
//     another command's namespace would detach that mount there: this
//     order is what keeps a stand-in in place while any command relies on
//     it.)
//
// A joule-exec that is killed leaves its stand-ins (recorded): the next
// contained command of the directory finds them as existing protected
// names and, the last to leave, removes them.

const standInsDir = ".standins"

// standInState is where the stand-ins are recorded: beside the sessions'
// layers ($JOULE_HOME/layers), which gcLayers leaves alone (its name
// starts with a dot); "" without a layer directory.
func standInState(layerDir string) string {
	if layerDir == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(layerDir), standInsDir)
}

// standInGroup is the stand-ins of one directory this command holds.
type standInGroup struct {
	records string // the records file's path
	users   int    // the users file, flocked shared while the command runs
}

// standIns is what one command holds.
type standIns struct {
	groups []standInGroup
}

// devIno identifies a stand-in: its device, inode and type (an inode
// number is reused: a file made later in its place is not joule's).
type devIno struct{ dev, ino, kind uint64 }

func statID(st *syscall.Stat_t) devIno {
	return devIno{uint64(st.Dev), st.Ino, uint64(st.Mode & syscall.S_IFMT)}
}

// takeStandIns makes (or finds) a stand-in at each path of want (an empty
// directory where asDir says so), in state,
// and returns the paths where something other than a link is now, to be
// bound read-only, and what to release when the command has ended. What it looked at is
// forgotten from st, so that Plan sees the stand-ins. A path it cannot
// make is left out: Plan then carves, as without stand-ins.
func takeStandIns(state string, want []string, asDir map[string]bool, st stats) (map[string]bool, *standIns) {
	if state == "" || len(want) == 0 {
		return nil, nil
	}
	byDir := map[string][]string{}
	var dirs []string
	for _, c := range want {
		if strings.ContainsRune(c, 0) {
			continue
		}
		d := filepath.Dir(c)
		if _, ok := byDir[d]; !ok {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], c)
	}
	held := map[string]bool{}
	s := &standIns{}
	for _, d := range dirs {
		sum := sha256.Sum256([]byte(d))
		base := filepath.Join(state, hex.EncodeToString(sum[:12]))
		rfd, err := lockRecords(base)
		if err != nil {
			continue
		}
		ufd, err := syscall.Open(base+".users", syscall.O_RDONLY|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			syscall.Close(rfd)
			continue
		}
		recs := readRecords(rfd)
		changed := false
		var mine []string
		for _, c := range byDir[d] {
			delete(st, c)
			var sb syscall.Stat_t
			err := syscall.Lstat(c, &sb)
			if err == syscall.ENOENT {
				if makeStandIn(c, asDir[c]) != nil || syscall.Lstat(c, &sb) != nil {
					continue
				}
				recs[c] = statID(&sb)
				changed = true
			} else if err != nil {
				continue
			}
			// What is there now is bound read-only: a stand-in, an
			// earlier command's, or the user's own (an empty .vscode/, a
			// file named .claude), which joule never removes. A link is
			// left to Plan, which carves.
			if sb.Mode&syscall.S_IFMT != syscall.S_IFLNK {
				mine = append(mine, c)
			}
		}
		if changed {
			writeRecords(rfd, recs)
		}
		// Nobody holds the users file exclusively but under the records'
		// lock, which this command holds: this never waits.
		if flock(ufd, syscall.LOCK_SH) != nil {
			syscall.Close(ufd)
			syscall.Close(rfd)
			continue
		}
		syscall.Close(rfd) // releases the records' lock
		for _, c := range mine {
			held[c] = true
		}
		s.groups = append(s.groups, standInGroup{records: base, users: ufd})
	}
	return held, s
}

// release removes the stand-ins of each directory this command held, if
// it is the last command to hold them, and forgets them from st. It runs
// once every process of the command has ended.
func (s *standIns) release(st stats) {
	if s == nil {
		return
	}
	for _, g := range s.groups {
		rfd, err := lockRecords(g.records)
		if err != nil {
			syscall.Close(g.users)
			continue
		}
		// Converting the shared lock: it succeeds only if no other
		// command holds one.
		if recs := readRecords(rfd); len(recs) > 0 && flock(g.users, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			for p, id := range recs {
				delete(st, p)
				var sb syscall.Stat_t
				if syscall.Lstat(p, &sb) != nil || statID(&sb) != id {
					delete(recs, p) // gone, or not the node joule made
					continue
				}
				rm := syscall.Unlink
				if sb.Mode&syscall.S_IFMT == syscall.S_IFDIR {
					rm = syscall.Rmdir // it fails if somebody filled it
				}
				switch err := rm(p); err {
				case nil, syscall.ENOENT, syscall.ENOTEMPTY, syscall.EEXIST:
					delete(recs, p) // removed, or filled outside: somebody's now
				}
			}
			writeRecords(rfd, recs)
		}
		syscall.Close(g.users)
		syscall.Close(rfd)
	}
	s.groups = nil
}

// makeStandIn makes the stand-in at p: a socket node (mknod, no socket
// bound to it), which git neither lists nor adds, `find -type f` and the
// toolchains' walks pass over, and which cannot be read as a directory
// (ENOTDIR: .claude/settings.json behind it is absent). It has no
// permission bits: opening it fails with EACCES for every process without
// CAP_DAC_OVERRIDE (a contained command holds no capability) before the
// socket's own ENXIO, and EACCES is what configuration readers take for
// "not there" (OpenCode's readFileStringSafe: NotFound and
// PermissionDenied), where ENXIO is a broken file to them. It costs an
// inode, where an empty directory costs a data block too, and on this
// project's test VM ten times the time to make and remove. Where the file
// system makes no socket nodes, and where dir says a host reads through
// the name (.opencode/opencode.json), an empty directory: read through, it
// holds nothing (ENOENT); through a socket node the read fails (ENOTDIR),
// which OpenCode, again, takes for a broken configuration.
func makeStandIn(p string, dir bool) error {
	if !dir {
		err := syscall.Mknod(p, syscall.S_IFSOCK, 0) // mode 0: no permission bits
		if err == nil || err == syscall.EEXIST {
			return err
		}
	}
	return syscall.Mkdir(p, 0o755)
}

// lockRecords opens (creating, with its directory) the records file at p
// and takes its lock.
func lockRecords(p string) (int, error) {
	fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err == syscall.ENOENT {
		if os.MkdirAll(filepath.Dir(p), 0o700) == nil {
			fd, err = syscall.Open(p, syscall.O_RDWR|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		}
	}
	if err != nil {
		return -1, err
	}
	if err := flock(fd, syscall.LOCK_EX); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// maxRecords bounds the records file read.
const maxRecords = 1 << 20

// readRecords reads the records at fd: "dev ino type path" entries, each
// ended by a NUL (a path holds any byte but NUL).
func readRecords(fd int) map[string]devIno {
	recs := map[string]devIno{}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Size <= 0 || st.Size > maxRecords {
		return recs
	}
	b := make([]byte, st.Size)
	n, _ := syscall.Pread(fd, b, 0)
	for _, e := range strings.Split(string(b[:max(n, 0)]), "\x00") {
		f := strings.SplitN(e, " ", 4)
		if len(f) != 4 || !filepath.IsAbs(f[3]) {
			continue
		}
		dev, err1 := strconv.ParseUint(f[0], 10, 64)
		ino, err2 := strconv.ParseUint(f[1], 10, 64)
		kind, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil {
			recs[f[3]] = devIno{dev, ino, kind}
		}
	}
	return recs
}

// writeRecords writes recs over the records at fd. The file is never
// shortened: what is left of longer records is overwritten with NULs
// (empty entries), so that its data block is not freed and allocated
// again on every command.
func writeRecords(fd int, recs map[string]devIno) {
	var b []byte
	for p, id := range recs {
		b = strconv.AppendUint(b, id.dev, 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, id.ino, 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, id.kind, 10)
		b = append(b, ' ')
		b = append(b, p...)
		b = append(b, 0)
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil && int64(len(b)) < st.Size && st.Size <= maxRecords {
		b = append(b, make([]byte, int(st.Size)-len(b))...)
	}
	if len(b) > 0 {
		syscall.Pwrite(fd, b, 0)
	}
}
