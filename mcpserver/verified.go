package mcpserver

import (
	"sync"

	"github.com/joulehook/joule/core/receipts"
)

// verified remembers receipts whose envelopes have been verified and
// decoded, by chain hash. An envelope's hash is the BLAKE3 of its bytes
// (the store checks it on every read), and verifying the same bytes against
// the same key always gives the same answer, so a hit is exactly as good as
// verifying again. It holds at most max entries, forgetting all at once when
// full.
type verified struct {
	mu  sync.Mutex
	max int
	by  map[[32]byte]openResult
}

type openResult struct {
	a   *receipts.Any
	err error
}

func newVerified(max int) *verified { return &verified{max: max, by: make(map[[32]byte]openResult)} }

// open verifies and decodes an envelope whose chain hash is hash.
func (v *verified) open(s *Server, hash [32]byte, envelope []byte) (*receipts.Any, error) {
	v.mu.Lock()
	r, ok := v.by[hash]
	v.mu.Unlock()
	if ok {
		return r.a, r.err
	}
	a, err := s.openReceipt(envelope)
	v.mu.Lock()
	if len(v.by) >= v.max {
		clear(v.by)
	}
	v.by[hash] = openResult{a, err}
	v.mu.Unlock()
	return a, err
}
