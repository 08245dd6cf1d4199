package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	"github.com/joulehook/joule/core"
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
	if err := checkTally(ctx, q, g); err != nil {
		return err
	}
	return s.checkWitnessedSpent(g)
}

// checkWitnessedSpent refuses a grant whose spent total is below what the
// witness outside the database last recorded for it: a ledger whose tail
// was deleted, with the cache lowered to match, looks consistent inside
// the database, but spending only grows.
func (s *Store) checkWitnessedSpent(g GrantRecord) error {
	if s.wit.w == nil {
		return nil
	}
	v := s.witnessed(false)
	cp := v.cp
	if v.err != nil || cp == nil {
		return nil // the witness's own faults are judged with the seal
	}
	if w, ok := cp.witnessedSpent(g.ID); ok && g.SpentUJ < w {
		return grantFault(g.ID, "it has spent %d µJ by its ledger, below the %d µJ the witness outside the store recorded at log size %d: the ledger was rewritten", g.SpentUJ, w, cp.Size)
	}
	return nil
}

// ReservationRecord is one open reservation and the grants it holds.
type ReservationRecord struct {
	ID       int64
	AmountUJ uint64
	Grants   []string // in id order
}

// Reservations returns every open reservation, oldest first.
func (s *Store) Reservations(ctx context.Context) ([]ReservationRecord, error) {
	rows, err := s.conn().QueryContext(ctx, `SELECT r.id, r.amount_uj, rg.grant_id FROM reservations r
		LEFT JOIN reservation_grants rg ON rg.reservation = r.id ORDER BY r.id, rg.grant_id`)
	if err != nil {
		return nil, fmt.Errorf("store: reservations: %w", s.classify(err))
	}
	defer rows.Close()
	var out []ReservationRecord
	for rows.Next() {
		var (
			id, amount int64
			grant      sql.NullString
		)
		if err := rows.Scan(&id, &amount, &grant); err != nil {
			return nil, fmt.Errorf("store: reservations: %w", s.classify(err))
		}
		a, err := uj("reservation amount_uj", amount)
		if err != nil {
			return nil, fmt.Errorf("store: reservations: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].ID != id {
			out = append(out, ReservationRecord{ID: id, AmountUJ: a})
		}
		if grant.Valid {
			out[len(out)-1].Grants = append(out[len(out)-1].Grants, grant.String)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reservations: %w", s.classify(err))
	}
	return out, nil
}

// AllLedger returns every ledger row of every grant, in row order: the
// debits an audit compares with the signed receipts, including rows whose
// grant row is gone.
func (s *Store) AllLedger(ctx context.Context) ([]LedgerEntry, error) {
	rows, err := s.conn().QueryContext(ctx, `SELECT grant_id, amount_uj, total_uj, entry, reservation, created_ns FROM ledger ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: ledger: %w", s.classify(err))
	}
	defer rows.Close()
	var out []LedgerEntry
	for rows.Next() {
		var (
			le            LedgerEntry
			amount, total int64
			entry, resv   sql.NullInt64
			created       int64
		)
		if err := rows.Scan(&le.GrantID, &amount, &total, &entry, &resv, &created); err != nil {
			return nil, fmt.Errorf("store: ledger: %w", s.classify(err))
		}
		if le.AmountUJ, err = uj("ledger amount_uj", amount); err != nil {
			return nil, fmt.Errorf("store: ledger: %w", err)
		}
		if le.TotalUJ, err = uj("ledger total_uj", total); err != nil {
			return nil, fmt.Errorf("store: ledger: %w", err)
		}
		le.Index, le.Time = -1, fromUnixNano(created)
		if entry.Valid {
			le.Index = entry.Int64
		}
		if resv.Valid {
			le.Reservation = resv.Int64
		}
		out = append(out, le)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: ledger: %w", s.classify(err))
	}
	return out, nil
}

// EachEntry calls fn with every entry row in log order, damaged or not:
// damage is nil, or what is wrong with the row on its own (an envelope
// that does not hash to the row's hash, a malformed column). An audit
// reads on past damage to report all of it; fn's error stops the walk.
func (s *Store) EachEntry(ctx context.Context, fn func(e Entry, damage error) error) error {
	const page = 512
	for from := int64(-1); ; {
		rows, err := s.conn().QueryContext(ctx, `SELECT idx, session, seq, prev, hash, envelope, created_ns FROM entries
			WHERE idx > ? ORDER BY idx LIMIT ?`, from, page)
		if err != nil {
			return fmt.Errorf("store: entries: %w", s.classify(err))
		}
		type raw struct {
			e          Entry
			seq        int64
			prev, hash []byte
			created    int64
		}
		var batch []raw
		for rows.Next() {
			var r raw
			if err := rows.Scan(&r.e.Index, &r.e.Session, &r.seq, &r.prev, &r.hash, &r.e.Envelope, &r.created); err != nil {
				rows.Close()
				return fmt.Errorf("store: entries: %w", s.classify(err))
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: entries: %w", s.classify(err))
		}
		for _, r := range batch {
			e := r.e
			e.Time = fromUnixNano(r.created)
			var damage error
			if r.seq < 1 {
				damage = corruptf("log index %d has sequence %d", e.Index, r.seq)
			} else {
				e.Seq = uint64(r.seq)
			}
			if p, err := hash32("entry prev", r.prev); err != nil {
				damage = err
			} else {
				e.Prev = p
			}
			if h, err := hash32("entry hash", r.hash); err != nil {
				damage = err
			} else {
				e.Hash = h
				if core.Sum(e.Envelope) != h && damage == nil {
					damage = corruptf("the envelope does not hash to the row's chain hash")
				}
			}
			if err := fn(e, damage); err != nil {
				return err
			}
			from = e.Index
		}
		if len(batch) < page {
			return nil
		}
	}
}
