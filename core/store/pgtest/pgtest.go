// Package pgtest runs a throwaway PostgreSQL server for tests: initdb into
// a fresh directory, a server on a unix socket there and on a free loopback
// port (fsync on), and a password role that owns one new database per call
// to NewDatabase. It uses the Debian packages' binaries (PATH or
// /usr/lib/postgresql/*/bin) and, run as root, runs them as the postgres
// user, since initdb refuses root.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Role is the unprivileged role NewDatabase's databases belong to.
const Role = "joule"

// Bin returns the directory holding initdb, pg_ctl and pg_dump: the one on
// PATH, else the newest /usr/lib/postgresql/*/bin.
func Bin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		// Debian links a few of them into /usr/local/bin or /usr/bin;
		// the real directory also holds pg_dump and pg_restore.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "pg_ctl")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin; install them with .ci/setup.d/30-postgres.sh (apt-get install postgresql)")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Require returns Bin's directory, or ends the test without it: a failure
// when CI=true, where the server must be installed, a skip elsewhere.
func Require(t testing.TB) string {
	t.Helper()
	bin, err := Bin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skip(err)
	}
	return bin
}

// Server is a running throwaway server.
type Server struct {
	Bin  string // directory of the server binaries and client tools
	Dir  string // holds data/, the socket and server.log
	Port int

	password string
	cred     *syscall.Credential // nil unless run as root
	mu       sync.Mutex
	dbs      int
}

// Start initializes and starts a server in a new temporary directory.
//
// The server is a daemon: a test binary killed before it calls Stop (a
// go test -timeout panic, say) leaves it running until pg_ctl stop -D
// DIR/data.
func Start(bin string) (*Server, error) {
	// Run as root, the server runs as postgres, which must reach the
	// directory: /tmp is world-searchable where $TMPDIR may not be. The
	// socket's path must also stay under 108 bytes.
	parent := ""
	if os.Geteuid() == 0 {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "joule-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, Dir: dir, password: randomHex(16)}
	if os.Geteuid() == 0 {
		if s.cred, err = unprivileged(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(randomHex(16)+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.cred != nil {
		os.Chown(pwfile, int(s.cred.Uid), int(s.cred.Gid))
	}
	// Local socket connections are trusted (the directory is private to
	// the server's user, and the test's admin connection uses it); TCP
	// needs the role's password, as a real deployment would.
	if out, err := s.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if s.Port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.StartServer(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.admin(ctx, "postgres", fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, Role, s.password)); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// unprivileged is the postgres user's credential, or nobody's.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run initdb as")
}

func (s *Server) run(tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.Bin, tool), args...)
	cmd.Dir = s.Dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
		cmd.Env = append(os.Environ(), "HOME="+s.Dir)
	}
	return cmd.CombinedOutput()
}

// StartServer starts the (stopped) server and waits until it accepts
// connections.
func (s *Server) StartServer() error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c max_connections=300 -c fsync=on -c synchronous_commit=on",
		s.Port, s.Dir)
	out, err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", filepath.Join(s.Dir, "data"),
		"-l", filepath.Join(s.Dir, "server.log"), "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

// StopServer stops the server; mode is pg_ctl's: "fast" disconnects
// clients with an admin-shutdown error, "immediate" is a crash.
func (s *Server) StopServer(mode string) error {
	out, err := s.run("pg_ctl", "stop", "-w", "-t", "60", "-m", mode, "-D", filepath.Join(s.Dir, "data"))
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() error {
	err := s.StopServer("fast")
	if rmErr := os.RemoveAll(s.Dir); err == nil {
		err = rmErr
	}
	return err
}

// admin runs one statement as the superuser over the unix socket.
func (s *Server) admin(ctx context.Context, db, stmt string) error {
	c, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", s.Dir, s.Port, db))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, stmt)
	return err
}

// NewDatabase creates an empty database named after prefix, owned by Role,
// and returns its URL (TCP on loopback, with the role's password).
func (s *Server) NewDatabase(prefix string) (string, error) {
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("%s_%d", sanitize(prefix), s.dbs)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.admin(ctx, "postgres", fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, name, Role)); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// URL is the connection URL of database name as Role.
func (s *Server) URL(name string) string { return s.URLAs(name, Role, s.password) }

// URLAs is the connection URL of database name as role, with its password.
func (s *Server) URLAs(name, role, password string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role, password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), Path: "/" + name, RawQuery: "sslmode=disable"}
	return u.String()
}

// Exec runs one statement as the superuser in database db: roles and
// privileges a test sets up as a database administrator would.
func (s *Server) Exec(ctx context.Context, db, stmt string) error { return s.admin(ctx, db, stmt) }

// Tool returns the path of a client tool such as pg_dump: the one beside
// the server's binaries, else the one on PATH.
func (s *Server) Tool(name string) string {
	p := filepath.Join(s.Bin, name)
	if _, err := os.Stat(p); err != nil {
		if lp, err := exec.LookPath(name); err == nil {
			return lp
		}
	}
	return p
}

func sanitize(prefix string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(prefix) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 || b.String()[0] >= '0' && b.String()[0] <= '9' {
		return "t_" + b.String()
	}
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
