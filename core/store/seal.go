package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"lukechampine.com/blake3"
)

// Position is where a receipt lands: its place in its session's chain and
// in the Merkle log.
type Position struct {
	Session string
	Seq     uint64   // 1-based within the session
	Prev    [32]byte // chain hash of the session's previous receipt; zero for Seq 1
	Index   int64    // 0-based leaf index in the Merkle log
}

// Entry is a sealed receipt.
type Entry struct {
	Position
	Hash     [32]byte // chain hash: BLAKE3-256 of Envelope
	Envelope []byte
	Time     time.Time
}

// SealRequest describes one decision to seal.
type SealRequest struct {
	Session string
	// Debit lists the grants to charge AmountUJ, typically a grant and its
	// ancestors. Each is charged in full, all or none. Empty means no debit.
	Debit    []string
	AmountUJ uint64
	// Build makes the receipt envelope for pos. debitErr is nil when every
	// debit can be paid, or the reason it cannot (*BudgetError, ErrRevoked,
	// ErrNotFound). The debit is kept only when debitErr is nil and Build
	// returns keepDebit; an error from Build writes nothing.
	//
	// Build runs while this store holds the database write lock, so it must
	// be quick (sign, do not do I/O), and it may run more than once if the
	// transaction is retried, so it must have no other effects.
	Build func(pos Position, debitErr error) (envelope []byte, keepDebit bool, err error)
	// Settle, when set, settles that reservation to SettleUJ in the same
	// transaction as the receipt, so that a metered call is never charged
	// without its receipt, nor receipted without its charge.
	Settle   *int64
	SettleUJ uint64
	// Draw, when set, charges one call's share of a reservation that
	// stays open for others (a lease), in the same transaction.
	Draw *Draw
}

// Draw takes ReleaseUJ off a reservation's hold (never below zero) and
// charges ChargeUJ to each of its grants: a call admitted against a lease
// reserved once for many calls. The reservation stays until Settle or
// Release, even when drawn down to zero.
type Draw struct {
	Reservation         int64
	ReleaseUJ, ChargeUJ uint64
}

// buildError marks an error returned by SealRequest.Build, which is passed
// back to the caller as is.
type buildError struct{ err error }

func (e buildError) Error() string { return "build receipt: " + e.err.Error() }
func (e buildError) Unwrap() error { return e.err }

// Seal runs one decision in one immediate transaction: it checks the debit,
// calls Build with the session's next position, appends the envelope to the
// session chain and the Merkle log, applies the debit if Build keeps it,
// and commits. Nothing is written if any step fails.
//
// Concurrent Seals of one process share a transaction (group commit): each
// runs inside its own savepoint, so one that fails leaves the others
// intact, and each returns only once the shared commit is durable.
func (s *Store) Seal(ctx context.Context, req SealRequest) (Entry, error) {
	if err := req.check(); err != nil {
		return Entry{}, fmt.Errorf("store: seal: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("store: seal session %q: %w", req.Session, err)
	}
	p := &pending{ctx: ctx, req: req, done: make(chan struct{})}
	s.group.mu.Lock()
	s.group.queue = append(s.group.queue, p)
	lead := !s.group.leading
	s.group.leading = true
	s.group.mu.Unlock()
	if lead {
		s.commitGroups()
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		// The seal may still commit; the caller has stopped waiting.
		return Entry{}, fmt.Errorf("store: seal session %q: %w", req.Session, ctx.Err())
	}
	if p.err != nil {
		return Entry{}, fmt.Errorf("store: seal session %q: %w", req.Session, p.err)
	}
	return p.entry, nil
}

// maxGroup bounds how many seals share one transaction.
const maxGroup = 64

// group is the queue of seals waiting for a transaction, and whether some
// goroutine is committing them.
type group struct {
	mu      sync.Mutex
	queue   []*pending
	leading bool
}

type pending struct {
	ctx   context.Context
	req   SealRequest
	done  chan struct{}
	entry Entry
	err   error
}

// commitGroups commits queued seals, a group per transaction, until the
// queue is empty. The goroutine that found nobody committing runs the
// first group; if more are waiting when it is done, a new goroutine takes
// over so the first caller is not held up by later ones.
func (s *Store) commitGroups() {
	s.group.mu.Lock()
	n := min(len(s.group.queue), maxGroup)
	batch := s.group.queue[:n:n]
	s.group.queue = s.group.queue[n:]
	s.group.mu.Unlock()

	s.commitGroup(batch)

	s.group.mu.Lock()
	more := len(s.group.queue) > 0
	if !more {
		s.group.leading = false
	}
	s.group.mu.Unlock()
	if more {
		go s.commitGroups()
	}
}

func (s *Store) commitGroup(batch []*pending) {
	// A caller that gave up before its seal began is skipped; one that
	// gives up later still gets its receipt sealed.
	live := batch[:0:0]
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.err = err
			close(p.done)
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	// The transaction outlives any one caller's context.
	ctx := context.WithoutCancel(live[0].ctx)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, p := range live {
			p.entry, p.err = Entry{}, nil
			if len(live) == 1 {
				p.entry, p.err = s.sealIn(ctx, tx, p.req)
				if p.err != nil {
					return p.err
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, "SAVEPOINT seal"); err != nil {
				return err
			}
			p.entry, p.err = s.sealIn(ctx, tx, p.req)
			if p.err != nil {
				if isBusy(p.err) {
					return p.err // retry the whole group
				}
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO seal"); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, "RELEASE seal"); err != nil {
				return err
			}
		}
		return nil
	})
	for _, p := range live {
		if err != nil && (p.err == nil || len(live) > 1) {
			p.err, p.entry = err, Entry{}
		}
		if p.err != nil {
			p.err = s.classifySeal(p.err)
		}
		close(p.done)
	}
}

// classifySeal keeps Build's own errors as they are and turns driver
// errors into the store's sentinels.
func (s *Store) classifySeal(err error) error {
	var be buildError
	if errors.As(err, &be) {
		return err
	}
	return s.classify(err)
}

// sealIn seals req inside tx.
func (s *Store) sealIn(ctx context.Context, tx *sql.Tx, req SealRequest) (Entry, error) {
	now := s.now()
	links, debitErr, err := checkDebit(ctx, tx, req.Debit, req.AmountUJ)
	if err != nil {
		return Entry{}, err
	}
	pos, err := nextPosition(ctx, tx, req.Session)
	if err != nil {
		return Entry{}, err
	}
	env, keep, err := req.Build(pos, debitErr)
	if err != nil {
		return Entry{}, buildError{err}
	}
	if len(env) == 0 {
		return Entry{}, errors.New("build returned an empty envelope")
	}
	if len(env) > MaxEnvelopeSize {
		return Entry{}, fmt.Errorf("envelope is %d bytes, limit %d", len(env), MaxEnvelopeSize)
	}
	e := Entry{Position: pos, Hash: blake3.Sum256(env), Envelope: env, Time: now}
	if err := appendEntry(ctx, tx, e); err != nil {
		return Entry{}, err
	}
	if debitErr == nil && keep {
		if err := debit(ctx, tx, links, req.AmountUJ, e.Index, now); err != nil {
			return Entry{}, err
		}
	}
	if req.Settle != nil {
		actual := req.SettleUJ
		if err := s.endReservation(ctx, tx, *req.Settle, &actual); err != nil {
			return Entry{}, err
		}
	}
	if d := req.Draw; d != nil {
		release, charge := d.ReleaseUJ, d.ChargeUJ
		if err := s.drawReservation(ctx, tx, d.Reservation, &release, &charge); err != nil {
			return Entry{}, err
		}
	}
	return e, nil
}

func (r SealRequest) check() error {
	if err := checkID("session", r.Session); err != nil {
		return err
	}
	if r.Build == nil {
		return errors.New("nil Build")
	}
	if err := checkAmount("amount", r.AmountUJ); err != nil {
		return err
	}
	if err := checkAmount("settled amount", r.SettleUJ); err != nil {
		return err
	}
	if r.Draw != nil {
		if r.Settle != nil && *r.Settle == r.Draw.Reservation {
			return errors.New("a reservation cannot be settled and drawn in one seal")
		}
		if err := checkAmount("drawn release", r.Draw.ReleaseUJ); err != nil {
			return err
		}
		if err := checkAmount("drawn charge", r.Draw.ChargeUJ); err != nil {
			return err
		}
	}
	return checkGrantList(r.Debit)
}

func checkGrantList(ids []string) error {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if err := checkID("grant", id); err != nil {
			return err
		}
		if seen[id] {
			return fmt.Errorf("grant %q listed twice", id)
		}
		seen[id] = true
	}
	return nil
}

// checkDebit loads the grants and reports, as debitErr, the first one that
// cannot pay amount. err is reserved for failures of the store itself.
func checkDebit(ctx context.Context, q querier, ids []string, amount uint64) (links []GrantRecord, debitErr, err error) {
	for _, id := range ids {
		g, err := loadGrant(ctx, q, id)
		if errors.Is(err, ErrNotFound) {
			return nil, err, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if g.Revoked {
			return nil, fmt.Errorf("grant %q: %w", id, ErrRevoked), nil
		}
		if rem := g.RemainingUJ(); amount > rem {
			return nil, &BudgetError{GrantID: id, RemainingUJ: rem, NeededUJ: amount}, nil
		}
		links = append(links, g)
	}
	return links, nil, nil
}

// debit charges amount to every grant in links and records it in the
// ledger against log index idx.
func debit(ctx context.Context, tx *sql.Tx, links []GrantRecord, amount uint64, idx int64, now time.Time) error {
	if amount == 0 {
		return nil
	}
	for _, g := range links {
		spent, ok := addAmounts(g.SpentUJ, amount)
		if !ok {
			return fmt.Errorf("grant %q: spent %d µJ + %d µJ overflows", g.ID, g.SpentUJ, amount)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE grants SET spent_uj = ? WHERE id = ?`, int64(spent), g.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO ledger (grant_id, amount_uj, entry, created_ns) VALUES (?, ?, ?, ?)`,
			g.ID, int64(amount), idx, unixNano(now)); err != nil {
			return err
		}
	}
	return nil
}

// nextPosition reads the session head and the log size. Both come from the
// database inside the caller's write transaction, never from memory.
func nextPosition(ctx context.Context, tx *sql.Tx, session string) (Position, error) {
	pos := Position{Session: session, Seq: 1}
	var (
		last int64
		head []byte
	)
	err := tx.QueryRowContext(ctx, `SELECT last_seq, head FROM sessions WHERE id = ?`, session).Scan(&last, &head)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return Position{}, err
	default:
		if last < 1 {
			return Position{}, corruptf("session %q has last sequence %d", session, last)
		}
		pos.Seq = uint64(last) + 1
		if pos.Prev, err = hash32("session head", head); err != nil {
			return Position{}, err
		}
	}
	size, err := logSize(ctx, tx)
	if err != nil {
		return Position{}, err
	}
	pos.Index = size
	return pos, nil
}

// appendEntry writes e to its session chain and to the Merkle log.
func appendEntry(ctx context.Context, tx *sql.Tx, e Entry) error {
	var dup int64
	err := tx.QueryRowContext(ctx, `SELECT idx FROM entries WHERE hash = ?`, e.Hash[:]).Scan(&dup)
	if err == nil {
		return fmt.Errorf("%w: envelope already sealed at log index %d", ErrConflict, dup)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	now := unixNano(e.Time)
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO sessions (id, last_seq, head, first_ns, last_ns) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq, head = excluded.head, last_ns = excluded.last_ns`,
		e.Session, int64(e.Seq), e.Hash[:], now, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.Index, e.Session, int64(e.Seq), e.Prev[:], e.Hash[:], e.Envelope, now); err != nil {
		return err
	}
	return appendLeaf(ctx, tx, e.Index, e.Envelope)
}
