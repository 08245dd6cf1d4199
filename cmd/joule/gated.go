package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/resident"
	"github.com/joulehook/joule/plugins/hosts"
)

// DefaultGateIdle is how long a resident gate waits for a request before
// it exits by itself ($JOULE_GATE_IDLE or --idle change it).
const DefaultGateIdle = 15 * time.Minute

// runGateServe is `joule gate serve`: the resident gate of $JOULE_HOME on
// its Unix socket. cmd/joule-hook starts it; a user rarely needs to.
func runGateServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "gate serve", `gate serve [--idle 15m]

Runs the resident gate of $JOULE_HOME: it answers joule-hook clients on a
Unix socket in a directory only you can enter (`+"`joule gate status`"+` prints
it), deciding each host payload exactly as 'joule hook HOST' does and
sealing before it answers. It exits after --idle without a request, when
its binary or $JOULE_HOME's configuration changes, and on 'joule gate stop'.
joule-hook starts it when none answers; there is no need to run it by hand.`)
	idle := fs.Duration("idle", gateIdle(), "exit after this long without a request (default $JOULE_GATE_IDLE, else 15m)")
	readyFD := fs.Int("ready-fd", 0, "write one byte to this file descriptor once listening (joule-hook's start signal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *idle <= 0 {
		return usagef("gate serve: --idle must be positive")
	}
	var ready *os.File
	if *readyFD > 2 {
		ready = os.NewFile(uintptr(*readyFD), "ready")
		defer ready.Close()
	}
	g, err := newResidentGate(*idle)
	if err != nil {
		return err
	}
	if g == nil { // another gate serves this home
		return nil
	}
	if ready != nil {
		ready.Write([]byte{1})
		ready.Close()
	}
	g.run(ctx, e.stderr, *idle)
	return nil
}

func gateIdle() time.Duration {
	if v := os.Getenv("JOULE_GATE_IDLE"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return DefaultGateIdle
}

// residentGate is one running gate: its endpoint, its socket and what it
// was started from, checked again on every request.
type residentGate struct {
	home, dir, sock string
	userHome        string
	store           string
	storeSet        bool
	self            string
	selfStat        fileID
	confHash        [32]byte
	started         time.Time

	// conf remembers the configuration files as last hashed, so that a
	// request stats them instead of reading and hashing them.
	confMu      sync.Mutex
	confIDs     [len(confFiles)]fileID
	confTrusted bool

	ep   *endpoint
	g    *gate.Gate
	ln   *net.UnixListener
	lock *os.File

	last     atomic.Int64 // unix nanoseconds of the last request
	inflight sync.WaitGroup
	active   atomic.Int64
	stopOnce sync.Once
	stopped  chan string
}

type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func statID(p string) (fileID, error) {
	st, err := os.Stat(p)
	if err != nil {
		return fileID{}, err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	id := fileID{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys != nil {
		id.dev, id.ino = uint64(sys.Dev), uint64(sys.Ino)
		id.ctime = time.Unix(sys.Ctim.Unix()).UnixNano()
	}
	return id, nil
}

// confFiles are what a gate reads once at start and a decision depends
// on: config.json, the trusted issuers and the endpoint's public key.
var confFiles = [...]string{ConfigFile, IssuersFile, identity.PubKeyFile}

// confHash digests confFiles.
func confHash(home string) [32]byte {
	h := sha256.New()
	for _, f := range confFiles {
		b, err := os.ReadFile(filepath.Join(home, f))
		fmt.Fprintf(h, "%s %d %v\n", f, len(b), err != nil)
		h.Write(b)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// newResidentGate opens $JOULE_HOME, takes the gate lock and listens. It
// returns nil, nil when another gate already serves this home.
func newResidentGate(idle time.Duration) (*residentGate, error) {
	r, err := newGateOrigin()
	if err != nil {
		return nil, err
	}
	if ok, err := r.takeLock(); !ok || err != nil {
		return nil, err
	}
	ep, err := openEndpoint()
	if err != nil {
		r.lock.Close()
		return nil, err
	}
	g, err := ep.gate()
	if err == nil {
		err = r.listen(ep, g, idle)
	}
	if err != nil {
		ep.Close()
		r.lock.Close()
		return nil, err
	}
	return r, nil
}

// newGateOrigin is a gate that does not serve yet: what it is started from
// (its binary, $JOULE_HOME and the configuration there), taken before the
// store and configuration are opened, so that a change after this is
// seen as one.
func newGateOrigin() (*residentGate, error) {
	home, err := identity.Home()
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	selfStat, err := statID(self)
	if err != nil {
		return nil, err
	}
	r := &residentGate{home: home, dir: resident.Dir(home), self: self, selfStat: selfStat,
		confHash: confHash(home), started: time.Now(), stopped: make(chan string, 1)}
	r.userHome, _ = os.UserHomeDir()
	r.store, r.storeSet = os.LookupEnv(StoreEnv)
	r.sock = filepath.Join(r.dir, resident.SocketName)
	return r, nil
}

// claimLock takes the gate lock of r's home if it is free, and otherwise
// leaves takeLock to wait for it. joule hook --then-serve claims it before
// it decides, so that from its start to its exit, as for joule gate serve,
// the lock shows a process that may serve: joule gate stop waits for it,
// and nothing of it is left writing into $JOULE_HOME after stop returns.
func (r *residentGate) claimLock() {
	lock, err := r.openLock()
	if err != nil {
		return // takeLock reports why
	}
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		lock.Close()
		return
	}
	r.lock = lock
}

// takeLock takes the gate lock of r's home, unless claimLock did; ok is
// false when another gate serves it.
//
// Exactly one gate per home: the one holding the lock, until it exits. A
// gate that finds it held waits for the holder either to listen (then it
// leaves the socket to it) or to exit (a stale gate handing over).
func (r *residentGate) takeLock() (ok bool, err error) {
	if r.lock != nil {
		return true, nil
	}
	lock, err := r.openLock()
	if err != nil {
		return false, err
	}
	for waited := time.Duration(0); ; waited += 5 * time.Millisecond {
		err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			lock.Close()
			return false, fmt.Errorf("gate lock: %w", err)
		}
		if c, err := net.DialTimeout("unix", r.sock, 50*time.Millisecond); err == nil {
			c.Close()
			lock.Close()
			return false, nil
		}
		if waited > 10*time.Second {
			lock.Close()
			return false, errors.New("another joule gate holds " + filepath.Join(r.dir, resident.LockName) + " but does not answer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.lock = lock
	return true, nil
}

// openLock opens the gate lock file, in the gate directory it creates
// (0700) and checks is the user's own.
func (r *residentGate) openLock() (*os.File, error) {
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, fmt.Errorf("gate directory: %w", err)
	}
	if err := resident.CheckDir(r.dir); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(r.dir, resident.LockName), os.O_RDWR|os.O_CREATE, 0o600)
}

// listen makes r, holding the lock, answer on its socket with ep's
// store and the gate g.
func (r *residentGate) listen(ep *endpoint, g *gate.Gate, idle time.Duration) error {
	// A gate answers once the receipt is durable in the store; the
	// witness's checkpoint follows from a goroutine (store.Witness's
	// Deferred), and Close, on exit, waits for it.
	if w := ep.store.Witness(); w != nil {
		w.Deferred = true
	}
	r.ep, r.g = ep, g
	// The lock is ours: any socket file left is a dead gate's.
	os.Remove(r.sock)
	old := syscall.Umask(0o077)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: r.sock, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return err
	}
	if err := os.Chmod(r.sock, 0o600); err != nil {
		ln.Close()
		return err
	}
	r.ln = ln
	r.last.Store(time.Now().UnixNano())
	go r.idleWatch(idle)
	return nil
}

// run serves until the gate stops, logging when it starts and why it
// stops to log ($JOULE_HOME/gate.log when joule-hook started it).
func (r *residentGate) run(ctx context.Context, log io.Writer, idle time.Duration) {
	fmt.Fprintf(log, "%s joule gate[%d]: serving %s on %s (idle exit after %s)\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), r.home, r.sock, idle)
	why := r.serve(ctx)
	fmt.Fprintf(log, "%s joule gate[%d]: exiting: %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), why)
}

// serveAfterAnswer is joule hook --then-serve once its answer is
// written: this process, its binary initialised and its store open,
// becomes the resident gate of $JOULE_HOME instead of exiting, so a
// first call costs one joule start, not two, and the gate's start does
// not compete with the decision (joule-hook's first call). origin was
// taken before the store was opened. It returns at once when another
// gate serves the home.
func serveAfterAnswer(ctx context.Context, e *env, origin *residentGate, ep *endpoint, g *gate.Gate) error {
	// Detached from the host: its own session (joule-hook forks it into
	// one already), no hold on the workspace as its working directory
	// (it decides with each request's own cwd) or on the host's stdin.
	syscall.Setsid()
	os.Chdir("/")
	if null, err := os.Open(os.DevNull); err == nil {
		unix.Dup2(int(null.Fd()), 0)
		null.Close()
	}
	idle := gateIdle()
	ok, err := origin.takeLock()
	if !ok || err != nil {
		return err
	}
	if err := origin.listen(ep, g, idle); err != nil {
		origin.lock.Close()
		return err
	}
	origin.run(ctx, e.stderr, idle)
	return nil
}

// serve answers until the gate stops, and says why it stopped.
func (r *residentGate) serve(ctx context.Context) string {
	go func() {
		<-ctx.Done()
		r.stop("interrupted")
	}()
	for {
		c, err := r.ln.AcceptUnix()
		if err != nil {
			r.stop("the listener failed: " + err.Error())
			break
		}
		r.inflight.Add(1)
		r.active.Add(1)
		go func() {
			defer r.inflight.Done()
			defer r.active.Add(-1)
			r.handle(ctx, c)
			r.last.Store(time.Now().UnixNano())
		}()
	}
	why := <-r.stopped
	r.inflight.Wait()
	// The store is left open, as a one-shot hook leaves it (home.go):
	// closing the last connection would checkpoint the write-ahead log
	// into the database and delete it, and the first call after this
	// gate (joule hook, which the client runs when no gate answers)
	// would create it again. Only the witness must be written first.
	r.ep.store.FlushWitness()
	r.lock.Close()
	return why
}

// stop closes the listener (which removes the socket), so a new gate may
// take over as soon as the requests in flight are answered.
func (r *residentGate) stop(why string) {
	r.stopOnce.Do(func() {
		r.stopped <- why
		r.ln.Close()
	})
}

func (r *residentGate) idleWatch(idle time.Duration) {
	tick := min(max(idle/10, 10*time.Millisecond), 5*time.Second)
	for range time.Tick(tick) {
		if r.active.Load() == 0 && time.Since(time.Unix(0, r.last.Load())) >= idle {
			r.stop(fmt.Sprintf("idle for %s", idle))
			return
		}
		if r.changed() != "" {
			r.stop(r.changed())
			return
		}
	}
}

// changed says what makes this gate stale: its binary replaced, or the
// configuration it read at start changed.
func (r *residentGate) changed() string {
	if id, err := statID(r.self); err != nil || id != r.selfStat {
		return "its binary " + r.self + " changed"
	}
	if r.confChanged() {
		return "the configuration in " + r.home + " changed"
	}
	return ""
}

// confRacy is the margin within which a file's timestamps cannot tell two
// versions apart: the kernel stamps files with a coarse clock (a tick, a
// few milliseconds), so a file written again within it can keep its
// stamps. Its stamps are trusted only once it is older than that.
var confRacy = 2 * time.Second

// confChanged says whether the configuration files differ from what the
// gate hashed at start. It reads and hashes them only when their stamps
// (device, inode, size, mtime, ctime) changed since they were last
// hashed, or when one was modified so recently that its stamps prove
// nothing; otherwise a request costs three stats, not three reads.
func (r *residentGate) confChanged() bool {
	r.confMu.Lock()
	defer r.confMu.Unlock()
	var ids [len(confFiles)]fileID
	for i, f := range confFiles {
		id, err := statID(filepath.Join(r.home, f))
		if err != nil {
			id = fileID{size: -1} // missing or unreadable: hashed as such
		}
		ids[i] = id
	}
	if r.confTrusted && ids == r.confIDs {
		return false
	}
	hashed := time.Now()
	if confHash(r.home) != r.confHash {
		return true
	}
	r.confIDs = ids
	r.confTrusted = true
	for _, id := range ids {
		if id.size >= 0 && (hashed.Sub(time.Unix(0, id.mtime)) < confRacy || hashed.Sub(time.Unix(0, id.ctime)) < confRacy) {
			r.confTrusted = false
		}
	}
	return false
}

// checkPeer refuses a client that is not the effective user
// (resident.CheckPeer on the connection's socket).
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	if err := raw.Control(func(fd uintptr) { perr = resident.CheckPeer(int(fd)) }); err != nil {
		return err
	}
	return perr
}

func (r *residentGate) handle(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	if err := checkPeer(c); err != nil {
		fmt.Fprintf(os.Stderr, "joule gate[%d]: refused a client: %v\n", os.Getpid(), err)
		return
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	// One read takes a whole request (the client writes it in one), not
	// two system calls for each of its fields.
	q, err := resident.ReadRequest(bufio.NewReaderSize(c, 16<<10))
	if err != nil {
		fmt.Fprintf(os.Stderr, "joule gate[%d]: bad request: %v\n", os.Getpid(), err)
		return
	}
	resp := r.answer(ctx, q)
	resident.WriteResponse(c, resp)
}

// answer decides q, or says why this gate must not.
func (r *residentGate) answer(ctx context.Context, q *resident.Request) *resident.Response {
	if why := r.changed(); why != "" {
		r.stop(why)
		return &resident.Response{Kind: resident.Stale}
	}
	home := q.Home
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	if home != r.home || q.StoreSet != r.storeSet || q.Store != r.store || q.UserHome != r.userHome {
		return &resident.Response{Kind: resident.Mismatch}
	}
	if q.Joule != "" && q.Joule != r.self {
		j := q.Joule
		if rj, err := filepath.EvalSymlinks(j); err == nil {
			j = rj
		}
		if j != r.self {
			return &resident.Response{Kind: resident.Mismatch}
		}
	}
	switch q.Op {
	case resident.OpStatus:
		return &resident.Response{Kind: resident.Answer, Stdout: []byte(r.status())}
	case resident.OpStop:
		defer r.stop("stopped by 'joule gate stop'")
		return &resident.Response{Kind: resident.Answer, Stdout: []byte(fmt.Sprintf("stopped the joule gate (pid %d) on %s\n", os.Getpid(), r.sock))}
	case resident.OpHook:
	default:
		return &resident.Response{Kind: resident.Answer, Exit: 2, Stderr: []byte(fmt.Sprintf("joule gate: unknown request %q\n", q.Op))}
	}
	a, ok := residentAdapter(q.Host, q.Cwd)
	if !ok {
		return &resident.Response{Kind: resident.Answer, Exit: 2,
			Stderr: []byte(fmt.Sprintf("joule: hook: unknown host %q (hosts: %s)\n", q.Host, hostNames()))}
	}
	out := hookOnce(ctx, a, r.g, q.Payload)
	return &resident.Response{Kind: resident.Answer, Exit: out.Exit, Stdout: out.Stdout, Stderr: []byte(out.Stderr)}
}

// hookOnce is hook.Run behind the same recover as joule hook.
func hookOnce(ctx context.Context, a hook.Adapter, d hook.Decider, payload []byte) (out hook.Output) {
	defer func() {
		if p := recover(); p != nil {
			out = hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, fmt.Sprintf("internal error: %v", p)))
		}
	}()
	return hook.Run(ctx, a, d, payload)
}

// residentAdapter is the adapter joule hook would use for host in cwd:
// Windsurf's and Antigravity's stand in the hook's own directory for the
// cwd some events lack.
func residentAdapter(host, cwd string) (hook.Adapter, bool) {
	h, ok := hosts.Lookup(host)
	if !ok || h.Adapter == nil {
		return nil, false
	}
	return h.Adapter(cwd), true
}

func (r *residentGate) status() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "pid      %d\nversion  %s\nbinary   %s\nsocket   %s\nhome     %s\nuptime   %s\n",
		os.Getpid(), version(), r.self, r.sock, r.home, time.Since(r.started).Round(time.Second))
	return b.String()
}

// askGate sends op to the gate of $JOULE_HOME as this process's
// environment selects it.
func askGate(op string) (*resident.Response, string, error) {
	home, err := identity.Home()
	if err != nil {
		return nil, "", err
	}
	dir := resident.Dir(home)
	self, _ := os.Executable()
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	store, set := os.LookupEnv(StoreEnv)
	userHome, _ := os.UserHomeDir()
	q := &resident.Request{Op: op, Home: home, UserHome: userHome, Store: store, StoreSet: set, Joule: self}
	resp, err := resident.Ask(dir, q, time.Now().Add(5*time.Second))
	return resp, filepath.Join(dir, resident.SocketName), err
}

// gateState describes the resident gate for doctor and gate status: ok is
// false when none runs (or it is not usable from here).
func gateState() (ok bool, text string) {
	resp, sock, err := askGate(resident.OpStatus)
	switch {
	case errors.Is(err, resident.ErrUnsafe):
		return false, err.Error()
	case err != nil:
		return false, "no resident gate runs (" + sock + "); joule-hook starts one on the first hook call"
	case resp.Kind == resident.Mismatch:
		return false, "the resident gate on " + sock + " serves another binary, store or configuration; hooks from here decide in-process"
	case resp.Kind == resident.Stale:
		return false, "the resident gate on " + sock + " was stale and is exiting; the next hook call starts a new one"
	}
	return true, strings.TrimSpace(string(resp.Stdout))
}

func runGateStatus(e *env, args []string) error {
	fs := newFlags(e, "gate status", "gate status\n\nPrints the resident gate's pid, version, binary, socket, home and uptime; exits 1 when none runs.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	ok, text := gateState()
	fmt.Fprintln(e.stdout, text)
	if !ok {
		return &exitError{1}
	}
	return nil
}

func runGateStop(e *env, args []string) error {
	fs := newFlags(e, "gate stop", "gate stop\n\nStops the resident gate of $JOULE_HOME after the requests in flight, and one still starting, and returns once it has exited; the next hook call starts a new one.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	home, err := identity.Home()
	if err != nil {
		return err
	}
	lock := filepath.Join(resident.Dir(home), resident.LockName)
	// A gate holds its lock from before it opens the store until it
	// exits: one starting does not answer yet, and one told to stop still
	// finishes its requests. Asking until the lock is free is what makes
	// "stopped" mean no gate process is left to touch $JOULE_HOME.
	deadline := time.Now().Add(gateStopWait)
	var said []byte
	for {
		resp, sock, err := askGate(resident.OpStop)
		switch {
		case errors.Is(err, resident.ErrUnsafe):
			return err
		case err == nil && resp.Kind == resident.Answer:
			said = resp.Stdout
		case err == nil && said == nil:
			fmt.Fprintf(e.stdout, "the gate on %s is not this home's or is already exiting\n", sock)
			return nil
		}
		if !lockHeld(lock) {
			if said == nil {
				fmt.Fprintf(e.stdout, "no resident gate runs (%s)\n", sock)
			}
			e.stdout.Write(said)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a joule gate still holds %s after %v: it neither answers nor exits (see %s)", lock, gateStopWait, filepath.Join(home, resident.LogName))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gateStopWait bounds how long gate stop waits for a gate to start, finish
// its requests and exit.
const gateStopWait = 15 * time.Second

// lockHeld reports whether a process holds the gate lock at path.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
