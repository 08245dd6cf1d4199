//go:build unix

package resident

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/joulehook/joule/core/home"
)

// The codes of the denies the thin client gives on its own in system mode,
// without a gate's sealed decision.
const (
	// CodeGateUntrusted: the socket, its directory or the process behind
	// it is not the system user's (an impostor, or a machine set up
	// wrongly). Nothing is sent to it.
	CodeGateUntrusted = "gate-untrusted"
	// CodeNoSystemGate: the system gate does not answer (not running,
	// restarting for longer than the wait, or the configuration is
	// unreadable).
	CodeNoSystemGate = "no-system-gate"
)

// ErrImpostor is a system gate socket, directory or peer that is not the
// system user's: never used.
var ErrImpostor = errors.New("not the system gate")

// OpAdmin asks a system gate to run a joule command (grant …) as the
// system user on the peer's behalf: Payload carries its arguments,
// NUL-separated, and Cwd the directory they are relative to. The gate
// runs the ones that change trust state only for root or a member of the
// admin group, by the peer's credentials.
const OpAdmin = "admin"

// DialSystem connects to the system gate of sys by the deadline. It
// refuses (ErrImpostor) a socket directory that anyone but root and the
// system user could have changed (home.TrustedPath: a symbolic link on the
// way, a directory others may write), a socket the system user does not
// own, and, on the connection itself, a peer the kernel says runs as any
// other uid (SO_PEERCRED). A socket that is missing or refuses the
// connection is retried until wait has passed, so that a gate restarting
// (its binary upgraded) is waited for, not mistaken for none.
func DialSystem(sys *home.System, by time.Time, wait time.Duration) (*Conn, error) {
	sock := sys.Socket()
	until := time.Now().Add(wait)
	for {
		c, err := dialSystemOnce(sys, sock, by)
		if err == nil || errors.Is(err, ErrImpostor) || !gone(err) || !time.Now().Before(until) || !time.Now().Before(by) {
			return c, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gone reports an error that says no gate listens (yet).
func gone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}

func dialSystemOnce(sys *home.System, sock string, by time.Time) (*Conn, error) {
	if err := home.TrustedPath(sys.Run, sys.UID); err != nil {
		if errors.Is(err, home.ErrUntrusted) {
			return nil, fmt.Errorf("%w: %v", ErrImpostor, err)
		}
		return nil, err
	}
	st, err := os.Lstat(sock)
	if err != nil {
		return nil, err
	}
	if st.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%w: %s is not a socket", ErrImpostor, sock)
	}
	if owner := st.Sys().(*syscall.Stat_t).Uid; int(owner) != sys.UID {
		return nil, fmt.Errorf("%w: %s belongs to uid %d, not to the system user %s (uid %d)", ErrImpostor, sock, owner, sys.User, sys.UID)
	}
	c, err := dialUnix(sock, by)
	if err != nil {
		return nil, err
	}
	p, err := PeerOf(c.fd)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %v", ErrImpostor, err)
	}
	if p.UID != sys.UID {
		c.Close()
		return nil, fmt.Errorf("%w: the process on %s (pid %d) runs as uid %d, not as the system user %s (uid %d)", ErrImpostor, sock, p.PID, p.UID, sys.User, sys.UID)
	}
	return c, nil
}

// AskSystem sends q to the system gate of sys and reads its answer by the
// deadline (DialSystem's checks, then Exchange).
func AskSystem(sys *home.System, q *Request, by time.Time, wait time.Duration) (*Response, error) {
	c, err := DialSystem(sys, by, wait)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return Exchange(c, q, by)
}
