// Package resident is what the thin hook client (cmd/joule-hook) and the
// resident gate (plugins/hook/server, joule gate serve) share: where the
// gate's socket lives, the checks that it is the user's own, and the
// framing of one request and its answer. It imports only the standard
// library (and core/home, which does too), so the client that links it
// starts as fast as the smallest Go program.
package resident

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/joulehook/joule/core/home"
)

// MaxPayload bounds the payload a client forwards: the gate's own limit
// (hook.MaxPayload) plus the one byte that lets the adapter refuse, sealed,
// a payload that is too large. A test keeps it equal to hook.MaxPayload+1.
const MaxPayload = 16<<20 + 1

// maxField bounds every other field of a frame.
const maxField = 64 << 10

// maxOutput bounds an answer's stdout and stderr.
const maxOutput = 4 << 20

// Socket and lock names inside the gate's directory.
const (
	SocketName = "gate.sock"
	LockName   = "gate.lock"
	LogName    = "gate.log"
)

// Home is $JOULE_HOME resolved as joule resolves it (core/home).
func Home() (string, error) { return home.Dir() }

// Dir is the directory of the resident gate for home: home/gate when the
// socket's path fits a Unix socket address, else a directory keyed by home
// under $XDG_RUNTIME_DIR (or the temporary directory, named by uid).
func Dir(home string) string {
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	d := filepath.Join(home, "gate")
	if len(d)+1+len(SocketName) < 100 {
		return d
	}
	h := fnv.New64a()
	h.Write([]byte(home))
	key := strconv.FormatUint(h.Sum64(), 36)
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && len(x) < 60 {
		return filepath.Join(x, "joule-"+key)
	}
	return filepath.Join(os.TempDir(), "joule-"+strconv.Itoa(os.Geteuid())+"-"+key)
}

// ErrUnsafe is a gate directory or socket someone other than the user could
// have made or could enter: it is never used.
var ErrUnsafe = errors.New("unsafe gate directory or socket")

// CheckDir checks that dir is a real directory (no symlink), owned by the
// effective user, that nobody else may enter or write (no group or other
// permission bits).
func CheckDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafe, dir)
	}
	return checkOwner(dir, st, 0o077)
}

// CheckSocket checks that path is a socket owned by the effective user with
// no group or other permission bits.
func CheckSocket(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%w: %s is not a socket", ErrUnsafe, path)
	}
	return checkOwner(path, st, 0o077)
}

func checkOwner(path string, st os.FileInfo, forbidden os.FileMode) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: cannot read the owner of %s", ErrUnsafe, path)
	}
	if int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to uid %d, not to you (uid %d)", ErrUnsafe, path, sys.Uid, os.Geteuid())
	}
	if st.Mode().Perm()&forbidden != 0 {
		return fmt.Errorf("%w: %s has mode %04o; want no group or other access (chmod go-rwx %s)", ErrUnsafe, path, st.Mode().Perm(), path)
	}
	return nil
}

// Operations a request asks for.
const (
	OpHook   = "hook"   // decide Payload for Host
	OpStatus = "status" // describe the gate
	OpStop   = "stop"   // exit after answering
)

// Containment modes a hook line carries as a flag (joule-hook HOST
// --contain, joule hook HOST --no-contain) and a request forwards: the
// gate rewrites the shell commands it allows to run under joule-exec
// (ModeContain), or says in each receipt that the install opted out
// (ModeNoContain). "" is a line with neither flag.
const (
	ModeContain   = "contain"
	ModeNoContain = "no-contain"
)

// ModeOf is the mode of a hook line's flag (--contain, --no-contain);
// false for anything else.
func ModeOf(flag string) (string, bool) {
	switch flag {
	case "--" + ModeContain:
		return ModeContain, true
	case "--" + ModeNoContain:
		return ModeNoContain, true
	}
	return "", false
}

// ExecEnv are the variables that change what a contained command gets
// (sandbox.LandlockOnlyEnv; joule exec's simulation of a kernel without
// Landlock), and so what a contained decision's receipt says: a gate
// whose own differ from the client's answers Mismatch. A test keeps them
// equal to the names joule and joule-exec read.
var ExecEnv = []string{"JOULE_EXEC_LANDLOCK_ONLY", "JOULE_EXEC_SIMULATE_NO_LANDLOCK"}

// ExecEnvOf is the values of ExecEnv in one string, as getenv has them.
func ExecEnvOf(getenv func(string) string) string {
	var b []byte
	for _, k := range ExecEnv {
		b = append(b, getenv(k)...)
		b = append(b, 0)
	}
	return string(b)
}

// Request is one frame from client to gate. The identity fields say which
// store and configuration the client's environment selects; a gate whose
// own differ answers Mismatch instead of deciding.
type Request struct {
	Op       string
	Host     string
	Contain  string // the hook line's containment mode (ModeContain, ModeNoContain or "")
	Cwd      string // the hook's working directory (hosts that send none)
	Home     string // $JOULE_HOME as resolved by the client
	UserHome string // $HOME: the gate protects paths under it
	Store    string // $JOULE_STORE
	StoreSet bool   // whether $JOULE_STORE is set at all
	Joule    string // the joule binary the client would fall back to ("" unknown)
	ExecEnv  string // ExecEnvOf the client's environment
	Payload  []byte
}

// Kinds of answer.
const (
	Answer   byte = 'A' // Stdout, Stderr and Exit are the decision
	Stale    byte = 'S' // the gate's binary or configuration changed: it is exiting; start a new one
	Mismatch byte = 'M' // the client selects another store or configuration: decide elsewhere
)

// Response is one frame from gate to client.
type Response struct {
	Kind   byte
	Exit   int
	Stdout []byte
	Stderr []byte
}

var (
	// The request's magic names its fields: a gate or client of another
	// version refuses the frame (the client then decides in-process).
	reqMagic  = []byte("JHQ2")
	respMagic = []byte("JHA1")
)

func putField(w *bufio.Writer, b []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	w.Write(n[:])
	w.Write(b)
}

func getField(r io.Reader, limit int, name string) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	l := binary.BigEndian.Uint32(n[:])
	if int64(l) > int64(limit) {
		return nil, fmt.Errorf("%s is %d bytes, above the limit of %d", name, l, limit)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return b, nil
}

// WriteRequest frames q onto w.
func WriteRequest(w io.Writer, q *Request) error {
	bw := bufio.NewWriterSize(w, 8<<10)
	bw.Write(reqMagic)
	set := "0"
	if q.StoreSet {
		set = "1"
	}
	for _, f := range []string{q.Op, q.Host, q.Contain, q.Cwd, q.Home, q.UserHome, set, q.Store, q.Joule, q.ExecEnv} {
		putField(bw, []byte(f))
	}
	putField(bw, q.Payload)
	return bw.Flush()
}

// ReadRequest reads one request frame.
func ReadRequest(r io.Reader) (*Request, error) {
	var m [4]byte
	if _, err := io.ReadFull(r, m[:]); err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	if string(m[:]) != string(reqMagic) {
		return nil, errors.New("not a joule-hook request (bad magic)")
	}
	var fs [10]string
	names := [10]string{"op", "host", "contain", "cwd", "home", "user home", "store flag", "store", "joule", "exec env"}
	for i := range fs {
		b, err := getField(r, maxField, names[i])
		if err != nil {
			return nil, err
		}
		fs[i] = string(b)
	}
	p, err := getField(r, MaxPayload, "payload")
	if err != nil {
		return nil, err
	}
	return &Request{Op: fs[0], Host: fs[1], Contain: fs[2], Cwd: fs[3], Home: fs[4], UserHome: fs[5], StoreSet: fs[6] == "1", Store: fs[7], Joule: fs[8], ExecEnv: fs[9], Payload: p}, nil
}

// WriteResponse frames a onto w.
func WriteResponse(w io.Writer, a *Response) error {
	bw := bufio.NewWriterSize(w, 8<<10)
	bw.Write(respMagic)
	bw.WriteByte(a.Kind)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(int32(a.Exit)))
	bw.Write(n[:])
	putField(bw, a.Stdout)
	putField(bw, a.Stderr)
	return bw.Flush()
}

// ReadResponse reads one answer frame.
func ReadResponse(r io.Reader) (*Response, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("reading the gate's answer: %w", err)
	}
	if string(h[:4]) != string(respMagic) {
		return nil, errors.New("not a joule gate answer (bad magic)")
	}
	a := &Response{Kind: h[4], Exit: int(int32(binary.BigEndian.Uint32(h[5:9])))}
	switch a.Kind {
	case Answer, Stale, Mismatch:
	default:
		return nil, fmt.Errorf("unknown answer kind %q", a.Kind)
	}
	var err error
	if a.Stdout, err = getField(r, maxOutput, "stdout"); err != nil {
		return nil, err
	}
	if a.Stderr, err = getField(r, maxOutput, "stderr"); err != nil {
		return nil, err
	}
	return a, nil
}

// Ask sends q to the gate in dir and reads its answer by the deadline,
// refusing a directory, socket or peer that is not the user's own
// (ErrUnsafe).
func Ask(dir string, q *Request, by time.Time) (*Response, error) {
	conn, err := Dial(dir, by)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return Exchange(conn, q, by)
}

// Dial connects to the gate in dir, refusing a directory, socket or peer
// that is not the user's own (ErrUnsafe). A client dials before it reads
// its payload: when no gate answers it can hand its standard input,
// unread, to joule hook.
func Dial(dir string, by time.Time) (*Conn, error) {
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, SocketName)
	if err := CheckSocket(sock); err != nil {
		return nil, err
	}
	c, err := dialUnix(sock, by)
	if err != nil {
		return nil, err
	}
	if err := CheckPeer(c.fd); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Exchange sends q on a connection Dial made and reads the gate's answer
// by the deadline.
func Exchange(c *Conn, q *Request, by time.Time) (*Response, error) {
	if err := c.SetDeadline(by); err != nil {
		return nil, err
	}
	if err := WriteRequest(c, q); err != nil {
		return nil, err
	}
	// One read takes the whole answer of a decision.
	return ReadResponse(bufio.NewReaderSize(c, 16<<10))
}
