// Package server is the resident gate of one $JOULE_HOME (joule gate
// serve): the long-lived process that the thin hook client (cmd/joule-hook)
// asks over a Unix socket instead of starting joule for every tool call.
//
// A gate holds the home's gate lock from before it opens the store until it
// exits, so exactly one serves a home. It listens in a directory only the
// user may enter, refuses a peer of another uid, and decides each request
// (the frames of plugins/hook/resident) with the same adapters and gate as
// joule hook, sealing before it answers. It answers Mismatch to a client
// whose environment selects another home, store or binary, and Stale, then
// exits, once its own binary or the configuration it read at start has
// changed. It exits by itself after an idle time without a request, and on
// a stop request.
//
// The store and gate it serves are opened by the caller (New, then Serve
// with an Open func), so this package knows nothing of how $JOULE_HOME is
// configured; the client side of status and stop is Ask, Describe and Stop.
package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/joulehook/joule/core/gate"
	joulehome "github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/resident"
)

// DefaultIdle is how long a gate waits for a request before it exits by
// itself.
const DefaultIdle = 15 * time.Minute

// Config is what a gate serves and how. Home and Adapter are required;
// every other zero value works. Ask, Describe and Stop, the client side,
// read only Home, UserHome, Store and StoreSet.
type Config struct {
	// Home is the $JOULE_HOME the gate serves (made absolute by New).
	Home string
	// UserHome, Store and StoreSet are $HOME and $JOULE_STORE as the
	// gate's environment has them. A request whose own differ is answered
	// Mismatch: the gate protects paths under $HOME, and its store is the
	// one $JOULE_STORE selected.
	UserHome string
	Store    string
	StoreSet bool
	// Watch names the files, relative to Home, that the gate read once at
	// start and a decision depends on: when one changes, it is stale.
	Watch []string
	// Adapter is the hook adapter for host with the hook's working
	// directory cwd; false for a host it does not know.
	Adapter func(host, cwd string) (hook.Adapter, bool)
	// Contain is the containment a request in mode (resident.ModeContain,
	// resident.ModeNoContain) for host decides with, as joule hook HOST
	// --contain or --no-contain would. A *ModeError is that command's
	// usage error (a host that cannot rewrite); any other error is the
	// host's deny. nil serves only requests of no mode.
	Contain func(host, mode string) (*gate.Containment, error)
	// ExecEnv is resident.ExecEnvOf the gate's environment: a hook request
	// whose own differs is answered Mismatch, since what a contained
	// command gets, and its receipt says, depends on it.
	ExecEnv string
	// Hosts lists the known hosts, for the answer to an unknown one.
	Hosts string
	// Version is what a status request reports as the gate's version.
	Version string
	// Idle is how long the gate waits for a request before it exits
	// (DefaultIdle when zero).
	Idle time.Duration
	// Log gets a line when the gate starts and when it stops, and one for
	// each client it refuses (os.Stderr when nil).
	Log io.Writer
	// Ready, when set, is called once the gate listens.
	Ready func()
	// System, when set, makes this the machine's system gate (joule gate
	// serve --system): see SystemMode.
	System *SystemMode
}

// SystemMode is what a system gate does differently: it listens in a
// socket directory of the install's making that only the system user may
// add entries to, with a socket any local user may connect to; it decides
// each person's requests with their own home (the peer's uid, not what
// the request says), never goes idle, and runs the admin requests of
// root and of members of the admin group (resident.OpAdmin).
type SystemMode struct {
	// Dir is the socket directory (home.System.Run).
	Dir string
	// AdminGID is the admin group: root and the processes that have it
	// among their groups (SO_PEERGROUPS) are administrators.
	AdminGID int
	// For is the gate that decides a peer's hooks: base (what Serve's
	// open returned) with the home of the peer's uid. Its result is kept
	// for a minute.
	For func(base *gate.Gate, uid int) (*PeerGate, error)
	// Admin answers an admin request: args as the CLI sent them, relative
	// to cwd, from peer, who is an administrator when admin is set.
	Admin func(ctx context.Context, args []string, cwd string, peer resident.Peer, admin bool) *resident.Response
}

// PeerGate decides one person's hooks on a system gate.
type PeerGate struct {
	Gate *gate.Gate
	// Contain is Config.Contain for this person (their layers, the
	// system's policies).
	Contain func(host, mode string) (*gate.Containment, error)
}

// peerGateTTL is how long a system gate keeps a person's gate: a change of
// their home in the password database is seen after it.
const peerGateTTL = time.Minute

type peerGateEntry struct {
	pg  *PeerGate
	err error
	at  time.Time
}

// Gate is one resident gate. New makes one that does not serve yet; Serve
// serves until it stops.
type Gate struct {
	cfg      Config
	dir      string
	sock     string
	self     string
	selfStat fileID
	started  time.Time
	conf     *watch

	g    *gate.Gate
	ln   *net.UnixListener
	lock *os.File

	peers sync.Map // uid → peerGateEntry (system mode)

	last     atomic.Int64 // unix nanoseconds of the last request
	inflight sync.WaitGroup
	active   atomic.Int64
	stopOnce sync.Once
	stale    atomic.Bool   // it stopped because its binary or configuration changed
	stopped  chan string   // why the gate stopped, sent once
	quit     chan struct{} // closed when it stopped
}

// New is a gate for cfg.Home that does not serve yet: what it is started
// from (this process's binary and cfg.Watch as they are now). Call it
// before the store and configuration are opened, so that a change after
// that is seen as one.
func New(cfg Config) (*Gate, error) {
	if cfg.Home == "" || cfg.Adapter == nil {
		return nil, errors.New("resident gate: want a home and an adapter")
	}
	if abs, err := filepath.Abs(cfg.Home); err == nil {
		cfg.Home = abs
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	self, err := executable()
	if err != nil {
		return nil, err
	}
	selfStat, err := statID(self)
	if err != nil {
		return nil, err
	}
	dir := resident.Dir(cfg.Home)
	if cfg.System != nil {
		dir = cfg.System.Dir
	}
	return &Gate{cfg: cfg, dir: dir, sock: filepath.Join(dir, resident.SocketName),
		self: self, selfStat: selfStat, started: time.Now(), conf: newWatch(cfg.Home, cfg.Watch),
		stopped: make(chan string, 1), quit: make(chan struct{})}, nil
}

// executable is this process's binary, symlinks resolved.
func executable() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	return self, nil
}

// Claim takes the gate lock if it is free, and otherwise leaves Serve to
// wait for it. joule hook --then-serve claims it before it decides, so that
// from its start to its exit, as for joule gate serve, the lock shows a
// process that may serve: joule gate stop waits for it, and nothing of it
// is left writing into $JOULE_HOME after stop returns.
func (r *Gate) Claim() {
	lock, err := r.openLock()
	if err != nil {
		return // Serve reports why
	}
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		lock.Close()
		return
	}
	r.lock = lock
}

// Serve takes the gate lock (unless Claim did), calls open for the gate
// to decide with, listens and answers until the gate stops, logging why.
// It returns nil at once, without calling open, when another gate serves
// the home. The store open returns is left open on every return, as a
// one-shot hook leaves it: closing the last connection would checkpoint
// the write-ahead log and delete it, only for the next process to create
// it again.
func (r *Gate) Serve(ctx context.Context, open func() (*gate.Gate, error)) error {
	ok, err := r.takeLock()
	if !ok || err != nil {
		return err
	}
	g, err := open()
	if err == nil && (g == nil || g.Store == nil) {
		err = errors.New("resident gate: no gate or store to serve with")
	}
	if err == nil {
		err = r.listen(g)
	}
	if err != nil {
		r.unlock()
		return err
	}
	if r.cfg.Ready != nil {
		r.cfg.Ready()
	}
	fmt.Fprintf(r.cfg.Log, "%s joule gate[%d]: serving %s on %s (idle exit after %s)\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), r.cfg.Home, r.sock, r.cfg.Idle)
	why := r.serve(ctx)
	fmt.Fprintf(r.cfg.Log, "%s joule gate[%d]: exiting: %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), why)
	return nil
}

// Detach makes this process a daemon before it serves: a session of its
// own, no hold on the working directory (a gate decides with each
// request's own cwd) and none on its standard input. joule hook
// --then-serve, started by a host, detaches once it has answered.
func Detach() {
	syscall.Setsid()
	os.Chdir("/")
	if null, err := os.Open(os.DevNull); err == nil {
		unix.Dup2(int(null.Fd()), 0)
		null.Close()
	}
}

// takeLock takes the gate lock of r's home, unless Claim did; ok is false
// when another gate serves it.
//
// Exactly one gate per home: the one holding the lock, until it exits. A
// gate that finds it held waits for the holder either to listen (then it
// leaves the socket to it) or to exit (a stale gate handing over).
func (r *Gate) takeLock() (ok bool, err error) {
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
		if waited > lockWait {
			lock.Close()
			return false, errors.New("another joule gate holds " + filepath.Join(r.dir, resident.LockName) + " but does not answer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.lock = lock
	return true, nil
}

// lockWait bounds how long a gate waits for the holder of the lock to
// listen or exit.
var lockWait = 10 * time.Second

// openLock opens the gate lock file, in the gate directory it creates
// (0700) and checks is the user's own.
func (r *Gate) openLock() (*os.File, error) {
	if r.cfg.System != nil {
		// The install made it; only this user may add entries to it.
		if err := joulehome.TrustedPath(r.dir, os.Geteuid()); err != nil {
			return nil, fmt.Errorf("system gate directory: %w", err)
		}
		return os.OpenFile(filepath.Join(r.dir, resident.LockName), os.O_RDWR|os.O_CREATE, 0o600)
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, fmt.Errorf("gate directory: %w", err)
	}
	if err := resident.CheckDir(r.dir); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(r.dir, resident.LockName), os.O_RDWR|os.O_CREATE, 0o600)
}

// listen makes r, holding the lock, answer on its socket with g.
func (r *Gate) listen(g *gate.Gate) error {
	// A gate answers once the receipt is durable in the store; the
	// witness's checkpoint follows from a goroutine (store.Witness's
	// Deferred), and FlushWitness, on exit, waits for it.
	if w := g.Store.Witness(); w != nil {
		w.Deferred = true
	}
	r.g = g
	// The lock is ours: any socket file left is a dead gate's.
	os.Remove(r.sock)
	old := syscall.Umask(0o077)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: r.sock, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if r.cfg.System != nil {
		// Every local user's hooks connect; the gate tells them apart by
		// their credentials.
		mode = 0o666
	}
	if err := os.Chmod(r.sock, mode); err != nil {
		ln.Close()
		return err
	}
	r.ln = ln
	r.last.Store(time.Now().UnixNano())
	go r.idleWatch()
	return nil
}

// serve answers until the gate stops, and says why it stopped.
func (r *Gate) serve(ctx context.Context) string {
	go func() {
		select {
		case <-ctx.Done():
			r.stop("interrupted")
		case <-r.quit:
		}
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
	// The store is left open (see Serve). Only the witness must be
	// written first.
	r.g.Store.FlushWitness()
	r.unlock()
	return why
}

// unlock lets go of the gate lock: another gate may serve the home.
func (r *Gate) unlock() {
	r.lock.Close()
	r.lock = nil
}

// stop closes the listener (which removes the socket), so a new gate may
// take over as soon as the requests in flight are answered.
func (r *Gate) stop(why string) {
	r.stopOnce.Do(func() {
		r.stopped <- why
		close(r.quit)
		r.ln.Close()
	})
}

func (r *Gate) idleWatch() {
	idle := r.cfg.Idle
	tick := time.NewTicker(min(max(idle/10, 10*time.Millisecond), 5*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-r.quit:
			return
		}
		if r.cfg.System == nil && r.active.Load() == 0 && time.Since(time.Unix(0, r.last.Load())) >= idle {
			r.stop(fmt.Sprintf("idle for %s", idle))
			return
		}
		if why := r.changed(); why != "" {
			r.stale.Store(true)
			r.stop(why)
			return
		}
	}
}

// Stale reports, once Serve has returned, that the gate stopped because
// its binary or the configuration it read at start changed: a system gate
// then starts again (joule gate serve --system re-executes itself).
func (r *Gate) Stale() bool { return r.stale.Load() }

// changed says what makes this gate stale: its binary replaced, or the
// configuration it read at start changed.
func (r *Gate) changed() string {
	if id, err := statID(r.self); err != nil || id != r.selfStat {
		return "its binary " + r.self + " changed"
	}
	if r.conf.changed() {
		return "the configuration in " + r.cfg.Home + " changed"
	}
	return ""
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

// handle answers one connection. A client it refuses, or whose request it
// cannot read, gets no answer: the connection closes, and the client
// decides in-process (joule hook), in its host's own format, which no
// answer from here could give without knowing the host.
func (r *Gate) handle(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	var peer resident.Peer
	if r.cfg.System != nil {
		var err error
		if peer, err = peerOf(c); err != nil {
			fmt.Fprintf(r.cfg.Log, "joule gate[%d]: refused a client: %v\n", os.Getpid(), err)
			return
		}
	} else if err := checkPeer(c); err != nil {
		fmt.Fprintf(r.cfg.Log, "joule gate[%d]: refused a client: %v\n", os.Getpid(), err)
		return
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	// One read takes a whole request (the client writes it in one), not
	// two system calls for each of its fields.
	q, err := resident.ReadRequest(bufio.NewReaderSize(c, 16<<10))
	if err != nil {
		fmt.Fprintf(r.cfg.Log, "joule gate[%d]: bad request: %v\n", os.Getpid(), err)
		return
	}
	if r.cfg.System != nil {
		resident.WriteResponse(c, r.answerSystem(ctx, q, peer))
		return
	}
	resident.WriteResponse(c, r.answer(ctx, q))
}

// peerOf reads the credentials of the client on c.
func peerOf(c *net.UnixConn) (resident.Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return resident.Peer{}, err
	}
	var p resident.Peer
	var perr error
	if err := raw.Control(func(fd uintptr) { p, perr = resident.PeerOf(int(fd)) }); err != nil {
		return p, err
	}
	return p, perr
}

// answer decides q, or says why this gate must not.
func (r *Gate) answer(ctx context.Context, q *resident.Request) *resident.Response {
	if why := r.changed(); why != "" {
		r.stale.Store(true)
		r.stop(why)
		return &resident.Response{Kind: resident.Stale}
	}
	home := q.Home
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	if home != r.cfg.Home || q.StoreSet != r.cfg.StoreSet || q.Store != r.cfg.Store || q.UserHome != r.cfg.UserHome {
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
		return &resident.Response{Kind: resident.Answer, Stdout: fmt.Appendf(nil, "stopped the joule gate (pid %d) on %s\n", os.Getpid(), r.sock)}
	case resident.OpHook:
	default:
		return &resident.Response{Kind: resident.Answer, Exit: 2, Stderr: fmt.Appendf(nil, "joule gate: unknown request %q\n", q.Op)}
	}
	if q.ExecEnv != r.cfg.ExecEnv {
		return &resident.Response{Kind: resident.Mismatch}
	}
	a, ok := r.cfg.Adapter(q.Host, q.Cwd)
	if !ok {
		return &resident.Response{Kind: resident.Answer, Exit: 2,
			Stderr: fmt.Appendf(nil, "joule: hook: unknown host %q (hosts: %s)\n", q.Host, r.cfg.Hosts)}
	}
	return r.decideHook(ctx, q, a, r.g, r.cfg.Contain)
}

// decideHook decides q's payload for its host's adapter a with g, in q's
// containment mode (contain builds it).
func (r *Gate) decideHook(ctx context.Context, q *resident.Request, a hook.Adapter, g *gate.Gate, contain func(host, mode string) (*gate.Containment, error)) *resident.Response {
	var d hook.Decider = g
	if q.Contain != "" {
		if contain == nil {
			return &resident.Response{Kind: resident.Mismatch}
		}
		c, err := contain(q.Host, q.Contain)
		var bad *ModeError
		switch {
		case errors.As(err, &bad):
			return &resident.Response{Kind: resident.Answer, Exit: 2, Stderr: fmt.Appendf(nil, "joule: %s\n", bad.Text)}
		case err != nil:
			out := hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, err.Error()))
			return &resident.Response{Kind: resident.Answer, Exit: out.Exit, Stdout: out.Stdout, Stderr: []byte(out.Stderr)}
		}
		d = gate.Contained{Gate: g, C: c}
	}
	out := decide(ctx, a, d, q.Payload)
	return &resident.Response{Kind: resident.Answer, Exit: out.Exit, Stdout: out.Stdout, Stderr: []byte(out.Stderr)}
}

// ModeError is a request's containment mode that its host cannot have:
// Text is the usage error joule hook prints for it.
type ModeError struct{ Text string }

func (e *ModeError) Error() string { return e.Text }

// decide is hook.Run behind the same recover as joule hook.
func decide(ctx context.Context, a hook.Adapter, d hook.Decider, payload []byte) (out hook.Output) {
	defer func() {
		if p := recover(); p != nil {
			out = hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, fmt.Sprintf("internal error: %v", p)))
		}
	}()
	return hook.Run(ctx, a, d, payload)
}

func (r *Gate) status() string {
	return fmt.Sprintf("pid      %d\nversion  %s\nbinary   %s\nsocket   %s\nhome     %s\nuptime   %s\n",
		os.Getpid(), r.cfg.Version, r.self, r.sock, r.cfg.Home, time.Since(r.started).Round(time.Second))
}
