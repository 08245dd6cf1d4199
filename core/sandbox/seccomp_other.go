//go:build linux && !(amd64 || arm64)

package sandbox

import "errors"

func refuseUntracked() error {
	return errors.New("the seccomp filter against MPTCP sockets is written for amd64 and arm64 only; run with --net or on one of those")
}
