package home

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is a file of the home that is not a regular file (a FIFO,
// a device, a directory): reading it could wait for ever, so it is refused.
var ErrNotRegular = errors.New("not a regular file")

// ReadFile reads the file at path, at most limit bytes, refusing anything
// but a regular file (a symbolic link to one is followed) without waiting
// on it: a process of the user's that puts a FIFO where joule reads its
// key, configuration, issuers or witness would otherwise hold a decision
// until the host's timeout, which most hosts treat as allow. A file larger
// than limit is an error.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%v)", path, ErrNotRegular, st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}
