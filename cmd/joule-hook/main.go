//go:build unix

// Command joule-hook is the thin hook client a host spawns for every tool
// call: `joule-hook HOST < payload.json`. It forwards the payload to the
// resident gate of $JOULE_HOME (joule gate serve) over its Unix socket and
// writes back exactly what the gate answers: stdout, stderr, exit status.
// When no gate answers it runs `joule hook HOST` itself, so the host gets
// its decision as fast as without a gate, and then starts a gate for the
// calls after it (detached, in its own session, logging to
// $JOULE_HOME/gate.log). Whatever happens the host gets a decision, and
// on any failure its own explicit deny before the hook's timeout
// ($JOULE_HOOK_TIMEOUT, default 20s; every install writes 30s).
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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/joulehook/joule/plugins/hook/resident"
)

// defaultBudget is how long the client may take in all: below the 30 s
// hook timeout every joule install writes, so the host reads joule's deny,
// never its own timeout (which most hosts treat as allow).
const defaultBudget = 20 * time.Second

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin *os.File, stdout, stderr *os.File) int {
	start := time.Now()
	budget := defaultBudget
	if v := os.Getenv("JOULE_HOOK_TIMEOUT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			budget = d
		}
	}
	deadline := start.Add(budget)
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		fmt.Fprintln(stderr, "usage: joule-hook HOST < payload.json (HOST as in 'joule hook HOST'); every failure is HOST's deny")
		return 2
	}
	host := args[0]
	deny := func(why string) int {
		o, e, code := resident.Deny(host, "joule deny (internal-error): "+why)
		stdout.Write(o)
		stderr.Write(e)
		return code
	}
	joule := findJoule()
	c := &client{host: host, joule: joule, deadline: deadline}
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
	code, err := c.inProcess(stdin, stdout, stderr, deadline.Add(-200*time.Millisecond))
	if c.spawn {
		defer c.start()
	}
	if err != nil {
		return deny("no resident gate answered and '" + joule + " hook " + host + "' failed: " + err.Error())
	}
	return code
}

type client struct {
	host, joule string
	payload     []byte // nil until read: joule hook then reads stdin itself
	deadline    time.Time
	home, dir   string
	spawn       bool // start a gate once this call is answered
}

// viaGate asks the resident gate; ok is false when the caller must decide
// in-process instead (and c.spawn says whether to start a gate after). It
// connects before it reads the payload, so that when no gate listens
// joule hook reads the host's standard input itself; err is set only when
// the payload could not be read.
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
	req := &resident.Request{Op: resident.OpHook, Host: c.host, Cwd: cwd, Home: home, UserHome: userHome,
		Store: store, StoreSet: storeSet, Joule: c.joule, Payload: c.payload}
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

// start launches `joule gate serve` detached, in its own session, after
// this call's answer is written, unless a gate holds the lock (one is
// starting or serving): a first call costs what joule hook costs, and the
// calls after it find the gate.
func (c *client) start() {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return
	}
	if resident.CheckDir(c.dir) != nil {
		return
	}
	if lock, err := os.OpenFile(filepath.Join(c.dir, resident.LockName), os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		held := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
		lock.Close()
		if held {
			return
		}
	}
	logf, err := os.OpenFile(filepath.Join(c.home, resident.LogName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		logf, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return
		}
	}
	defer logf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return
	}
	defer null.Close()
	// The gate outlives this hook: it must not hold the workspace as its
	// working directory (it decides with each request's own cwd). The
	// fork is syscall's own: os/exec would first probe for pidfd support
	// with a fork of its own, and wait for nothing here.
	pid, err := syscall.ForkExec(c.joule, []string{c.joule, "gate", "serve"}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   os.Environ(),
		Files: []uintptr{null.Fd(), logf.Fd(), logf.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		c.log("cannot start %s gate serve: %v", c.joule, err)
		return
	}
	_ = pid // reparented to init when this client exits
}

// inProcess runs `joule hook HOST` with the host's own stdout and stderr,
// on the host's stdin when the payload is still unread, else on the
// payload read: the path that needs no gate. err is set when it did not
// run to an exit status by the deadline (it is killed then).
func (c *client) inProcess(stdin, stdout, stderr *os.File, by time.Time) (code int, err error) {
	if !time.Now().Before(by) {
		// The gate took the budget: a joule hook started now would be
		// killed before it could answer, perhaps halfway through.
		return 0, errors.New("no answer within the hook's time budget")
	}
	in := stdin
	if c.payload != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return 0, err
		}
		defer r.Close()
		go func() {
			w.Write(c.payload)
			w.Close()
		}()
		in = r
	}
	pid, err := syscall.ForkExec(c.joule, []string{c.joule, "hook", c.host}, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{in.Fd(), stdout.Fd(), stderr.Fd()},
	})
	if err != nil {
		return 0, err
	}
	var killed atomic.Bool
	t := time.AfterFunc(time.Until(by), func() {
		killed.Store(true)
		syscall.Kill(pid, syscall.SIGKILL)
	})
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	t.Stop()
	switch {
	case killed.Load():
		return 0, errors.New("no answer within the hook's time budget")
	case err != nil:
		return 0, err
	case ws.Exited():
		return ws.ExitStatus(), nil
	}
	return 0, fmt.Errorf("it ended by %v", ws.Signal())
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
