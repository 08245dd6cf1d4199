package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/resident"
	"github.com/joulehook/joule/plugins/hosts"
)

// Where joule install --system puts things (docs/receipts.md, "System
// mode"). The home and the socket directory are named after the system
// user: /var/lib/joule and /run/joule for the default one.
const (
	systemBin      = "/usr/local/libexec/joule"
	systemUnitDir  = "/etc/systemd/system"
	defaultSysUser = "joule"
	defaultAdmin   = "joule-admin"
	defaultProxy   = "127.0.0.1:7411"
)

// systemBinaries are the programs a system install copies into systemBin:
// the hooks run joule-hook, contained commands joule-exec, the services
// joule.
var systemBinaries = []string{"joule", ClientName, "joule-exec"}

// systemHostNames are the hosts joule install --system serves.
func systemHostNames() string {
	return strings.Join(hosts.Names(func(h hook.Host) bool { return h.System != nil }), ", ")
}

// wantsSystem reports an install command line with --system.
func wantsSystem(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--system" || a == "-system" {
			return true
		}
	}
	return false
}

func runInstallSystem(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "install --system", `install --system [HOST...] [--system-user joule] [--admin-group joule-admin] [--proxy ADDR|off] [--no-contain] [--uninstall]

Sets this machine up in system mode (Linux, as root: sudo): a system user
(no login shell, home /var/lib/USER) owns joule's key, store and witness
state; the resident gate and the proxy run as that user (systemd units
where systemd runs, else started here); joule's binaries are copied into
`+systemBin+`, owned by root; and each HOST's managed settings, which no
setting of a user's removes or overrides, get a hook that asks that gate
and refuses any other (joule-hook --system). Issuing, renewing, revoking
and activating grants then needs root or the admin group: people run
'sudo joule grant …'. Running it again changes nothing, and upgrades the
binaries (the gate restarts itself). --uninstall with HOSTs removes their
hooks; without, it also stops and removes the services and the system
configuration, keeping the user, the group and the home (receipts).
Hosts: `+systemHostNames()+`. See docs/receipts.md, "System mode".`)
	fs.Bool("system", true, "system mode (this form of the command)")
	sysUser := fs.String("system-user", defaultSysUser, "the system user that owns the home and runs the gate and the proxy")
	adminGroup := fs.String("admin-group", defaultAdmin, "the group whose members (and root) may change grants")
	proxyAddr := fs.String("proxy", defaultProxy, "loopback address of the system proxy, or off")
	noContain := fs.Bool("no-contain", false, "do not run the shell commands joule allows under joule-exec (a weaker install)")
	uninstall := fs.Bool("uninstall", false, "remove the hooks of HOSTs, or everything but the user, group and home")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if runtime.GOOS != "linux" {
		return errors.New("install --system: system mode rests on the kernel's peer credentials and is Linux only (docs/receipts.md, System mode, says what macOS would need)")
	}
	if os.Geteuid() != 0 {
		return withHint(errors.New("install --system must run as root"), "sudo joule install --system "+strings.Join(fs.Args(), " "))
	}
	var hs []hook.Host
	for _, name := range fs.Args() {
		h, ok := hosts.Lookup(name)
		if !ok || h.System == nil {
			return usagef("install --system: %q is not a host joule installs system-wide (hosts: %s)", name, systemHostNames())
		}
		hs = append(hs, h)
	}
	if *proxyAddr != "off" {
		if err := checkLoopback(*proxyAddr); err != nil {
			return err
		}
	}
	si := &systemInstall{e: e, user: *sysUser, group: *adminGroup, proxy: *proxyAddr}
	if *uninstall {
		return si.uninstall(ctx, hs)
	}
	mode := hook.Contained
	if *noContain {
		mode = hook.NoContain
	}
	return si.install(ctx, hs, mode)
}

type systemInstall struct {
	e     *env
	user  string
	group string
	proxy string
	sys   *home.System
}

func (si *systemInstall) say(format string, a ...any) { fmt.Fprintf(si.e.stdout, format+"\n", a...) }

// install sets the machine up, step by step, each idempotent.
func (si *systemInstall) install(ctx context.Context, hs []hook.Host, mode hook.ContainMode) error {
	sys, err := si.accounts()
	if err != nil {
		return err
	}
	si.sys = sys
	if err := si.binaries(); err != nil {
		return err
	}
	if err := si.directories(); err != nil {
		return err
	}
	if changed, err := writeSystemConfig(sys); err != nil {
		return err
	} else if changed {
		si.say("wrote %s", home.SystemConfig)
	}
	if err := si.initHome(ctx); err != nil {
		return err
	}
	if err := si.services(); err != nil {
		return err
	}
	ok, text := waitSystemGate(sys, 10*time.Second)
	if !ok {
		return fmt.Errorf("the system gate did not come up: %s (see %s)", text, filepath.Join(sys.Home, resident.LogName))
	}
	si.say("ok   the system gate answers on %s as %s (uid %d), checked by its peer credentials", sys.Socket(), sys.User, sys.UID)
	missing := 0
	scope := hook.SystemScope{Client: filepath.Join(systemBin, ClientName), Contain: mode}
	recDir := filepath.Dir(home.SystemConfig)
	for _, h := range hs {
		findings, err := si.host(h, scope, recDir, false)
		if err != nil {
			return err
		}
		for _, f := range findings {
			mark := "ok  "
			switch {
			case !f.OK:
				mark, missing = "todo", missing+1
			case f.Weak:
				mark = "warn"
			}
			si.say("%s %s: %s", mark, h.Name, f.Text)
		}
	}
	if !si.activeGrant(ctx) {
		missing++
		si.say("todo no active grant yet, so every call is denied: sudo joule grant issue --template dev --workspace DIR --use")
	}
	if missing > 0 {
		si.say("system mode is set up; %d thing(s) to do above", missing)
		return nil
	}
	si.say("armed: every hooked tool call on this machine is decided by the system gate; grants change only with root or the %s group", sys.AdminGroup)
	return nil
}

// accounts makes the admin group and the system user where they are
// missing, and returns the system configuration they give.
func (si *systemInstall) accounts() (*home.System, error) {
	g, err := user.LookupGroup(si.group)
	if err != nil {
		if err := runQuiet("groupadd", "--system", si.group); err != nil {
			return nil, fmt.Errorf("creating the group %s: %w", si.group, err)
		}
		si.say("created the group %s", si.group)
		if g, err = user.LookupGroup(si.group); err != nil {
			return nil, err
		}
	}
	u, err := user.Lookup(si.user)
	if err != nil {
		if err := runQuiet("useradd", "--system", "--user-group", "--home-dir", filepath.Join("/var/lib", si.user),
			"--no-create-home", "--shell", noLogin(), "--comment", "joule system gate", si.user); err != nil {
			return nil, fmt.Errorf("creating the user %s: %w", si.user, err)
		}
		si.say("created the system user %s (no login shell)", si.user)
		if u, err = user.Lookup(si.user); err != nil {
			return nil, err
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	agid, _ := strconv.Atoi(g.Gid)
	if uid == 0 || agid == 0 {
		return nil, fmt.Errorf("the system user %s and group %s must not be root's", si.user, si.group)
	}
	sys := &home.System{User: si.user, UID: uid, GID: gid, AdminGroup: si.group, AdminGID: agid,
		Home: u.HomeDir, Run: filepath.Join("/run", si.user), Bin: systemBin}
	if si.proxy != "off" {
		sys.Proxy = si.proxy
	}
	if err := sys.Valid(); err != nil {
		return nil, fmt.Errorf("the system user %s: %w", si.user, err)
	}
	return sys, nil
}

func noLogin() string {
	for _, p := range []string{"/usr/sbin/nologin", "/sbin/nologin"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "/bin/false"
}

func runQuiet(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// binaries copies joule, joule-hook and joule-exec from beside this binary
// into systemBin, root's, each only when it differs (a copy replaces the
// file by a rename, which a running gate sees as an upgrade).
func (si *systemInstall) binaries() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	if err := os.MkdirAll(systemBin, 0o755); err != nil {
		return err
	}
	if err := home.TrustedPath(systemBin, 0); err != nil {
		return fmt.Errorf("%s: %w", systemBin, err)
	}
	for _, name := range systemBinaries {
		src := filepath.Join(filepath.Dir(self), name)
		b, err := os.ReadFile(src)
		if err != nil {
			return withHint(fmt.Errorf("%s is missing beside %s", name, self), "build all three with 'make build' (or go install github.com/joulehook/joule/cmd/...@latest)")
		}
		dst := filepath.Join(systemBin, name)
		if cur, err := os.ReadFile(dst); err == nil && bytes.Equal(cur, b) {
			continue
		}
		tmp := dst + ".new"
		if err := os.WriteFile(tmp, b, 0o755); err != nil {
			return err
		}
		if err := os.Chown(tmp, 0, 0); err != nil {
			return err
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
		si.say("installed %s", dst)
	}
	return nil
}

// directories makes the home (0700) and the socket directory (0755), the
// system user's.
func (si *systemInstall) directories() error {
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{si.sys.Home, 0o700}, {si.sys.Run, 0o755}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return err
		}
		st, err := os.Lstat(d.path)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", d.path)
		}
		if err := os.Chown(d.path, si.sys.UID, si.sys.GID); err != nil {
			return err
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			return err
		}
		if err := home.TrustedPath(d.path, si.sys.UID); err != nil {
			return err
		}
	}
	return nil
}

// writeSystemConfig writes home.SystemConfig, root's, 0644, unless it
// says so already.
func writeSystemConfig(sys *home.System) (changed bool, err error) {
	b := sys.Format()
	dir := filepath.Dir(home.SystemConfig)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return false, err
	}
	if cur, err := os.ReadFile(home.SystemConfig); err == nil && bytes.Equal(cur, b) {
		_, err := home.LoadSystem("")
		return false, err
	}
	tmp := home.SystemConfig + ".new"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return false, err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, home.SystemConfig); err != nil {
		return false, err
	}
	_, err = home.LoadSystem("")
	return true, err
}

// asSystemUser is a command of the system binaries run as the system user
// on its home, with no environment of root's.
func (si *systemInstall) asSystemUser(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(systemBin, "joule"), args...)
	cmd.Dir = si.sys.Home
	cmd.Env = []string{"JOULE_HOME=" + si.sys.Home, "HOME=" + si.sys.Home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(si.sys.UID), Gid: uint32(si.sys.GID), Groups: []uint32{}}}
	return cmd
}

// initHome creates the key (once) and the store in the system home, as
// the system user.
func (si *systemInstall) initHome(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(si.sys.Home, identity.PubKeyFile)); errors.Is(err, os.ErrNotExist) {
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		if out, err := si.asSystemUser("keygen", "--steward", si.sys.User+"@"+host).CombinedOutput(); err != nil {
			return fmt.Errorf("creating the system key: %v: %s", err, bytes.TrimSpace(out))
		}
		si.say("created the system key in %s (mode 0600, %s's)", si.sys.Home, si.sys.User)
	}
	if out, err := si.asSystemUser("store", "migrate").CombinedOutput(); err != nil {
		return fmt.Errorf("creating the system store: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// systemdRuns reports a machine whose init is systemd (sd_booted).
func systemdRuns() bool {
	st, err := os.Lstat("/run/systemd/system")
	return err == nil && st.IsDir()
}

// units are the systemd units of a system install.
func (si *systemInstall) units() map[string]string {
	joule := filepath.Join(systemBin, "joule")
	common := fmt.Sprintf(`User=%s
Group=%s
Environment=JOULE_HOME=%s HOME=%s
WorkingDirectory=%s
UMask=0077
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=%s %s
Restart=always
RestartSec=1
`, si.sys.User, si.sys.User, si.sys.Home, si.sys.Home, si.sys.Home, si.sys.Home, si.sys.Run)
	u := map[string]string{
		"joule-gate.service": fmt.Sprintf(`# Written by 'joule install --system'; 'joule install --system --uninstall' removes it.
[Unit]
Description=joule system gate: decides every hooked agent tool call on this machine
After=local-fs.target

[Service]
Type=simple
ExecStart=%s gate serve --system
RuntimeDirectory=%s
RuntimeDirectoryMode=0755
RuntimeDirectoryPreserve=yes
%s
[Install]
WantedBy=multi-user.target
`, joule, filepath.Base(si.sys.Run), common),
	}
	if si.sys.Proxy != "" {
		u["joule-proxy.service"] = fmt.Sprintf(`# Written by 'joule install --system'; 'joule install --system --uninstall' removes it.
[Unit]
Description=joule system proxy: meters model calls against the machine's grants
After=joule-gate.service

[Service]
Type=simple
ExecStart=%s proxy --listen %s
%s
[Install]
WantedBy=multi-user.target
`, joule, si.sys.Proxy, common)
	}
	return u
}

// services writes the units and, under systemd, enables and starts them;
// elsewhere it starts the gate and the proxy itself, as the system user,
// each in a session of its own, unless they already answer.
func (si *systemInstall) services() error {
	units := si.units()
	if st, err := os.Stat(systemUnitDir); err == nil && st.IsDir() {
		for name, body := range units {
			p := filepath.Join(systemUnitDir, name)
			if cur, err := os.ReadFile(p); err == nil && string(cur) == body {
				continue
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return err
			}
			si.say("wrote %s", p)
		}
	}
	if systemdRuns() {
		if err := runQuiet("systemctl", "daemon-reload"); err != nil {
			return err
		}
		names := []string{"joule-gate.service"}
		if si.sys.Proxy != "" {
			names = append(names, "joule-proxy.service")
		}
		if err := runQuiet("systemctl", append([]string{"enable", "--now"}, names...)...); err != nil {
			return err
		}
		si.say("enabled and started %s (systemd)", strings.Join(names, ", "))
		return nil
	}
	if ok, _ := systemGateState(si.sys); !ok {
		pid, err := si.start(resident.LogName, "gate", "serve", "--system")
		if err != nil {
			return fmt.Errorf("starting the system gate: %w", err)
		}
		si.say("started the system gate as %s (pid %d; no systemd here: after a reboot start it with runuser -u %s -- %s gate serve --system)", si.sys.User, pid, si.sys.User, filepath.Join(systemBin, "joule"))
	}
	if si.sys.Proxy != "" {
		if c, err := net.DialTimeout("tcp", si.sys.Proxy, time.Second); err == nil {
			c.Close()
		} else {
			pid, err := si.start("proxy.log", "proxy", "--listen", si.sys.Proxy)
			if err != nil {
				return fmt.Errorf("starting the system proxy: %w", err)
			}
			os.WriteFile(filepath.Join(si.sys.Run, "proxy.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644)
			si.say("started the system proxy on %s as %s (pid %d)", si.sys.Proxy, si.sys.User, pid)
		}
	}
	return nil
}

// start runs joule with args as the system user, detached (a session of
// its own, standard input from /dev/null, its output appended to logName
// in the home), and returns its pid.
func (si *systemInstall) start(logName string, args ...string) (int, error) {
	logPath := filepath.Join(si.sys.Home, logName)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	if err := logf.Chown(si.sys.UID, si.sys.GID); err != nil {
		return 0, err
	}
	cmd := si.asSystemUser(args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}

// waitSystemGate waits until the system gate answers a status request.
func waitSystemGate(sys *home.System, wait time.Duration) (bool, string) {
	deadline := time.Now().Add(wait)
	for {
		ok, text := systemGateState(sys)
		if ok || time.Now().After(deadline) {
			return ok, text
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// host writes (or removes) h's managed hook, recorded in dir's
// installs.json so that an uninstall gives each file back as it was, and
// returns the check of what is on disk.
func (si *systemInstall) host(h hook.Host, s hook.SystemScope, dir string, uninstall bool) ([]hook.Finding, error) {
	rec, err := hook.FindRecord(dir, h.Name, "")
	if err != nil {
		return nil, err
	}
	changes, err := h.System.PlanSystem(s, uninstall)
	if err != nil {
		return nil, err
	}
	if uninstall && rec != nil {
		changes = hook.Restoring(changes, rec)
	}
	lines, applied, err := hook.ApplyRecorded(changes, time.Now(), filepath.Join(dir, "backups"))
	for _, l := range lines {
		si.say("%s", l)
	}
	if err != nil {
		return nil, err
	}
	if uninstall {
		if rec != nil {
			hook.RemoveEmptyDirs(rec.CreatedDirs())
		}
		return nil, hook.ForgetRecord(dir, h.Name, "")
	}
	next := hook.NextRecord(rec, h.Name, "", changes, applied, nil, time.Now())
	next.Contain = s.Contain
	if err := hook.SaveRecord(dir, next); err != nil {
		return nil, err
	}
	return h.System.CheckSystem(s), nil
}

// activeGrant reports whether the system home has an active grant, asked
// of the gate as root.
func (si *systemInstall) activeGrant(ctx context.Context) bool {
	q := &resident.Request{Op: resident.OpAdmin, Cwd: "/", Home: si.sys.Home, Payload: []byte("grant\x00ls\x00--json")}
	resp, err := resident.AskSystem(si.sys, q, time.Now().Add(30*time.Second), time.Second)
	if err != nil || resp.Exit != 0 {
		return false
	}
	var rows []grantRow
	if json.Unmarshal(resp.Stdout, &rows) != nil {
		return false
	}
	for _, r := range rows {
		if r.Active && r.State == "ok" {
			return true
		}
	}
	return false
}

// uninstall takes the hooks of hs out of their managed settings (of every
// host installed, when hs is empty) and then, with hs empty, stops and
// removes the services, the binaries and the system configuration.
func (si *systemInstall) uninstall(ctx context.Context, hs []hook.Host) error {
	sys, err := home.LoadSystem("")
	if err != nil && !errors.Is(err, home.ErrNoSystem) {
		return err
	}
	dir := filepath.Dir(home.SystemConfig)
	all := len(hs) == 0
	if all {
		for _, h := range hosts.All() {
			if h.System == nil {
				continue
			}
			if rec, _ := hook.FindRecord(dir, h.Name, ""); rec != nil {
				hs = append(hs, h)
			}
		}
	}
	scope := hook.SystemScope{Client: filepath.Join(systemBin, ClientName)}
	for _, h := range hs {
		if _, err := si.host(h, scope, dir, true); err != nil {
			return err
		}
		si.say("joule's system hook is no longer in %s's managed settings", h.Name)
	}
	if !all {
		return nil
	}
	if sys != nil {
		si.sys = sys
		si.stopServices()
	}
	for name := range map[string]bool{"joule-gate.service": true, "joule-proxy.service": true} {
		p := filepath.Join(systemUnitDir, name)
		if err := os.Remove(p); err == nil {
			si.say("removed %s", p)
		}
	}
	if systemdRuns() {
		runQuiet("systemctl", "daemon-reload")
	}
	for _, name := range systemBinaries {
		os.Remove(filepath.Join(systemBin, name))
	}
	os.Remove(systemBin)
	if err := os.Remove(home.SystemConfig); err == nil {
		si.say("removed %s: this machine is back in user mode", home.SystemConfig)
	}
	if sys != nil {
		si.say("kept the user %s, the group %s and %s (the receipts); remove them with userdel %s, groupdel %s and rm -r %s", sys.User, sys.AdminGroup, sys.Home, sys.User, sys.AdminGroup, sys.Home)
	}
	return nil
}

// stopServices stops the gate and the proxy: through systemd where it
// runs, else the gate by its stop request and the proxy by the pid this
// install recorded (when that process is still the system user's joule).
func (si *systemInstall) stopServices() {
	if systemdRuns() {
		if err := runQuiet("systemctl", "disable", "--now", "joule-gate.service", "joule-proxy.service"); err == nil {
			si.say("stopped and disabled the joule services")
		}
		return
	}
	if resp, err := resident.AskSystem(si.sys, &resident.Request{Op: resident.OpStop, Home: si.sys.Home}, time.Now().Add(15*time.Second), time.Second); err == nil && resp.Exit == 0 {
		si.say("%s", strings.TrimSpace(string(resp.Stdout)))
	}
	pidFile := filepath.Join(si.sys.Run, "proxy.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err == nil && pid > 1 && si.ownsProcess(pid) {
		syscall.Kill(pid, syscall.SIGTERM)
		si.say("stopped the system proxy (pid %d)", pid)
	}
	os.Remove(pidFile)
}

// ownsProcess reports whether pid is the system user's joule.
func (si *systemInstall) ownsProcess(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || strings.TrimSuffix(exe, " (deleted)") != filepath.Join(systemBin, "joule") {
		return false
	}
	var st syscall.Stat_t
	if syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st) != nil {
		return false
	}
	return int(st.Uid) == si.sys.UID
}
