package trust

import (
	"context"
	"errors"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// Chain is one trust chain to read: its session, its head as the
// sessions table stores it (nil: no row), and the head its witness
// recorded (nil: none).
type Chain struct {
	Session   string
	Head      *store.ChainHead
	Witnessed *store.ChainHead
}

// LoadGrants reads and verifies the GrantsSession chain c from st, each
// receipt with the key of its steward in keys, and derives its state.
func LoadGrants(ctx context.Context, st *store.Store, keys receipts.Keys, c Chain) (*Grants, error) {
	g := NewGrants()
	head, err := walk(ctx, st, keys, c, g.Apply)
	if err != nil {
		return nil, err
	}
	g.Seq, g.Head = head.Seq, head.Head
	return g, nil
}

// LoadHome reads and verifies a home's chain c from st with keys (the
// home's own key: only the home records its files) and returns what it
// last recorded.
func LoadHome(ctx context.Context, st *store.Store, keys receipts.Keys, c Chain) (*Home, error) {
	h := &Home{Session: c.Session}
	head, err := walk(ctx, st, keys, c, h.Apply)
	if err != nil {
		return nil, err
	}
	h.Seq, h.Head = head.Seq, head.Head
	return h, nil
}

// walk verifies c's receipts in order and applies each: every envelope
// signed by a steward of keys and hashing to its row's chain hash, every
// receipt a decision of c's session at its sequence whose prev is the one
// before's hash, the last being the stored head, and the chain holding
// the witnessed head. It returns where the chain ends.
func walk(ctx context.Context, st *store.Store, keys receipts.Keys, c Chain, apply func(uint64, *receipts.Decision) error) (store.ChainHead, error) {
	entries, err := st.Session(ctx, c.Session)
	if errors.Is(err, store.ErrNotFound) {
		entries, err = nil, nil
	}
	if errors.Is(err, store.ErrCorrupt) {
		// A row of the chain the store itself finds damaged.
		return store.ChainHead{}, fault(ErrCorrupt, c.Session, 0, "%v", err)
	}
	if err != nil {
		return store.ChainHead{}, err
	}
	var prev core.ID
	for i, e := range entries {
		seq := uint64(i + 1)
		bad := func(format string, args ...any) error { return fault(ErrCorrupt, c.Session, seq, format, args...) }
		if e.Seq != seq {
			return store.ChainHead{}, bad("the receipt stored next is seq %d: receipts are missing or out of order", e.Seq)
		}
		if core.Sum(e.Envelope) != e.Hash {
			return store.ChainHead{}, bad("the envelope does not hash to its row's chain hash")
		}
		r, err := keys.Open(e.Envelope)
		if err != nil {
			return store.ChainHead{}, bad("the receipt does not verify: %v", err)
		}
		d := r.Decision
		switch {
		case d == nil:
			return store.ChainHead{}, bad("a %s receipt is not a change of trust state", r.Kind)
		case d.Session != c.Session || d.Sequence != seq:
			return store.ChainHead{}, bad("the signed receipt is session %s seq %d", d.Session, d.Sequence)
		case d.Prev != prev:
			return store.ChainHead{}, bad("the receipt does not follow the one before it (its prev is %s, the one before hashes to %s)", d.Prev, prev)
		}
		if err := apply(seq, d); err != nil {
			return store.ChainHead{}, err
		}
		prev = e.Hash
	}
	n := uint64(len(entries))
	switch {
	case c.Head == nil && n > 0:
		return store.ChainHead{}, fault(ErrCorrupt, c.Session, 0, "%d receipts are stored, but the session's head row is missing", n)
	case c.Head != nil && (c.Head.Seq != n || c.Head.Head != prev):
		return store.ChainHead{}, fault(ErrCorrupt, c.Session, c.Head.Seq, "the session's head row says %d receipts ending in %s, the receipts stored are %d ending in %s", c.Head.Seq, c.Head.Head, n, prev)
	}
	if w := c.Witnessed; w != nil {
		switch {
		case w.Seq > n:
			return store.ChainHead{}, fault(ErrBehind, c.Session, w.Seq, "the witness recorded %d receipts of this chain, the store holds %d: the last were taken out", w.Seq, n)
		case entries[w.Seq-1].Hash != w.Head:
			return store.ChainHead{}, fault(ErrBehind, c.Session, w.Seq, "the receipt stored at seq %d is not the one the witness recorded: the chain was rewritten", w.Seq)
		}
	}
	return store.ChainHead{Seq: n, Head: prev}, nil
}
