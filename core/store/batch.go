package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// A batch seals decisions on SQLite with as few statements as it can. A
// write transaction there holds the whole database (BEGIN IMMEDIATE), so
// what one seal reads or writes stays true for the next seal of the same
// transaction: a batch keeps the log size, the tree hashes it appended, the
// session heads, the grants and the reservations in memory from the first
// read of each, and writes all but the entries themselves once, when the
// transaction ends. Each seal then costs one statement (its entry) instead
// of about ten; the first read of anything still comes from the database,
// inside the transaction. A batch never outlives its transaction: another
// process may write as soon as it commits.
//
// The entry is written at once so that a duplicate envelope is found, and
// refused, before the seal counts. Until then a seal writes nothing but,
// for a new session, its row: so a seal that fails is simply left out of
// the batch. One that fails after writing (a duplicate envelope in a new
// session, a reservation already gone, an overflow) makes the batch return
// errSavepoints, and the group runs again the old way, each seal in its own
// savepoint, with the same outcomes for all.

// errSavepoints asks for a group to be sealed again seal by seal in
// savepoints: a seal failed on its own after writing to the database.
var errSavepoints = errors.New("a seal failed after writing: seal the group in savepoints")

type batch struct {
	s   *Store
	tx  conn
	ctx context.Context // the current seal's, for tlog's reads

	size     int64       // the next log index; -1 until read
	treeBase int64       // stored hash index of tree[0]
	tree     []tlog.Hash // stored hashes appended by the batch, in index order

	sessions map[string]*sessionHead
	grants   map[string]*grantState
	resvs    map[int64]*resvState
	ledger   []ledgerRow

	// wrote reports whether the current seal has written to the
	// database. A seal changes what the batch keeps only after writing its
	// entry: one that fails before leaves the batch as it was, and one that
	// fails after sends its group back to savepoints.
	wrote bool
}

type sessionHead struct {
	seq    uint64 // the last sequence number; 0 when the session has no row
	head   [32]byte
	lastNS int64
	dirty  bool
}

type grantState struct {
	g       GrantRecord
	orig    GrantRecord // as first read: the batch writes grants and ledger only in flush
	dirty   bool
	checked bool // checkDecidable passed on orig
}

type resvState struct {
	amount uint64
	grants []string // in id order
	gone   bool     // settled or released by this batch
	dirty  bool
}

type ledgerRow struct {
	grant       string
	amount      uint64
	total       uint64 // the grant's spent after this row
	entry       int64  // -1 for none
	reservation int64  // 0 for none
	ns          int64
}

func newBatch(s *Store, tx conn) *batch {
	return &batch{
		s: s, tx: tx, size: -1,
		sessions: make(map[string]*sessionHead),
		grants:   make(map[string]*grantState),
		resvs:    make(map[int64]*resvState),
	}
}

// seal is sealTx for a batch.
func (b *batch) seal(ctx context.Context, req SealRequest) (Entry, error) {
	b.ctx, b.wrote = ctx, false
	now := b.s.now()
	links, debitErr, err := b.checkDebit(ctx, req.Debit, req.AmountUJ)
	if err != nil {
		return Entry{}, err
	}
	pos, err := b.position(ctx, req.Session)
	if err != nil {
		return Entry{}, err
	}
	e, keep, err := buildEntry(req, pos, debitErr, now)
	if err != nil {
		return Entry{}, err
	}
	if err := b.appendEntry(ctx, e); err != nil {
		return Entry{}, err
	}
	hashes, err := tlog.StoredHashes(e.Index, e.Envelope, b)
	if err != nil {
		return Entry{}, err
	}
	if debitErr == nil && keep && req.AmountUJ > 0 {
		for _, g := range links {
			gs := b.grants[g.ID]
			spent, ok := addAmounts(gs.g.SpentUJ, req.AmountUJ)
			if !ok {
				return Entry{}, fmt.Errorf("grant %q: spent %d µJ + %d µJ overflows", g.ID, gs.g.SpentUJ, req.AmountUJ)
			}
			b.setGrant(gs, spent, gs.g.ReservedUJ)
			b.ledger = append(b.ledger, ledgerRow{grant: g.ID, amount: req.AmountUJ, total: spent, entry: e.Index, ns: unixNano(now)})
		}
	}
	if req.Settle != nil {
		actual := req.SettleUJ
		if err := b.draw(ctx, *req.Settle, nil, &actual); err != nil {
			return Entry{}, err
		}
	}
	if d := req.Draw; d != nil {
		release, charge := d.ReleaseUJ, d.ChargeUJ
		if err := b.draw(ctx, d.Reservation, &release, &charge); err != nil {
			return Entry{}, err
		}
	}
	// The seal counts: the log and the chain move on.
	if len(b.tree) == 0 {
		b.treeBase = tlog.StoredHashIndex(0, e.Index)
	}
	b.tree = append(b.tree, hashes...)
	b.size++
	sh := b.sessions[e.Session]
	// A session whose row this seal inserted holds this head already.
	sh.dirty = sh.dirty || sh.seq > 0
	sh.seq, sh.head, sh.lastNS = e.Seq, e.Hash, unixNano(now)
	return e, nil
}

// checkDebit is checkDebit on the batch's grants.
func (b *batch) checkDebit(ctx context.Context, ids []string, amount uint64) (links []GrantRecord, debitErr, err error) {
	for _, id := range ids {
		gs, err := b.grant(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil, err, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if !gs.checked {
			// The database still holds the grant and its ledger as
			// first read; what the batch changed since is its own.
			if debitErr, err := faultOrError(b.s.checkDecidable(ctx, b.tx, gs.orig)); debitErr != nil || err != nil {
				return nil, debitErr, err
			}
			gs.checked = true
		}
		if err := payable(id, gs.g, amount); err != nil {
			return nil, err, nil
		}
		links = append(links, gs.g)
	}
	return links, nil, nil
}

// grant returns the grant as the batch has left it, reading it the first
// time.
func (b *batch) grant(ctx context.Context, id string) (*grantState, error) {
	if gs, ok := b.grants[id]; ok {
		return gs, nil
	}
	g, err := loadGrant(ctx, b.tx, id)
	if err != nil {
		return nil, err
	}
	gs := &grantState{g: g, orig: g}
	b.grants[id] = gs
	return gs, nil
}

func (b *batch) setGrant(gs *grantState, spent, reserved uint64) {
	gs.g.SpentUJ, gs.g.ReservedUJ, gs.dirty = spent, reserved, true
}

// position is nextPosition, reading the log size once per batch and each
// session's head once.
func (b *batch) position(ctx context.Context, session string) (Position, error) {
	if b.size < 0 {
		pos, err := nextPosition(ctx, b.tx, session)
		if err != nil {
			return Position{}, err
		}
		b.size = pos.Index
		sh := &sessionHead{}
		if pos.Seq > 1 {
			sh.seq, sh.head = pos.Seq-1, pos.Prev
		}
		b.sessions[session] = sh
		return pos, nil
	}
	sh, ok := b.sessions[session]
	if !ok {
		var (
			last int64
			head []byte
		)
		sh = &sessionHead{}
		err := b.tx.QueryRowContext(ctx, `SELECT last_seq, head FROM sessions WHERE id = ?`, session).Scan(&last, &head)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return Position{}, err
		case last < 1:
			return Position{}, corruptf("session %q has last sequence %d", session, last)
		default:
			if sh.head, err = hash32("session head", head); err != nil {
				return Position{}, err
			}
			sh.seq = uint64(last)
		}
		b.sessions[session] = sh
	}
	pos := Position{Session: session, Seq: sh.seq + 1, Index: b.size}
	if sh.seq > 0 {
		pos.Prev = sh.head
	}
	return pos, nil
}

// appendEntry writes e's entry, and before it the row of a new session.
// The rest of the session head waits for flush.
func (b *batch) appendEntry(ctx context.Context, e Entry) error {
	now := unixNano(e.Time)
	if b.sessions[e.Session].seq == 0 {
		if err := upsertSession(ctx, b.tx, e, now); err != nil {
			return err
		}
		b.wrote = true
	}
	if err := insertEntry(ctx, b.tx, e, now); err != nil {
		return err
	}
	b.wrote = true
	return nil
}

// ReadHashes reads stored tree hashes for tlog: those the batch appended
// from memory, the others from the database.
func (b *batch) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	var at []int // where each missing hash goes in out
	for i, id := range indexes {
		if j := id - b.treeBase; len(b.tree) > 0 && j >= 0 && j < int64(len(b.tree)) {
			out[i] = b.tree[j]
			continue
		}
		missing = append(missing, id)
		at = append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	read, err := hashReader{b.ctx, b.tx}.ReadHashes(missing)
	if err != nil {
		return nil, err
	}
	for k, i := range at {
		out[i] = read[k]
	}
	return out, nil
}

// draw is drawReservation on the batch's reservations and grants.
func (b *batch) draw(ctx context.Context, id int64, release, actual *uint64) error {
	rs, err := b.reservation(ctx, id)
	if err != nil {
		return err
	}
	held := rs.amount
	taken := held
	if release != nil {
		taken = min(*release, held)
	}
	if len(rs.grants) == 0 {
		return corruptf("reservation %d holds no grants", id)
	}
	now := unixNano(b.s.now())
	for _, gid := range rs.grants {
		gs := b.grants[gid]
		reserved, spent := gs.g.ReservedUJ, gs.g.SpentUJ
		if reserved < held {
			return corruptf("grant %q reserves %d µJ, less than reservation %d's %d µJ", gid, reserved, id, held)
		}
		reserved -= taken
		if actual != nil {
			sum, ok := addAmounts(spent, *actual)
			if !ok {
				return fmt.Errorf("grant %q: spent %d µJ + %d µJ overflows", gid, spent, *actual)
			}
			spent = sum
		}
		b.setGrant(gs, spent, reserved)
		if actual != nil && *actual > 0 {
			b.ledger = append(b.ledger, ledgerRow{grant: gid, amount: *actual, total: spent, entry: -1, reservation: id, ns: now})
		}
	}
	if release != nil {
		rs.amount = held - taken
	} else {
		rs.gone = true
	}
	rs.dirty = true
	return nil
}

// reservation returns reservation id as the batch has left it, reading it
// and its grants the first time.
func (b *batch) reservation(ctx context.Context, id int64) (*resvState, error) {
	if rs, ok := b.resvs[id]; ok {
		if rs.gone {
			return nil, reservationGone(id)
		}
		return rs, nil
	}
	// One query for the reservation and its grants, which finds no row
	// both when the reservation is gone and when it holds no grants.
	rows, err := b.tx.QueryContext(ctx, `
		SELECT `+joinedGrantColumns+`, r.amount_uj FROM reservations r
		JOIN reservation_grants rg ON rg.reservation = r.id JOIN grants g ON g.id = rg.grant_id
		WHERE r.id = ? ORDER BY g.id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		rs     = &resvState{}
		amount int64
	)
	for rows.Next() {
		g, err := scanGrant(withLast{rows, &amount})
		if err != nil {
			return nil, err
		}
		// A grant the batch has changed is as the batch left it.
		if _, ok := b.grants[g.ID]; !ok {
			b.grants[g.ID] = &grantState{g: g, orig: g}
		}
		rs.grants = append(rs.grants, g.ID)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(rs.grants) == 0 {
		err := b.tx.QueryRowContext(ctx, `SELECT amount_uj FROM reservations WHERE id = ?`, id).Scan(&amount)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, reservationGone(id)
		}
		if err != nil {
			return nil, err
		}
	}
	if rs.amount, err = uj("reservation amount_uj", amount); err != nil {
		return nil, err
	}
	b.resvs[id] = rs
	return rs, nil
}

// withLast scans a row's last column into last, and the others into what
// Scan is given.
type withLast struct {
	rows *sql.Rows
	last any
}

func (w withLast) Scan(dest ...any) error { return w.rows.Scan(append(dest, w.last)...) }

func reservationGone(id int64) error {
	return fmt.Errorf("reservation %d: %w (already settled or released?)", id, ErrNotFound)
}

// joinedGrantColumns is grantColumns of the grants table aliased g.
const joinedGrantColumns = `g.id, g.parent, g.signed, g.budget_uj, g.spent_uj, g.reserved_uj, g.revoked, g.created_ns`

// flush writes what the batch kept in memory: the tree hashes, the session
// heads, the grants, the reservations and the ledger. One session head or
// grant goes in a plain statement, more as one JSON array; tree hashes and
// ledger rows are inserted in VALUES lists (insertValues). Either way few
// statement texts are prepared however many rows a batch has.
func (b *batch) flush(ctx context.Context) error {
	if err := b.flushTree(ctx); err != nil {
		return err
	}
	var heads []string
	for _, id := range slices.Sorted(maps.Keys(b.sessions)) {
		if b.sessions[id].dirty {
			heads = append(heads, id)
		}
	}
	switch len(heads) {
	case 0:
	case 1:
		sh := b.sessions[heads[0]]
		if _, err := b.tx.ExecContext(ctx, `UPDATE sessions SET last_seq = ?, head = ?, last_ns = ? WHERE id = ?`,
			int64(sh.seq), sh.head[:], sh.lastNS, heads[0]); err != nil {
			return err
		}
	default:
		rows := make([][]any, len(heads))
		for i, id := range heads {
			sh := b.sessions[id]
			rows[i] = []any{id, sh.seq, hex.EncodeToString(sh.head[:]), sh.lastNS}
		}
		if err := b.execJSON(ctx, `UPDATE sessions SET last_seq = j.value ->> 1, head = unhex(j.value ->> 2), last_ns = j.value ->> 3
			FROM json_each(?) AS j WHERE sessions.id = j.value ->> 0`, rows); err != nil {
			return err
		}
	}
	var grants []*grantState
	for _, id := range slices.Sorted(maps.Keys(b.grants)) {
		if gs := b.grants[id]; gs.dirty {
			grants = append(grants, gs)
		}
	}
	switch len(grants) {
	case 0:
	case 1:
		g := grants[0].g
		if _, err := b.tx.ExecContext(ctx, `UPDATE grants SET spent_uj = ?, reserved_uj = ? WHERE id = ?`,
			int64(g.SpentUJ), int64(g.ReservedUJ), g.ID); err != nil {
			return err
		}
	default:
		rows := make([][]any, len(grants))
		for i, gs := range grants {
			rows[i] = []any{gs.g.ID, gs.g.SpentUJ, gs.g.ReservedUJ}
		}
		if err := b.execJSON(ctx, `UPDATE grants SET spent_uj = j.value ->> 1, reserved_uj = j.value ->> 2
			FROM json_each(?) AS j WHERE grants.id = j.value ->> 0`, rows); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(b.resvs)) {
		rs := b.resvs[id]
		var err error
		switch {
		case rs.gone:
			_, err = b.tx.ExecContext(ctx, `DELETE FROM reservations WHERE id = ?`, id)
		case rs.dirty:
			_, err = b.tx.ExecContext(ctx, `UPDATE reservations SET amount_uj = ? WHERE id = ?`, int64(rs.amount), id)
		}
		if err != nil {
			return err
		}
	}
	return b.flushLedger(ctx)
}

// flushTree writes the stored hashes the batch appended.
func (b *batch) flushTree(ctx context.Context) error {
	return insertHashes(ctx, b.tx, b.treeBase, b.tree)
}

// insertHashes stores hashes as the tree hashes from index base on.
func insertHashes(ctx context.Context, tx conn, base int64, hashes []tlog.Hash) error {
	return insertValues(ctx, tx, `INSERT INTO tlog_hashes (id, hash) VALUES `, 2, maxTreeValues, len(hashes), func(args []any, i int) []any {
		return append(args, base+int64(i), hashes[i][:])
	})
}

// maxTreeValues bounds the hashes insertHashes writes in one VALUES list
// of their own, and so the number of their texts the statement cache
// holds.
const maxTreeValues = 4

// flushLedger writes the batch's ledger rows, in the order of the seals
// so that ledger ids follow it.
func (b *batch) flushLedger(ctx context.Context) error {
	nullable := func(r ledgerRow) (entry, resv any) {
		if r.entry >= 0 {
			entry = r.entry
		}
		if r.reservation != 0 {
			resv = r.reservation
		}
		return entry, resv
	}
	return insertValues(ctx, b.tx, `INSERT INTO ledger (grant_id, amount_uj, total_uj, entry, reservation, created_ns) VALUES `, 6, 1, len(b.ledger),
		func(args []any, i int) []any {
			r := b.ledger[i]
			entry, resv := nullable(r)
			return append(args, r.grant, int64(r.amount), int64(r.total), entry, resv, r.ns)
		})
}

// insertValues runs the INSERT that head starts for n rows of width
// parameters each, which row appends: up to exact rows in one VALUES list,
// more in lists of up to maxValuesParams parameters and then of the powers
// of two rows below that, so that few statement texts are prepared.
// Binding rows costs less than encoding them as JSON, which SQLite then
// parses again member by member.
func insertValues(ctx context.Context, tx conn, head string, width, exact, n int, row func(args []any, i int) []any) error {
	tuple := "(?" + strings.Repeat(", ?", width-1) + ")"
	rows := n
	if n > exact {
		rows = 1
		for rows*2*width <= maxValuesParams {
			rows *= 2
		}
	}
	for i := 0; i < n; rows /= 2 {
		for ; n-i >= rows; i += rows {
			args := make([]any, 0, width*rows)
			for k := i; k < i+rows; k++ {
				args = row(args, k)
			}
			if _, err := tx.ExecContext(ctx, head+tuple+strings.Repeat(", "+tuple, rows-1), args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxValuesParams bounds the parameters of one of insertValues' INSERTs.
const maxValuesParams = 512

// execJSON runs query with rows as its JSON array parameter, after args.
func (b *batch) execJSON(ctx context.Context, query string, rows any, args ...any) error {
	j, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = b.tx.ExecContext(ctx, query, append(args, string(j))...)
	return err
}
