//go:build linux && !(amd64 || arm64)

package sandbox

import (
	"errors"

	"golang.org/x/sys/unix"
)

func refuseUntracked() error {
	_, err := untrackedFilter()
	return err
}

func untrackedFilter() ([]unix.SockFilter, error) {
	return nil, errors.New("the seccomp filter against MPTCP sockets is written for amd64 and arm64 only; run with --net or on one of those")
}
