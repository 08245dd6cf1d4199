package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/plugins/hook/resident"
	"github.com/joulehook/joule/plugins/hook/server"
	"github.com/joulehook/joule/plugins/hosts"
)

// System mode (joule install --system; docs/receipts.md, "System mode"):
// the machine's joule home belongs to a system user, whose resident gate
// answers every person's hooks and runs their grant commands, those that
// change trust state only for root and the admin group.

// systemFlag is --system with an optional path of the system
// configuration: "--system" alone means home.SystemConfig.
type systemFlag struct {
	set  bool
	path string
}

func (f *systemFlag) String() string   { return f.path }
func (f *systemFlag) IsBoolFlag() bool { return true }
func (f *systemFlag) Set(v string) error {
	f.set = true
	switch v {
	case "true":
	case "false":
		f.set = false
	default:
		f.path = v
	}
	return nil
}

// machineSystem is this machine's system mode as a person's CLI sees it:
// nil when there is none, or when this process is the system user itself
// (the gate's own commands run on its home directly). A configuration that
// is there but untrusted is an error: nothing falls back to user mode.
func machineSystem() (*home.System, error) {
	sys, err := home.LoadSystem("")
	switch {
	case errors.Is(err, home.ErrNoSystem):
		return nil, nil
	case err != nil:
		return nil, err
	case os.Geteuid() == sys.UID:
		return nil, nil
	}
	return sys, nil
}

// forwarded are the commands a person's CLI sends to the system gate: the
// grants live in the system user's home, which only the gate may open.
var forwarded = map[string]bool{"grant": true, "init": true}

// changesTrust reports an admin request that changes trust state: every
// one but listing and showing grants.
func changesTrust(args []string) bool {
	if len(args) == 0 {
		return true
	}
	if args[0] == "grant" && len(args) > 1 && (args[1] == "ls" || args[1] == "show") {
		return false
	}
	return true
}

// forwardSystem runs a forwarded command on the system gate when the
// machine has system mode; handled is false when it has not (the command
// then runs here, in user mode).
func forwardSystem(ctx context.Context, e *env, args []string) (code int, handled bool) {
	if !forwarded[args[0]] || hasAny(args, "-h", "-help", "--help") {
		return 0, false
	}
	sys, err := machineSystem()
	if err != nil {
		return report(e, withHint(err, "system mode is set up by 'sudo joule install --system'; its configuration must be root's")), true
	}
	if sys == nil {
		return 0, false
	}
	cwd, err := os.Getwd()
	if err != nil {
		return report(e, err), true
	}
	if os.Getenv("JOULE_HOME") != "" {
		fmt.Fprintf(e.stderr, "joule: this machine runs joule in system mode: JOULE_HOME is not used; asking the system gate\n")
	}
	q := &resident.Request{Op: resident.OpAdmin, Cwd: cwd, Home: sys.Home, Payload: server.JoinArgs(absWorkspaces(args, cwd))}
	resp, err := resident.AskSystem(sys, q, time.Now().Add(2*time.Minute), 3*time.Second)
	if err != nil {
		if errors.Is(err, resident.ErrImpostor) {
			return report(e, fmt.Errorf("refusing the gate on %s: %w; nothing was sent to it", sys.Socket(), err)), true
		}
		return report(e, withHint(fmt.Errorf("the system gate on %s does not answer: %w", sys.Socket(), err), "an administrator starts it: systemctl start joule-gate (see joule doctor)")), true
	}
	if resp.Kind != resident.Answer {
		return report(e, errors.New("the system gate is restarting; run the command again")), true
	}
	e.stdout.Write(resp.Stdout)
	e.stderr.Write(resp.Stderr)
	return resp.Exit, true
}

// hasAny reports whether args holds any of these.
func hasAny(args []string, these ...string) bool {
	for _, a := range args {
		for _, b := range these {
			if a == b {
				return true
			}
		}
	}
	return false
}

// absWorkspaces makes the --workspace values of init and grant issue
// absolute against cwd, and names cwd when there is none (their default):
// the gate runs them in the system user's home, not in the person's
// directory.
func absWorkspaces(args []string, cwd string) []string {
	if !(args[0] == "init" || len(args) > 1 && args[0] == "grant" && args[1] == "issue") {
		return args
	}
	out := make([]string, 0, len(args)+2)
	seen := false
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(cwd, p)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "workspace" {
			out = append(out, a)
			continue
		}
		seen = true
		switch {
		case hasValue:
			out = append(out, "--workspace="+abs(value))
		case i+1 < len(args):
			out = append(out, "--workspace="+abs(args[i+1]))
			i++
		default:
			out = append(out, a)
		}
	}
	if !seen {
		out = append(out, "--workspace="+cwd)
	}
	return out
}

// runSystemGate is joule gate serve --system: the machine's resident gate,
// run as the system user by its service (joule-gate.service) or by joule
// install --system where no systemd runs. It serves until stopped; when its
// binary or configuration changes it executes itself again, so an upgrade
// by joule install --system needs no service manager.
func runSystemGate(ctx context.Context, e *env, path string, idle time.Duration) error {
	sys, err := home.LoadSystem(path)
	if err != nil {
		return err
	}
	if os.Geteuid() != sys.UID {
		return withHint(fmt.Errorf("the system gate runs as %s (uid %d), not as uid %d", sys.User, sys.UID, os.Geteuid()),
			"systemctl start joule-gate, or: runuser -u "+sys.User+" -- "+filepath.Join(sys.Bin, "joule")+" gate serve --system")
	}
	// This process's environment selects nothing but the system home.
	os.Setenv("JOULE_HOME", sys.Home)
	os.Setenv("HOME", sys.Home)
	os.Unsetenv(StoreEnv)
	syscall.Umask(0o077)
	policies := filepath.Join(sys.Run, "policy")
	if err := os.Mkdir(policies, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Chmod(policies, 0o711); err != nil {
		return err
	}
	cfg := server.Config{Home: sys.Home, UserHome: sys.Home,
		Watch:   []string{ConfigFile, IssuersFile, identity.PubKeyFile},
		Adapter: residentAdapter, ExecEnv: resident.ExecEnvOf(os.Getenv),
		Hosts: hostNames(), Version: version(), Idle: idle, Log: e.stderr,
		System: &server.SystemMode{Dir: sys.Run, AdminGID: sys.AdminGID, For: systemPeerGate(sys), Admin: systemAdmin(sys)}}
	r, err := server.New(cfg)
	if err != nil {
		return err
	}
	var ep *endpoint
	err = r.Serve(ctx, func() (*gate.Gate, error) {
		var err error
		if ep, err = openEndpoint(); err != nil {
			return nil, err
		}
		return ep.gate()
	})
	if err != nil {
		if ep != nil {
			ep.Close()
		}
		return err
	}
	if r.Stale() && ctx.Err() == nil {
		self := filepath.Join(sys.Bin, "joule")
		fmt.Fprintf(e.stderr, "joule gate[%d]: starting again as %s\n", os.Getpid(), self)
		return syscall.Exec(self, append([]string{self}, os.Args[1:]...), os.Environ())
	}
	return nil
}

// systemPeerGate is the gate of each person's hooks: the system gate's
// store, key and trust, with the home the password database gives their
// uid (where their hosts' configuration is, which the gate protects) and
// their containment.
func systemPeerGate(sys *home.System) func(base *gate.Gate, uid int) (*server.PeerGate, error) {
	return func(base *gate.Gate, uid int) (*server.PeerGate, error) {
		u, err := user.LookupId(strconv.Itoa(uid))
		if err != nil {
			return nil, fmt.Errorf("uid %d is not in the password database: %w", uid, err)
		}
		if !filepath.IsAbs(u.HomeDir) {
			return nil, fmt.Errorf("user %s has no absolute home directory (%q)", u.Username, u.HomeDir)
		}
		none := func(string) string { return "" }
		g := &gate.Gate{Store: base.Store, Sealer: base.Sealer, Trust: base.Trust, Admins: base.Admins, TeamWitness: base.TeamWitness, Files: base.Files, JouleHome: base.JouleHome,
			Home: u.HomeDir, Costs: base.Costs, Hosts: hosts.Config(none, "")}
		return &server.PeerGate{Gate: g, Contain: systemContainment(sys, u.HomeDir)}, nil
	}
}

// systemContainment is gateContainment for one person on a system gate:
// the policies go into the gate's own directory, readable by the person
// (the joule-exec they run reads them), and the private layers of their
// sessions into their own home.
func systemContainment(sys *home.System, userHome string) func(host, mode string) (*gate.Containment, error) {
	base := gateContainment(sys.Home)
	return func(host, mode string) (*gate.Containment, error) {
		c, err := base(host, mode)
		if err != nil || c == nil || mode != resident.ModeContain {
			return c, err
		}
		cc := *c
		if cc.Runner != "" {
			cc.PolicyDir = filepath.Join(sys.Run, "policy")
			cc.LayerRoot = filepath.Join(userHome, ".cache", "joule")
		}
		return &cc, nil
	}
}

// adminTimeout bounds one admin request.
const adminTimeout = 2 * time.Minute

// systemAdmin runs a person's forwarded command (joule grant …, joule init)
// as the system user on its home, when the person may: listing and showing
// grants anyone may, everything else only root and the admin group.
func systemAdmin(sys *home.System) func(ctx context.Context, args []string, cwd string, peer resident.Peer, admin bool) *resident.Response {
	self := filepath.Join(sys.Bin, "joule")
	return func(ctx context.Context, args []string, cwd string, peer resident.Peer, admin bool) *resident.Response {
		fail := func(code int, format string, a ...any) *resident.Response {
			return &resident.Response{Kind: resident.Answer, Exit: code, Stderr: fmt.Appendf(nil, "joule: "+format+"\n", a...)}
		}
		if len(args) == 0 || !forwarded[args[0]] {
			return fail(2, "the system gate runs only %s for you", "'joule grant' and 'joule init'")
		}
		if changesTrust(args) && !admin {
			return fail(1, "on this machine (system mode) issuing, renewing, revoking and activating grants needs root or the %s group, and uid %d has neither\nhint: ask your administrator, or run it with sudo", sys.AdminGroup, peer.UID)
		}
		for _, a := range args {
			if w, ok := strings.CutPrefix(a, "--workspace="); ok {
				if _, err := os.Stat(w); errors.Is(err, os.ErrPermission) {
					return fail(1, "the system user %s cannot reach %s (%v): the gate resolves every path a decision names, so it needs search access on the way there\nhint: setfacl -m u:%s:x on each directory above it that %s may not enter (a home of mode 0700 or 0750)", sys.User, w, err, sys.User, sys.User)
				}
			}
		}
		ctx, cancel := context.WithTimeout(ctx, adminTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.Dir = sys.Home
		cmd.Env = []string{"JOULE_HOME=" + sys.Home, "HOME=" + sys.Home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
		var out, errb bytes.Buffer
		cmd.Stdin = nil
		cmd.Stdout, cmd.Stderr = limited(&out), limited(&errb)
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			return fail(1, "the system gate could not run the command: %v", err)
		}
		return &resident.Response{Kind: resident.Answer, Exit: code, Stdout: out.Bytes(), Stderr: errb.Bytes()}
	}
}

// limited keeps at most 1 MiB of a command's output.
func limited(b *bytes.Buffer) io.Writer { return &capWriter{b: b, left: 1 << 20} }

type capWriter struct {
	b    *bytes.Buffer
	left int
}

func (w *capWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.left)
	w.b.Write(p[:n])
	w.left -= n
	return len(p), nil
}

// systemGateState describes the system gate for joule gate status and
// joule doctor.
func systemGateState(sys *home.System) (ok bool, text string) {
	resp, err := resident.AskSystem(sys, &resident.Request{Op: resident.OpStatus, Home: sys.Home}, time.Now().Add(5*time.Second), time.Second)
	switch {
	case errors.Is(err, resident.ErrImpostor):
		return false, "refusing the gate on " + sys.Socket() + ": " + err.Error()
	case err != nil:
		return false, "the system gate on " + sys.Socket() + " does not answer (" + err.Error() + "); an administrator starts it: systemctl start joule-gate"
	case resp.Kind != resident.Answer:
		return false, "the system gate on " + sys.Socket() + " is restarting"
	}
	return true, strings.TrimSpace(string(resp.Stdout))
}
