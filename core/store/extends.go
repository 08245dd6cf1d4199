package store

import (
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// CheckExtends checks that the store's log extends cp, a checkpoint of it
// verified elsewhere (on a team's store, another machine's log as a
// witness cosigned it), named from in an error: nil, or a *WitnessError
// wrapping ErrRolledBack when the store holds fewer receipts than cp or
// other ones.
func (s *Store) CheckExtends(ctx context.Context, cp *Checkpoint, from string) error {
	return s.read(ctx, func(tx conn) error {
		size, err := logSize(ctx, tx)
		if err != nil {
			return err
		}
		if size < cp.Size {
			return &WitnessError{File: from, Witnessed: cp, StoreSize: size,
				Problem: fmt.Sprintf("the store holds %d receipts, fewer than the %d cosigned: it was truncated or restored from an older copy", size, cp.Size), err: ErrRolledBack}
		}
		root, err := tlog.TreeHash(cp.Size, hashReader{ctx, tx})
		if err != nil {
			return err
		}
		if root != cp.Root {
			return &WitnessError{File: from, Witnessed: cp, StoreSize: size,
				Problem: fmt.Sprintf("the store's first %d receipts are not the ones cosigned (root %s): it was replaced or rewritten", cp.Size, root), err: ErrRolledBack}
		}
		return nil
	})
}
