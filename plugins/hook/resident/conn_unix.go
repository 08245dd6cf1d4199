//go:build unix

package resident

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// ErrTimeout is a connection's deadline passing before the gate answered.
var ErrTimeout = errors.New("the resident gate did not answer in time")

// Conn is a client's connection to the gate: a blocking Unix socket whose
// deadline the kernel keeps (SO_RCVTIMEO, SO_SNDTIMEO). A client on it
// links no net package and starts no poller, so it costs what the
// smallest Go program costs.
type Conn struct {
	fd int
	by time.Time
}

// dialUnix connects to the socket at path by the deadline.
func dialUnix(path string, by time.Time) (*Conn, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	syscall.CloseOnExec(fd)
	c := &Conn{fd: fd}
	if err := c.SetDeadline(by); err != nil {
		c.Close()
		return nil, err
	}
	for {
		// A connect to a full backlog blocks until SO_SNDTIMEO.
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		c.Close()
		if errors.Is(err, syscall.EAGAIN) {
			return nil, fmt.Errorf("connect %s: %w", path, ErrTimeout)
		}
		return nil, &os.PathError{Op: "connect", Path: path, Err: err}
	}
	return c, nil
}

// SetDeadline makes reads and writes fail with ErrTimeout after by.
func (c *Conn) SetDeadline(by time.Time) error {
	c.by = by
	return c.arm()
}

// arm sets the kernel's timeouts to what is left until the deadline.
func (c *Conn) arm() error {
	left := time.Until(c.by)
	if left <= 0 {
		return ErrTimeout
	}
	if left < time.Microsecond {
		left = time.Microsecond // zero would mean no timeout
	}
	tv := syscall.NsecToTimeval(left.Nanoseconds())
	for _, opt := range []int{syscall.SO_RCVTIMEO, syscall.SO_SNDTIMEO} {
		if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
	}
	return nil
}

// retry runs one read or write, again after a signal (a socket with a
// timeout is not restarted by SA_RESTART), with the time that is left.
func (c *Conn) retry(op string, f func() (int, error)) (int, error) {
	for {
		n, err := f()
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, syscall.EINTR):
			if err := c.arm(); err != nil {
				return 0, err
			}
		case errors.Is(err, syscall.EAGAIN):
			return 0, ErrTimeout
		default:
			return 0, os.NewSyscallError(op, err)
		}
	}
}

func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := c.retry("read", func() (int, error) { return syscall.Read(c.fd, p) })
	if err == nil && n == 0 {
		return 0, io.EOF
	}
	return n, err
}

func (c *Conn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := c.retry("write", func() (int, error) { return syscall.Write(c.fd, p[done:]) })
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return syscall.Close(c.fd) }
