package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

// nsAttacks are the escape classes of the namespace construction itself:
// undoing or going around the mounts that hide $JOULE_HOME and ~/.ssh and
// make the hook configuration read-only. Each runs through joule-exec under
// the dev policy; its effect must not happen. Where the attack works
// against mounts that are not protected, control is the same attack in a
// plain `unshare -Urm` namespace whose tmpfs the payload may undo; with no
// control the line itself runs unconfined. Either must succeed, so that the
// case is a real attack and not a line that fails for another reason.
var nsAttacks = []struct {
	name, effect, cmd, control string
}{
	{"umount the tmpfs over JOULE_HOME", "secret",
		`umount "$JOULE_HOME"; umount -l "$JOULE_HOME"; cat "$JOULE_HOME/steward.key"`,
		`mount -t tmpfs none "$JOULE_HOME" && umount "$JOULE_HOME" && cat "$JOULE_HOME/steward.key"`},
	{"umount ~/.ssh", "secret", `umount -l "$HOME/.ssh"; cat "$HOME/.ssh/id_rsa"`,
		`mount -t tmpfs none "$HOME/.ssh" && umount -l "$HOME/.ssh" && cat "$HOME/.ssh/id_rsa"`},
	{"nested user namespace, then umount", "secret",
		`unshare -Urm sh -c 'umount -l "$JOULE_HOME"; cat "$JOULE_HOME/steward.key"'`, ""},
	{"nested user namespace, umount every mount", "secret",
		`unshare -Urm sh -c 'for i in 1 2 3 4 5 6; do umount -l -R "$WS" 2>/dev/null; umount -l "$JOULE_HOME" "$HOME/.ssh" 2>/dev/null; done; cat "$JOULE_HOME/steward.key" "$HOME/.ssh/id_rsa"'`, ""},
	{"bind the home elsewhere without the mount over JOULE_HOME", "secret",
		`mkdir -p "$TMPDIR/v"; mount --bind "$HOME" "$TMPDIR/v"; cat "$TMPDIR/v/.local/share/joule/steward.key"; unshare -Urm sh -c 'mount --bind "$HOME" "$TMPDIR/v" && cat "$TMPDIR/v/.local/share/joule/steward.key"'`,
		`mount -t tmpfs none "$JOULE_HOME" && mkdir -p "$TMPDIR/v" && mount --bind "$HOME" "$TMPDIR/v" && cat "$TMPDIR/v/.local/share/joule/steward.key"`},
	{"umount the read-only settings and write them", "protected",
		`umount "$WS/.claude/settings.json"; unshare -Urm sh -c 'umount "$WS/.claude/settings.json"; echo "{}" > "$WS/.claude/settings.json"'`,
		`mount --bind "$WS/.claude/settings.json" "$WS/.claude/settings.json" && mount -o remount,ro,bind "$WS/.claude/settings.json" && umount "$WS/.claude/settings.json" && echo "{}" > "$WS/.claude/settings.json"`},
	{"remount the settings read-write", "protected",
		`mount -o remount,rw,bind "$WS/.claude/settings.json"; unshare -Urm sh -c 'mount -o remount,rw,bind "$WS/.claude/settings.json"; echo "{}" > "$WS/.claude/settings.json"'; echo "{}" > "$WS/.claude/settings.json"`,
		`mount --bind "$WS/.claude/settings.json" "$WS/.claude/settings.json" && mount -o remount,ro,bind "$WS/.claude/settings.json" && mount -o remount,rw,bind "$WS/.claude/settings.json" && echo "{}" > "$WS/.claude/settings.json"`},
	// No control: setns needs a capability in the namespace entered, which
	// only a privileged process has outside.
	{"the parent's mount namespace through nsenter", "secret",
		`nsenter -t $PPID -m -U --preserve-credentials cat "$JOULE_HOME/steward.key"; nsenter -t 1 -m cat "$JOULE_HOME/steward.key"`, "-"},
	// No control: the kernel refuses /proc/PID/root of a process in an
	// ancestor user namespace even without Landlock (which refuses it too:
	// the Landlock construction has no namespace).
	{"/proc/PPID/root: joule-exec's own view", "secret",
		`cat "/proc/$PPID/root$JOULE_HOME/steward.key"; for p in /proc/[0-9]*; do cat "$p/root$JOULE_HOME/steward.key" 2>/dev/null; done`, "-"},
	{"/proc/self/root and /proc/self/cwd", "secret", `cat "/proc/self/root$JOULE_HOME/steward.key" "/proc/self/root$HOME/.ssh/id_rsa"`, ""},
	{"open_tree clone without the submounts", "secret",
		`perl -e 'my $fd = syscall(428, -100, $ENV{"WS"} . "/..", 1); exit 1 if $fd < 0; open(my $f, "<", "/proc/self/fd/$fd/.local/share/joule/steward.key") or exit 1; print <$f>'; unshare -Urm perl -e 'my $fd = syscall(428, -100, $ENV{"WS"} . "/..", 1); exit 1 if $fd < 0; open(my $f, "<", "/proc/self/fd/$fd/.local/share/joule/steward.key") or exit 1; print <$f>'`,
		`mount -t tmpfs none "$JOULE_HOME" && perl -e 'my $fd = syscall(428, -100, $ENV{"WS"} . "/..", 1); exit 1 if $fd < 0; open(my $f, "<", "/proc/self/fd/$fd/.local/share/joule/steward.key") or exit 1; print <$f>'`},
	{"overlay with the hidden tree as lower layer", "secret",
		`unshare -Urm sh -c 'mkdir -p "$TMPDIR/u" "$TMPDIR/w" "$TMPDIR/m" && mount -t overlay overlay -o "lowerdir=$HOME,upperdir=$TMPDIR/u,workdir=$TMPDIR/w" "$TMPDIR/m" && cat "$TMPDIR/m/.local/share/joule/steward.key"'`,
		`mount -t tmpfs none "$JOULE_HOME" && mkdir -p "$TMPDIR/u" "$TMPDIR/w" "$TMPDIR/m" && mount -t overlay overlay -o "lowerdir=$HOME,upperdir=$TMPDIR/u,workdir=$TMPDIR/w" "$TMPDIR/m" && cat "$TMPDIR/m/.local/share/joule/steward.key"`},
	{"rename the settings away and write a new one", "protected",
		`mv "$WS/.claude/settings.json" "$WS/old.json"; mv "$WS/.claude" "$WS/old"; printf '{}' > "$TMPDIR/s"; mv "$TMPDIR/s" "$WS/.claude/settings.json"; rm -f "$WS/.claude/settings.json"; ln -f "$WS/.claude/settings.json" "$WS/hard"; echo x >> "$WS/hard"; echo '{}' > "$WS/.claude/settings.json"`, ""},
	{"create the absent settings.local.json and .mcp.json", "created",
		`echo '{"hooks":{}}' > "$WS/.claude/settings.local.json"; echo '{"mcpServers":{}}' > "$WS/.mcp.json"; mkdir "$WS/.gemini"; mkdir -p "$TMPDIR/g" && mv "$TMPDIR/g" "$WS/.gemini"`, ""},
	{"chroot into a tree of its own", "secret", `unshare -Ur chroot / cat "$JOULE_HOME/steward.key"`, ""},
}

// TestContainNamespaceAttacks runs nsAttacks through joule-exec, with the
// namespace construction (and, where the attack is not one on mounts, with
// Landlock alone too).
func TestContainNamespaceAttacks(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	s := newSlot(t)
	created := []string{filepath.Join(s.ws, ".claude", "settings.local.json"), filepath.Join(s.ws, ".mcp.json"), filepath.Join(s.ws, ".gemini")}
	for _, a := range nsAttacks {
		t.Run(a.name, func(t *testing.T) {
			hit := func(out, before []byte) bool {
				if a.effect != "created" {
					return s.happened(a.effect, out, before)
				}
				for _, p := range created {
					if _, err := os.Lstat(p); err == nil {
						return true
					}
				}
				return false
			}
			if a.control != "-" {
				s.reset(t)
				before, _ := os.ReadFile(s.settings)
				var out []byte
				if a.control == "" {
					out = s.run("bash", "-c", a.cmd)
				} else {
					out = s.run("unshare", "-Urm", "bash", "-c", a.control)
				}
				if !hit(out, before) {
					t.Fatalf("the control did not work, so the case proves nothing:\n  %s\n%s", a.control+a.cmd, out)
				}
			}
			for _, construction := range []string{"namespace", "landlock"} {
				s.reset(t)
				s.extraEnv = nil
				if construction == "landlock" {
					s.extraEnv = []string{sandbox.LandlockOnlyEnv + "=1"}
				}
				before, _ := os.ReadFile(s.settings)
				out := s.run(jouleExecBin(), "--policy", s.policy["dev"], "--", "/bin/bash", "-c", a.cmd)
				if hit(out, before) {
					t.Errorf("%s: got through joule-exec (%s construction):\n  %s\n%s", a.effect, construction, a.cmd, out)
				}
				if strings.HasPrefix(string(out), "joule-exec:") || strings.Contains(string(out), "construction failed") {
					t.Errorf("joule-exec did not confine as it should (%s): %s", construction, out)
				}
			}
			s.extraEnv = nil
		})
	}
}

// needNamespaces fails under CI where unprivileged user namespaces are off
// (they are on in the kernels CI runs), and skips elsewhere.
func needNamespaces(t *testing.T) {
	t.Helper()
	if err := exec.Command("unshare", "-Urm", "true").Run(); err != nil || !sandbox.NamespacesAvailable() {
		if os.Getenv("CI") != "" {
			t.Fatalf("unprivileged user namespaces do not work here (unshare -Urm true: %v)", err)
		}
		t.Skipf("unprivileged user namespaces do not work here (unshare -Urm true: %v)", err)
	}
}

// TestContainAsAnotherUser runs the namespace construction as an ordinary
// user (nobody), as developers run it: CI runs as root, and a uid other than
// 0 maps itself, writes setgroups before its gid map, and holds no
// capability after exec without the bounding set's help. The command must
// run in the namespace (no fallback message), see its own uid, find
// $JOULE_HOME and ~/.ssh hidden, and not undo the mounts.
func TestContainAsAnotherUser(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to become another user (setpriv)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("setpriv (util-linux) is missing")
		}
		t.Skip("setpriv (util-linux) is missing")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	// nobody must reach the binaries and its home.
	for _, d := range []string{filepath.Dir(jouleBin), root, filepath.Dir(root)} {
		os.Chmod(d, 0o755)
	}
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o755)
	os.Chown(home, 65534, 65534)
	script := `set -e
mkdir -p "$HOME/ws/src" "$TMPDIR" "$HOME/.ssh"; echo not-for-you > "$HOME/.ssh/id_rsa"
"$JOULE" init --steward test.example --workspace "$HOME/ws" >/dev/null 2>&1
P=$("$JOULE" exec --write-policy)
cd "$HOME/ws"
"$JEXEC" --policy "$P" -- /bin/bash -c 'id -u; cat ~/.ssh/id_rsa; ls "$JOULE_HOME"; echo hi > src/x && cat src/x; umount -l ~/.ssh; cat ~/.ssh/id_rsa; grep -c " $HOME/.ssh " /proc/self/mountinfo'`
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", script)
	cmd.Env = append(os.Environ(), "HOME="+home, "JOULE_HOME="+filepath.Join(home, ".joule"), "TMPDIR="+filepath.Join(home, "tmp"),
		"JOULE="+jouleBin, "JEXEC="+jouleExecBin())
	out, _ := cmd.CombinedOutput()
	s := string(out)
	for _, want := range []string{"65534\n", "id_rsa: Permission denied", "Permission denied", "hi\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("want %q in:\n%s", want, s)
		}
	}
	if strings.Contains(s, "not-for-you") || strings.Contains(s, "steward.key") || strings.Contains(s, "construction failed") {
		t.Errorf("as nobody, the namespace construction did not hold:\n%s", s)
	}
	if !strings.HasSuffix(strings.TrimSpace(s), "1") {
		t.Errorf("~/.ssh is not a mount in the command's namespace:\n%s", s)
	}
}

// TestContainExitAndSignals: in the namespace construction joule-exec waits
// for the program; the host must see the program's exit status, a program
// killed by a signal must kill joule-exec with it, and a SIGTERM to
// joule-exec alone must end the program (its PDEATHSIG).
func TestContainExitAndSignals(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	s := newSlot(t)
	s.reset(t)
	run := func(line string) *exec.Cmd {
		cmd := exec.Command(jouleExecBin(), "--policy", s.policy["dev"], "--", "/bin/bash", "-c", line)
		cmd.Dir, cmd.Env = s.ws, s.env()
		return cmd
	}
	if err := run("exit 7").Run(); err == nil || err.(*exec.ExitError).ExitCode() != 7 {
		t.Errorf("exit 7: %v", err)
	}
	err := run("kill -TERM $$").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("a program killed by SIGTERM: joule-exec ended with %v", err)
	}
	// $$ and /proc/self are the command's own PID namespace's: the
	// program is found in the host's /proc by its unique argument, the
	// pid this test can signal.
	arg := fmt.Sprintf("60.%d", time.Now().UnixNano()%1000000)
	cmd := run("exec sleep " + arg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := []byte("sleep\x00" + arg + "\x00")
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		time.Sleep(50 * time.Millisecond)
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Equal(b, want) {
				pid, _ = strconv.Atoi(e.Name())
			}
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		t.Fatal("the program did not start")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	gone := false
	for i := 0; i < 100 && !gone; i++ {
		gone = syscall.Kill(pid, 0) != nil
		time.Sleep(20 * time.Millisecond)
	}
	if !gone {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Error("the program outlived joule-exec after a SIGTERM to joule-exec")
	}
}
