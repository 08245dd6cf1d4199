//go:build unix

// Command joule-hook is the thin hook client a host spawns for every tool
// call: `joule-hook HOST [--contain | --no-contain] < payload.json`. It
// forwards the payload, with the containment mode of its flag, to the
// resident gate of $JOULE_HOME (joule gate serve) over its Unix socket and
// writes back exactly what the gate answers: stdout, stderr, exit status,
// the same as `joule hook HOST` with that flag would (the gate rewrites
// the commands it allows to run under joule-exec, or says in the receipt
// that they are not contained). When no gate answers it runs
// `joule hook HOST` (with the flag) itself, so the host gets
// its decision as fast as without a gate, and that process, once it has
// answered, stays as the gate for the calls after it (detached, in its own
// session, logging to $JOULE_HOME/gate.log). Whatever happens the host
// gets a decision, and on any failure its own explicit deny before the
// hook's timeout ($JOULE_HOOK_TIMEOUT, default 20s; every install writes
// 30s).
//
// It links only the standard library and plugins/hook/resident: no SDK, no
// SQLite, no analysis code, so it starts as fast as any small Go program.
//
// The joule binary it starts (and falls back to) is the one beside it (make
// build and go install put both in one directory, and joule install writes
// the client only when it is there), else $JOULE_BIN, else joule on $PATH.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/joulehook/joule/plugins/hook/resident"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin *os.File, stdout, stderr *os.File) int {
	start := time.Now()
	budget := resident.Budget(os.Getenv)
	deadline := start.Add(budget)
	system, sysPath := false, ""
	if len(args) > 0 && (args[0] == "--system" || strings.HasPrefix(args[0], "--system=")) {
		system, sysPath = true, strings.TrimPrefix(strings.TrimPrefix(args[0], "--system"), "=")
		args = args[1:]
	}
	mode, ok := "", len(args) == 1
	if len(args) == 2 {
		mode, ok = resident.ModeOf(args[1])
	}
	if !ok || args[0] == "" || args[0][0] == '-' {
		fmt.Fprintln(stderr, "usage: joule-hook [--system[=CONFIG]] HOST [--contain | --no-contain] < payload.json (as 'joule hook HOST'); every failure is HOST's deny")
		return 2
	}
	host := args[0]
	denyCode := func(code, why string) int {
		o, e, exit := resident.Deny(host, "joule deny ("+code+"): "+why)
		stdout.Write(o)
		stderr.Write(e)
		return exit
	}
	deny := func(why string) int { return denyCode("internal-error", why) }
	if system {
		return runSystem(host, mode, sysPath, stdin, stdout, stderr, deadline, denyCode)
	}
	joule := findJoule()
	c := &client{host: host, mode: mode, joule: joule, deadline: deadline}
	// The gate gets three quarters of the budget; the in-process
	// fallback the rest.
	gateBy := start.Add(budget * 3 / 4)
	resp, ok, err := c.viaGate(stdin, gateBy)
	if err != nil {
		return deny("joule cannot read this " + host + " hook payload: " + err.Error())
	}
	if ok {
		stdout.Write(resp.Stdout)
		stderr.Write(resp.Stderr)
		return resp.Exit
	}
	if joule == "" {
		return deny("no resident gate answered and no joule binary was found beside " + self() + ", in $JOULE_BIN or on $PATH")
	}
	resp, err = c.inProcess(stdin, deadline.Add(-200*time.Millisecond))
	if err != nil {
		return deny("no resident gate answered and '" + joule + " hook " + host + "' failed: " + err.Error())
	}
	stdout.Write(resp.Stdout)
	stderr.Write(resp.Stderr)
	return resp.Exit
}

type client struct {
	host, joule string
	mode        string // the containment mode of the hook line's flag
	payload     []byte // nil until read: joule hook then reads stdin itself
	deadline    time.Time
	home, dir   string
	spawn       bool // the in-process decision stays as the gate
}

// viaGate asks the resident gate; ok is false when the caller must decide
// in-process instead (and c.spawn says whether that process is to stay as
// the gate). It connects before it reads the payload, so that when no
// gate listens joule hook reads the host's standard input itself; err is
// set only when the payload could not be read.
func (c *client) viaGate(stdin io.Reader, by time.Time) (*resident.Response, bool, error) {
	home, err := resident.Home()
	if err != nil {
		return nil, false, nil
	}
	c.home, c.dir = home, resident.Dir(home)
	conn, err := resident.Dial(c.dir, by)
	if err != nil {
		if errors.Is(err, resident.ErrUnsafe) {
			c.log("not using the resident gate: %v", err)
		} else {
			// No gate (none yet, a dead one's stale socket).
			c.spawn = true
		}
		return nil, false, nil
	}
	defer conn.Close()
	if c.payload, err = readPayload(stdin, c.deadline); err != nil {
		return nil, false, err
	}
	store, storeSet := os.LookupEnv("JOULE_STORE")
	cwd, _ := os.Getwd()
	userHome, _ := os.UserHomeDir()
	req := &resident.Request{Op: resident.OpHook, Host: c.host, Contain: c.mode, Cwd: cwd, Home: home, UserHome: userHome,
		Store: store, StoreSet: storeSet, Joule: c.joule, ExecEnv: resident.ExecEnvOf(os.Getenv), Payload: c.payload}
	resp, err := resident.Exchange(conn, req, by)
	switch {
	case err == nil && resp.Kind == resident.Answer:
		return resp, true, nil
	case err == nil && resp.Kind == resident.Mismatch:
	default:
		// A gate killed while it had this request, or one that is
		// exiting (Stale): this call is decided in-process, and a gate
		// is started for the next.
		c.spawn = true
	}
	return nil, false, nil
}

// inProcess runs `joule hook --answer-fd 3 HOST` (with the mode's flag) on
// the host's stdin when
// the payload is still unread, else on the payload read: the path that
// needs no gate. With c.spawn it adds --then-serve, in a session of its
// own: once it has answered, that process stays as the resident gate, so
// a first call starts joule once, not twice, and the gate's start
// competes with nothing this call waits for.
//
// The answer comes back as one frame on a pipe, so it is all or nothing:
// the host reads the whole of it or, when the child is killed at the
// deadline or ends without a whole frame, nothing of it (the caller then
// writes the host's deny). Nothing the child writes on its own stdout or
// stderr reaches the host: they go to $JOULE_HOME/gate.log.
func (c *client) inProcess(stdin *os.File, by time.Time) (*resident.Response, error) {
	if !time.Now().Before(by) {
		// The gate took the budget: a joule hook started now would be
		// killed before it could answer.
		return nil, errors.New("no answer within the hook's time budget")
	}
	in := stdin
	if c.payload != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		go func() {
			w.Write(c.payload)
			w.Close()
		}()
		in = r
	}
	answer, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer answer.Close()
	logf, err := c.openLog()
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := []string{c.joule, "hook", "--answer-fd", "3"}
	if c.spawn {
		args = append(args, "--then-serve")
	}
	if c.mode != "" {
		args = append(args, "--"+c.mode)
	}
	pid, err := syscall.ForkExec(c.joule, append(args, c.host), &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{in.Fd(), logf.Fd(), logf.Fd(), w.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: c.spawn},
	})
	// Only the child may hold the write end: the read sees the end of
	// the pipe when the child dies.
	w.Close()
	if err != nil {
		return nil, err
	}
	answer.SetReadDeadline(by)
	resp, err := resident.ReadResponse(answer)
	if err == nil && resp.Kind != resident.Answer {
		err = fmt.Errorf("answer of kind %q", resp.Kind)
	}
	if err != nil {
		// The child is not waited for, so its pid is not reused before
		// this client exits.
		syscall.Kill(pid, syscall.SIGKILL)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errors.New("no answer within the hook's time budget")
		}
		return nil, fmt.Errorf("it ended without a whole answer (%v; see %s)", err, filepath.Join(c.home, resident.LogName))
	}
	// Not waited for either: the child exits, or serves, on its own time.
	return resp, nil
}

// openLog opens $JOULE_HOME/gate.log for appending, else (a read-only
// home) the null device.
func (c *client) openLog() (*os.File, error) {
	if c.home != "" {
		if f, err := os.OpenFile(filepath.Join(c.home, resident.LogName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			return f, nil
		}
	}
	return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
}

// readPayload reads at most resident.MaxPayload bytes of stdin (one past
// the gate's limit, so the gate refuses, sealed, a payload that is too
// large) and gives up at the deadline.
func readPayload(r io.Reader, by time.Time) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, resident.MaxPayload))
		ch <- result{b, err}
	}()
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case res := <-ch:
		return res.b, res.err
	case <-t.C:
		return nil, errors.New("stdin did not end before the hook's time budget ran out")
	}
}

// findJoule is the joule binary beside this one, else $JOULE_BIN, else
// joule on $PATH; "" when there is none.
func findJoule() string {
	if s := self(); s != "" {
		p := filepath.Join(filepath.Dir(s), "joule")
		if isExec(p) {
			return p
		}
	}
	if p := os.Getenv("JOULE_BIN"); p != "" && isExec(p) {
		return p
	}
	if p, err := exec.LookPath("joule"); err == nil {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
	}
	return ""
}

func self() string {
	s, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(s); err == nil {
		s = r
	}
	return s
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// log appends a line to $JOULE_HOME/gate.log: the host shows the client's
// stderr, which carries only the decision.
func (c *client) log(format string, args ...any) {
	if c.home == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(c.home, resident.LogName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s joule-hook[%d]: %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), fmt.Sprintf(format, args...))
	f.Close()
}
