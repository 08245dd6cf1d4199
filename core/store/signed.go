package store

import (
	"context"
	"fmt"
	"sync/atomic"
)

// The store keeps a grant's signed envelope opaque: it cannot verify it,
// but it must never decide on a column the envelope contradicts. A caller
// that can verify envelopes (the gate, which holds the trusted issuers)
// installs a GrantCheck; from then on every decision path of the store
// (the debit of a Seal, a Reserve) reads a grant's budget and parent from
// its verified envelope and treats a budget_uj or parent column that
// disagrees with it as a store fault. The figures the store keeps itself
// (spent_uj, reserved_uj) are caches of the ledger and the reservations:
// each decision path compares them with the grant's last ledger row's
// running total and with its open reservations before it lets the grant
// pay, and a cache that disagrees is a store fault too.

// SignedGrant is what a grant's verified envelope says about the facts the
// store decides on.
type SignedGrant struct {
	Parent   string // "" for a root grant
	BudgetUJ uint64
}

// GrantCheck verifies the envelope stored for grant id (signature,
// trusted issuer, and that id is the envelope's own id) and returns what
// it signs. It is called inside write transactions, so it must be quick:
// cache verified envelopes.
type GrantCheck func(id string, signed []byte) (SignedGrant, error)

// CheckGrantsWith installs check on every decision path of the store
// (Seal's debits, Reserve); nil removes it. Without one the store can
// only compare its own caches with its ledger.
func (s *Store) CheckGrantsWith(check GrantCheck) {
	if check == nil {
		s.grantCheck.Store(nil)
		return
	}
	s.grantCheck.Store(&check)
}

// grantCheckSlot holds the installed GrantCheck.
type grantCheckSlot = atomic.Pointer[GrantCheck]

// GrantFaultError is a store fault found on a decision path: a column or
// a cached figure of grant GrantID disagrees with what is signed (the
// grant's envelope, the ledger of signed receipts). It wraps ErrCorrupt.
type GrantFaultError struct {
	GrantID string
	Reason  string
}

func (e *GrantFaultError) Error() string {
	return fmt.Sprintf("store fault: grant %s: %s (run 'joule store check')", e.GrantID, e.Reason)
}

func (e *GrantFaultError) Unwrap() error { return ErrCorrupt }

func grantFault(id, format string, args ...any) error {
	return &GrantFaultError{GrantID: id, Reason: fmt.Sprintf(format, args...)}
}

// checkSigned compares g's budget and parent columns with its verified
// envelope, when a GrantCheck is installed.
func (s *Store) checkSigned(g GrantRecord) error {
	p := s.grantCheck.Load()
	if p == nil {
		return nil
	}
	sg, err := (*p)(g.ID, g.Signed)
	if err != nil {
		return grantFault(g.ID, "its stored envelope does not verify: %v", err)
	}
	if sg.BudgetUJ != g.BudgetUJ {
		return grantFault(g.ID, "budget_uj column says %d µJ, the signed grant %d µJ", g.BudgetUJ, sg.BudgetUJ)
	}
	if sg.Parent != g.Parent {
		return grantFault(g.ID, "parent column says %q, the signed grant %q", g.Parent, sg.Parent)
	}
	return nil
}

// checkTally compares g's cached spent and reserved figures with the
// running total of its last ledger row and the sum of its open
// reservations, in one indexed query.
func checkTally(ctx context.Context, q querier, g GrantRecord) error {
	var total, held int64
	err := q.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT total_uj FROM ledger WHERE grant_id = ? ORDER BY id DESC LIMIT 1), 0),
		CAST(COALESCE((SELECT SUM(r.amount_uj) FROM reservation_grants rg JOIN reservations r ON r.id = rg.reservation
			WHERE rg.grant_id = ?), 0) AS BIGINT)`, g.ID, g.ID).Scan(&total, &held)
	if err != nil {
		return err
	}
	if total < 0 || uint64(total) != g.SpentUJ {
		return grantFault(g.ID, "spent_uj says %d µJ, its ledger's running total %d µJ", g.SpentUJ, total)
	}
	if held < 0 || uint64(held) != g.ReservedUJ {
		return grantFault(g.ID, "reserved_uj says %d µJ, its open reservations hold %d µJ", g.ReservedUJ, held)
	}
	return nil
}

// checkDecidable is every check a decision path makes on grant g before
// letting it pay: a *GrantFaultError, or another error of the store.
func (s *Store) checkDecidable(ctx context.Context, q querier, g GrantRecord) error {
	if err := s.checkSigned(g); err != nil {
		return err
	}
	return checkTally(ctx, q, g)
}
