package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core"
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
	// RequireWitness marks a receipt that allows an action: when the
	// witness has a Quorum, the seal is refused (an error wrapping
	// ErrWitnessUnreachable or ErrRolledBack, nothing written) unless
	// the quorum has cosigned the log as it is before it. A deny needs
	// no witness to be safe, and is sealed whatever the witnesses say.
	RequireWitness bool
	// System marks a seal into one of joule's own sessions (SystemPrefix):
	// a trust change, a loss accepted. Any other seal into one is
	// refused, so that nothing but joule's own records enters them.
	System bool

	// force seals without checking the witness, and re-anchors it
	// (AcceptLoss); before runs first in the transaction, given the log's
	// size.
	force  bool
	before func(ctx context.Context, tx conn, r tlog.HashReader, size int64) error
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

// Seal runs one decision in one write transaction: it checks the debit,
// calls Build with the session's next position, appends the envelope to the
// session chain and the Merkle log, applies the debit if Build keeps it,
// and commits. Nothing is written if any step fails.
//
// Concurrent Seals of one Store are committed together (group commit: see
// group.go): one transaction and one sync for many decisions, each of which
// still gets its own debit outcome and position, and fails or succeeds on
// its own. Seal returns only once its decision is committed.
func (s *Store) Seal(ctx context.Context, req SealRequest) (Entry, error) {
	if err := req.check(); err != nil {
		return Entry{}, fmt.Errorf("store: seal: %w", err)
	}
	if req.RequireWitness {
		if err := s.AwaitWitness(ctx, -1); err != nil {
			return Entry{}, fmt.Errorf("store: seal session %q: %w", req.Session, err)
		}
	}
	e, err := s.group.seal(ctx, s, req)
	if err != nil {
		return Entry{}, fmt.Errorf("store: seal session %q: %w", req.Session, err)
	}
	return e, nil
}

// sealOne is Seal alone in its transaction.
func (s *Store) sealOne(ctx context.Context, req SealRequest) (Entry, error) {
	var (
		sealed Entry
		wit    *pendingWitness
	)
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		wit = nil
		if !tx.pg {
			// Any error rolls the whole transaction back, so a batch of
			// one needs no savepoint whatever fails.
			b := newBatch(s, tx)
			if req.before != nil {
				b.ctx = ctx
				size, err := logSize(ctx, tx)
				if err != nil {
					return err
				}
				if err := req.before(ctx, tx, b, size); err != nil {
					return err
				}
			}
			e, err := b.seal(ctx, req)
			if err != nil {
				return err
			}
			sealed = e
			if wit, err = s.witnessSeal(ctx, tx, b, req.force, e.Index, e.Index+1); err != nil {
				return err
			}
			if err := b.flush(ctx); err != nil {
				return err
			}
			return s.withSpent(ctx, tx, wit)
		}
		locked, err := lockSeal(ctx, tx, []SealRequest{req})
		if err != nil {
			return err
		}
		r := hashReader{ctx, tx}
		if req.before != nil {
			size, err := logSize(ctx, tx)
			if err != nil {
				return err
			}
			if err := req.before(ctx, tx, r, size); err != nil {
				return err
			}
		}
		if sealed, err = s.sealTx(ctx, tx, req, locked); err != nil {
			return err
		}
		if wit, err = s.witnessSeal(ctx, tx, r, req.force, sealed.Index, sealed.Index+1); err != nil {
			return err
		}
		return s.withSpent(ctx, tx, wit)
	})
	if err == nil {
		s.committed(wit)
	}
	return sealed, err
}

// witnessSeal is witnessTx for seals, or, for a forced one (AcceptLoss),
// only the checkpoint to re-anchor the witness at.
func (s *Store) witnessSeal(ctx context.Context, tx conn, r tlog.HashReader, force bool, first, next int64) (*pendingWitness, error) {
	if s.wit.w == nil {
		return nil, nil
	}
	if !force {
		return s.witnessTx(ctx, tx, r, first, next)
	}
	root, err := tlog.TreeHash(next, r)
	if err != nil {
		return nil, err
	}
	return &pendingWitness{cp: Checkpoint{Origin: s.wit.w.Origin, Size: next, Root: root}, force: true}, nil
}

// sealTx seals req inside tx, whose locks lockSeal took. locked holds the
// debited grants as read under their locks, or is nil to read them now.
func (s *Store) sealTx(ctx context.Context, tx conn, req SealRequest, locked map[string]GrantRecord) (Entry, error) {
	now := s.now()
	links, debitErr, err := s.checkDebit(ctx, tx, req.Debit, req.AmountUJ, locked)
	if err != nil {
		return Entry{}, err
	}
	pos, err := nextPosition(ctx, tx, req.Session)
	if err != nil {
		return Entry{}, err
	}
	e, keep, err := buildEntry(req, pos, debitErr, now)
	if err != nil {
		return Entry{}, err
	}
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

// buildEntry has req's Build make the envelope for pos and checks it:
// the entry to append, and whether Build keeps the debit.
func buildEntry(req SealRequest, pos Position, debitErr error, now time.Time) (Entry, bool, error) {
	env, keep, err := callBuild(req.Build, pos, debitErr)
	if err != nil {
		return Entry{}, false, buildError{err}
	}
	if len(env) == 0 {
		return Entry{}, false, errors.New("build returned an empty envelope")
	}
	if len(env) > MaxEnvelopeSize {
		return Entry{}, false, fmt.Errorf("envelope is %d bytes, limit %d", len(env), MaxEnvelopeSize)
	}
	return Entry{Position: pos, Hash: core.Sum(env), Envelope: env, Time: now}, keep, nil
}

// callBuild runs a Build, turning a panic into its error: it may run on
// another caller's goroutine (group commit), where a panic would take the
// process down instead of reaching the caller that could recover it.
func callBuild(build func(Position, error) ([]byte, bool, error), pos Position, debitErr error) (env []byte, keep bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			env, keep, err = nil, false, fmt.Errorf("panic: %v", p)
		}
	}()
	return build(pos, debitErr)
}

// lockSeal takes, on PostgreSQL, the locks a group of Seals needs in the
// store's one lock order: every debited grant and those of every settled
// reservation, then the log head. It returns the locked grants.
func lockSeal(ctx context.Context, tx conn, reqs []SealRequest) (map[string]GrantRecord, error) {
	if !tx.pg {
		return nil, nil
	}
	var ids []string
	for _, req := range reqs {
		ids = append(ids, req.Debit...)
		for _, id := range req.reservations() {
			held, err := reservationGrants(ctx, tx, id)
			if err != nil {
				return nil, err
			}
			ids = append(ids, held...)
		}
	}
	locked, err := lockGrants(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	return locked, lockLog(ctx, tx)
}

// SystemPrefix starts the sessions reserved to joule's own records
// (SealRequest.System).
const SystemPrefix = "joule-"

func (r SealRequest) check() error {
	if err := checkID("session", r.Session); err != nil {
		return err
	}
	if !r.System && strings.HasPrefix(r.Session, SystemPrefix) {
		return fmt.Errorf("session %q is reserved to joule's own records", r.Session)
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

// reservations lists the reservations the seal settles or draws from.
func (r SealRequest) reservations() []int64 {
	var ids []int64
	if r.Settle != nil {
		ids = append(ids, *r.Settle)
	}
	if r.Draw != nil {
		ids = append(ids, r.Draw.Reservation)
	}
	return ids
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
// cannot pay amount, or whose columns disagree with what is signed (a
// *GrantFaultError: see signed.go). err is reserved for other failures of
// the store itself. locked, when not nil, holds the grants as lockGrants
// read them.
func (s *Store) checkDebit(ctx context.Context, q querier, ids []string, amount uint64, locked map[string]GrantRecord) (links []GrantRecord, debitErr, err error) {
	for _, id := range ids {
		var g GrantRecord
		var err error
		if locked != nil {
			var ok bool
			if g, ok = locked[id]; !ok {
				err = fmt.Errorf("grant %q: %w", id, ErrNotFound)
			}
		} else {
			g, err = loadGrant(ctx, q, id)
		}
		if errors.Is(err, ErrNotFound) {
			return nil, err, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if debitErr, err := faultOrError(s.checkDecidable(ctx, q, g)); debitErr != nil || err != nil {
			return nil, debitErr, err
		}
		if err := payable(id, g, amount); err != nil {
			return nil, err, nil
		}
		links = append(links, g)
	}
	return links, nil, nil
}

// faultOrError sorts an error of checkDecidable: a grant's fault is the
// decision's (debitErr), anything else the store's.
func faultOrError(err error) (debitErr, storeErr error) {
	var fault *GrantFaultError
	if errors.As(err, &fault) {
		return err, nil
	}
	return nil, err
}

// payable reports why grant g (stored as id) cannot pay amount, or nil.
func payable(id string, g GrantRecord, amount uint64) error {
	if g.Revoked {
		return fmt.Errorf("grant %q: %w", id, ErrRevoked)
	}
	if rem := g.RemainingUJ(); amount > rem {
		return &BudgetError{GrantID: id, RemainingUJ: rem, NeededUJ: amount}
	}
	return nil
}

// debit charges amount to every grant in links and records it in the
// ledger against log index idx.
func debit(ctx context.Context, tx conn, links []GrantRecord, amount uint64, idx int64, now time.Time) error {
	if amount == 0 {
		return nil
	}
	for _, g := range links {
		spent, ok := addAmounts(g.SpentUJ, amount)
		if !ok {
			return fmt.Errorf("grant %q: spent %d µJ + %d µJ overflows", g.ID, g.SpentUJ, amount)
		}
		if tx.pg {
			// One round trip for both writes.
			if _, err := tx.ExecContext(ctx, `WITH spend AS (UPDATE grants SET spent_uj = ? WHERE id = ?)
				INSERT INTO ledger (grant_id, amount_uj, total_uj, entry, created_ns) VALUES (?, ?, ?, ?, ?)`,
				int64(spent), g.ID, g.ID, int64(amount), int64(spent), idx, unixNano(now)); err != nil {
				return err
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE grants SET spent_uj = ? WHERE id = ?`, int64(spent), g.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO ledger (grant_id, amount_uj, total_uj, entry, created_ns) VALUES (?, ?, ?, ?, ?)`,
			g.ID, int64(amount), int64(spent), idx, unixNano(now)); err != nil {
			return err
		}
	}
	return nil
}

// nextPosition reads the session head and the log size, in one statement.
// Both come from the database inside the caller's write transaction, never
// from memory.
func nextPosition(ctx context.Context, tx conn, session string) (Position, error) {
	pos := Position{Session: session, Seq: 1}
	var (
		last         sql.NullInt64
		head         []byte
		size, stored int64
	)
	err := tx.QueryRowContext(ctx, `SELECT
		(SELECT last_seq FROM sessions WHERE id = ?),
		(SELECT head FROM sessions WHERE id = ?),
		(SELECT COALESCE(MAX(idx) + 1, 0) FROM entries),
		(SELECT COALESCE(MAX(id) + 1, 0) FROM tlog_hashes)`, session, session).Scan(&last, &head, &size, &stored)
	if err != nil {
		return Position{}, err
	}
	if last.Valid {
		if last.Int64 < 1 {
			return Position{}, corruptf("session %q has last sequence %d", session, last.Int64)
		}
		pos.Seq = uint64(last.Int64) + 1
		if pos.Prev, err = hash32("session head", head); err != nil {
			return Position{}, err
		}
	}
	if err := checkStored(size, stored); err != nil {
		return Position{}, err
	}
	pos.Index = size
	return pos, nil
}

// appendEntry writes e to its session chain and to the Merkle log.
func appendEntry(ctx context.Context, tx conn, e Entry) error {
	now := unixNano(e.Time)
	if tx.pg {
		return appendEntryPG(ctx, tx, e, now)
	}
	if err := upsertSession(ctx, tx, e, now); err != nil {
		return err
	}
	if err := insertEntry(ctx, tx, e, now); err != nil {
		return err
	}
	return appendLeaf(ctx, tx, e.Index, e.Envelope)
}

// upsertSession makes e the head of its session (SQLite).
func upsertSession(ctx context.Context, tx conn, e Entry, now int64) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO sessions (id, last_seq, head, first_ns, last_ns) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq, head = excluded.head, last_ns = excluded.last_ns`,
		e.Session, int64(e.Seq), e.Hash[:], now, now)
	return err
}

// insertEntry writes e's entry row (SQLite). A duplicate envelope inserts
// nothing and is ErrConflict (the caller's transaction rolls back what it
// wrote before); asking only then saves a query.
func insertEntry(ctx context.Context, tx conn, e Entry, now int64) error {
	res, err := tx.ExecContext(ctx,
		`INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (hash) DO NOTHING`,
		e.Index, e.Session, int64(e.Seq), e.Prev[:], e.Hash[:], e.Envelope, now)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var dup int64
		if err := tx.QueryRowContext(ctx, `SELECT idx FROM entries WHERE hash = ?`, e.Hash[:]).Scan(&dup); err != nil {
			return err
		}
		return fmt.Errorf("%w: envelope already sealed at log index %d", ErrConflict, dup)
	}
	return nil
}

// appendEntryPG is appendEntry in two round trips instead of four: read the
// tree hashes the leaf needs, then write the session head, the entry and
// the new tree hashes in one statement. Foreign keys are checked at the end
// of the statement, when the session row is there.
func appendEntryPG(ctx context.Context, tx conn, e Entry, now int64) error {
	hashes, err := tlog.StoredHashes(e.Index, e.Envelope, hashReader{ctx, tx})
	if err != nil {
		return err
	}
	base := tlog.StoredHashIndex(0, e.Index)
	args := []any{e.Session, int64(e.Seq), e.Hash[:], now,
		e.Index, e.Prev[:], e.Envelope}
	var values strings.Builder
	for i, h := range hashes {
		if i > 0 {
			values.WriteString(", ")
		}
		values.WriteString("(?, ?)")
		args = append(args, base+int64(i), h[:])
	}
	var inserted int64
	err = tx.QueryRowContext(ctx, `
		WITH head AS (
			INSERT INTO sessions (id, last_seq, head, first_ns, last_ns) VALUES ($1, $2, $3, $4, $4)
			ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq, head = excluded.head, last_ns = excluded.last_ns),
		entry AS (
			INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns) VALUES ($5, $1, $2, $6, $3, $7, $4)
			ON CONFLICT (hash) DO NOTHING RETURNING idx),
		tree AS (
			INSERT INTO tlog_hashes (id, hash) SELECT id, hash FROM (VALUES `+pgValues(values.String(), 8)+`) AS v (id, hash)
			WHERE EXISTS (SELECT 1 FROM entry))
		SELECT count(*) FROM entry`, args...).Scan(&inserted)
	if err != nil {
		return err
	}
	if inserted == 0 {
		var dup int64
		if err := tx.QueryRowContext(ctx, `SELECT idx FROM entries WHERE hash = ?`, e.Hash[:]).Scan(&dup); err != nil {
			return err
		}
		return fmt.Errorf("%w: envelope already sealed at log index %d", ErrConflict, dup)
	}
	return nil
}

// pgValues numbers the ? placeholders of a VALUES list from first on, for
// a statement whose earlier parameters are numbered by hand.
func pgValues(list string, first int) string {
	var b strings.Builder
	n := first
	for i := 0; i < len(list); i++ {
		if list[i] == '?' {
			b.WriteString("$" + strconv.Itoa(n))
			if n%2 == 0 {
				b.WriteString("::bigint")
			} else {
				b.WriteString("::bytea")
			}
			n++
			continue
		}
		b.WriteByte(list[i])
	}
	return b.String()
}
