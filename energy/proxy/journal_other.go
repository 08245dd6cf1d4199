//go:build !unix

package proxy

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked by a running proxy")

// lockFile cannot tell a dead proxy's journal from a live one's here, so
// there is no journal: receipts answered but not sealed when a proxy is
// killed are lost, and its leases are released once stale.
func lockFile(*os.File) error { return errors.ErrUnsupported }

func mapFile(*os.File, int64) ([]byte, error)           { return nil, errors.ErrUnsupported }
func remapFile(*os.File, []byte, int64) ([]byte, error) { return nil, errors.ErrUnsupported }
func unmapFile([]byte)                                  {}
