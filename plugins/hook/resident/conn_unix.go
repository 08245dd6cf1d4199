//go:build unix

package resident

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ErrTimeout is a connection's deadline passing before the gate answered.
var ErrTimeout = errors.New("the resident gate did not answer in time")

// Conn is a client's connection to the gate. It links no net package: the
// socket is made and connected with plain system calls, then read and
// written as an *os.File on the runtime's poller. While the gate decides,
// the client's goroutine is parked on the poller, so the runtime sleeps in
// one epoll wait instead of a thread blocked in read, which the runtime
// would see as a long system call and answer by waking threads (retake)
// and polling every 20 µs: work on the cores the gate decides on.
type Conn struct {
	fd int // f's descriptor: f.Fd() would put the socket back in blocking mode
	f  *os.File
}

// dialUnix connects to the socket at path by the deadline.
func dialUnix(path string, by time.Time) (*Conn, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	syscall.CloseOnExec(fd)
	// The connect blocks (a full backlog waits for room) until
	// SO_SNDTIMEO, the time left until by.
	left := time.Until(by)
	if left <= 0 {
		syscall.Close(fd)
		return nil, ErrTimeout
	}
	tv := syscall.NsecToTimeval(max(left, time.Microsecond).Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		if errors.Is(err, syscall.EAGAIN) {
			return nil, fmt.Errorf("connect %s: %w", path, ErrTimeout)
		}
		return nil, &os.PathError{Op: "connect", Path: path, Err: err}
	}
	// Non-blocking, os.NewFile puts the socket on the poller, which keeps
	// the deadlines.
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setnonblock", err)
	}
	c := &Conn{fd: fd, f: os.NewFile(uintptr(fd), path)}
	if err := c.SetDeadline(by); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// SetDeadline makes reads and writes fail with ErrTimeout after by.
func (c *Conn) SetDeadline(by time.Time) error {
	if !time.Now().Before(by) {
		return ErrTimeout
	}
	return c.f.SetDeadline(by)
}

func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	return n, timeout(err)
}

func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	return n, timeout(err)
}

func timeout(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ErrTimeout
	}
	return err
}

// Close closes the connection.
func (c *Conn) Close() error { return c.f.Close() }
