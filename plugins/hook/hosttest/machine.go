package hosttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// machineDirs are the directories Machine overlays: where joule install
// --system and the hosts' managed settings write (/etc), the gate's socket
// (/run), the system home (/var/lib), the system binaries (/usr/local).
var machineDirs = []string{"/etc", "/run", "/var/lib", "/usr/local"}

// Machine gives the test a machine of its own to set system mode up on,
// at the real paths (/etc/joule, /etc/claude-code, /run/joule, …): in the
// private mount namespace Main runs the tests in, machineDirs become
// copy-on-write overlays of the machine's for the test's duration, so the
// users it adds, the files it writes there and the directories it makes
// vanish when it ends, and nothing outside the namespace (another test run,
// the machine's own hosts) ever sees them. It returns a directory every
// user may enter, for homes and workspaces. It skips where there is no
// such namespace (not root, no unshare), saying so.
func Machine(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 || !privateMounts() {
		t.Skip("system mode is tested as root in a private mount namespace (hosttest.Main, or a TestMain of its kind, under unshare -m); not here")
	}
	for _, tool := range []string{"useradd", "userdel", "groupadd"} {
		if _, err := exec.LookPath(tool); err != nil {
			NeedTool(t, tool, "install the passwd package (shadow-utils)")
		}
	}
	base, err := os.MkdirTemp("", "joule-machine-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	var mounted []string
	t.Cleanup(func() {
		killOthers()
		for i := len(mounted) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mounted[i], syscall.MNT_DETACH); err != nil {
				t.Errorf("unmounting the overlay on %s: %v", mounted[i], err)
			}
		}
		os.RemoveAll(base)
	})
	for _, dir := range machineDirs {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		name := strings.ReplaceAll(strings.Trim(dir, "/"), "/", "-")
		upper, work := filepath.Join(base, ".overlay", name, "upper"), filepath.Join(base, ".overlay", name, "work")
		for _, d := range []string{upper, work} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// The upper layer's root takes the lower's owner and mode.
		if st, err := os.Stat(dir); err == nil {
			os.Chmod(upper, st.Mode().Perm()|st.Mode()&os.ModeSticky)
		}
		opts := "lowerdir=" + dir + ",upperdir=" + upper + ",workdir=" + work
		if err := syscall.Mount("overlay", dir, "overlay", 0, opts); err != nil {
			t.Skipf("cannot overlay %s here (%v): system mode is tested on a kernel with overlayfs", dir, err)
		}
		mounted = append(mounted, dir)
	}
	os.Chmod(filepath.Join(base, ".overlay"), 0o700)
	return base
}

// killOthers kills every process of this namespace's machine that runs as
// a uid other than root's: the gates and proxies a test's install started
// as its system user, and what its people left running, so that the
// overlays can go.
func killOthers() {
	for range 50 {
		left := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			var st syscall.Stat_t
			if syscall.Stat("/proc/"+e.Name(), &st) != nil || st.Uid == 0 || !inThisNamespace(pid) {
				continue
			}
			syscall.Kill(pid, syscall.SIGKILL)
			left++
		}
		if left == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// privateMounts reports whether this process has a mount namespace other
// than its parent's: what Main's unshare -m gives the test binary it runs
// again (init's namespace is not always readable, the parent's is).
func privateMounts() bool {
	mine, err1 := os.Readlink("/proc/self/ns/mnt")
	parents, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	return err1 == nil && err2 == nil && mine != parents
}

// inThisNamespace reports whether pid shares this process's mount
// namespace: only the test's own processes do (Main's unshare made it).
func inThisNamespace(pid int) bool {
	mine, err1 := os.Readlink("/proc/self/ns/mnt")
	theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	return err1 == nil && err2 == nil && mine == theirs
}

// Account is a user a test added to its Machine.
type Account struct {
	Name     string
	UID, GID int
	Home     string
}

// User adds an unprivileged user with a unique name (prefix and random
// letters), a home below base (Machine's directory) and sh as its shell,
// in groups, and deletes it when the test ends.
func User(t *testing.T, base, prefix string, groups ...string) Account {
	t.Helper()
	var r [3]byte
	rand.Read(r[:])
	name := prefix + hex.EncodeToString(r[:])
	homeDir := filepath.Join(base, name)
	args := []string{"--create-home", "--home-dir", homeDir, "--shell", "/bin/sh", "--user-group"}
	if len(groups) > 0 {
		args = append(args, "--groups", strings.Join(groups, ","))
	}
	if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	os.Chmod(homeDir, 0o755)
	return Account{Name: name, UID: uid, GID: gid, Home: homeDir}
}

// Credential makes cmd run as a, with a's groups.
func (a Account) Credential(cmd *exec.Cmd) *exec.Cmd {
	u, _ := user.LookupId(strconv.Itoa(a.UID))
	var groups []uint32
	if u != nil {
		ids, _ := u.GroupIds()
		for _, g := range ids {
			if n, err := strconv.Atoi(g); err == nil {
				groups = append(groups, uint32(n))
			}
		}
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: groups}
	return cmd
}

// Run is hosttest.Run (a process group of its own, killed when it ends)
// as a, in dir, with a's environment and env.
func (a Account) Run(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, a.Env(env...)
	pgid := &syscall.SysProcAttr{Setpgid: true}
	cmd.SysProcAttr = pgid
	a.Credential(cmd)
	return run(ctx, cmd)
}

// Env is the environment a's login would have, with extra after it.
func (a Account) Env(extra ...string) []string {
	return append([]string{"HOME=" + a.Home, "USER=" + a.Name, "LOGNAME=" + a.Name, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}, extra...)
}
