package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Verify checks the whole store, reading every row in one snapshot: the
// database's own integrity and foreign keys (SQLite's quick_check; on
// PostgreSQL the schema and orphan rows), each session chain (sequences 1..n, every Prev the
// previous Hash, every Hash the BLAKE3 of its envelope), the Merkle log
// (every stored hash recomputed from the envelopes), every grant's spent and
// reserved against its ledger and reservations, every ledger row's running
// total, and every checkpoint's root.
// It returns nil or an error wrapping ErrCorrupt that names the first fault.
// Its cost grows with the store; the hot paths do not call it.
func (s *Store) Verify(ctx context.Context) error {
	err := s.read(ctx, func(tx conn) error {
		database := verifySQLite
		if s.pg {
			database = verifyPostgres
		}
		for _, check := range []func(context.Context, conn) error{
			database, verifyEntries, verifyGrants, verifyLedgerTotals, verifyCheckpoints,
		} {
			if err := check(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: verify: %w", err)
	}
	return nil
}

func verifySQLite(ctx context.Context, tx conn) error {
	var result string
	if err := tx.QueryRowContext(ctx, `PRAGMA quick_check(1)`).Scan(&result); err != nil {
		return err
	}
	if result != "ok" {
		return corruptf("sqlite quick_check: %s", result)
	}
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var (
			table  string
			rowid  sql.NullInt64
			parent string
			fkid   int64
		)
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			return err
		}
		return corruptf("row %d of %s references a missing %s row", rowid.Int64, table, parent)
	}
	return rows.Err()
}

type chainHead struct {
	seq  uint64
	hash [32]byte
}

func verifyEntries(ctx context.Context, tx conn) error {
	size, err := logSize(ctx, tx)
	if err != nil {
		return err
	}
	reader := hashReader{ctx, tx}
	heads := make(map[string]chainHead)
	// Entries are read a page at a time, and each page closed before its
	// tree hashes are queried: a PostgreSQL connection runs one query at
	// a time.
	const page = 512
	var n int64
	for {
		batch, err := entryPage(ctx, tx, n, page)
		if err != nil {
			return err
		}
		for _, e := range batch {
			if err := verifyEntry(e, n, heads, reader); err != nil {
				return err
			}
			n++
		}
		if len(batch) < page {
			break
		}
	}
	if n != size {
		return corruptf("log size %d but %d entries", size, n)
	}
	return verifySessions(ctx, tx, heads)
}

func entryPage(ctx context.Context, tx conn, from int64, limit int) ([]Entry, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE idx >= ? ORDER BY idx LIMIT ?`, from, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// verifyEntry checks entry e, expected at log index n, against its
// session's chain so far and the stored tree hashes it added.
func verifyEntry(e Entry, n int64, heads map[string]chainHead, reader hashReader) error {
	if e.Index != n {
		return corruptf("log index %d is missing", n)
	}
	head := heads[e.Session]
	if e.Seq != head.seq+1 {
		return corruptf("session %q: entry %d has sequence %d after %d", e.Session, e.Index, e.Seq, head.seq)
	}
	if e.Prev != head.hash {
		return corruptf("session %q: sequence %d does not link to sequence %d", e.Session, e.Seq, head.seq)
	}
	heads[e.Session] = chainHead{e.Seq, e.Hash}
	// Stored hashes of earlier leaves were checked already, so
	// recomputing leaf n from them checks the hashes it added.
	want, err := tlog.StoredHashes(n, e.Envelope, reader)
	if err != nil {
		return err
	}
	base := tlog.StoredHashIndex(0, n)
	indexes := make([]int64, len(want))
	for i := range indexes {
		indexes[i] = base + int64(i)
	}
	got, err := reader.ReadHashes(indexes)
	if err != nil {
		return err
	}
	for i := range want {
		if got[i] != want[i] {
			return corruptf("stored tree hash %d does not match leaf %d", indexes[i], n)
		}
	}
	return nil
}

func verifySessions(ctx context.Context, tx conn, heads map[string]chainHead) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, last_seq, head FROM sessions`)
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var (
			id   string
			last int64
			head []byte
		)
		if err := rows.Scan(&id, &last, &head); err != nil {
			return err
		}
		want, ok := heads[id]
		if !ok {
			return corruptf("session %q has no entries", id)
		}
		h, err := hash32("session head", head)
		if err != nil {
			return err
		}
		if last < 1 || uint64(last) != want.seq || h != want.hash {
			return corruptf("session %q head is sequence %d, entries end at %d", id, last, want.seq)
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if seen != len(heads) {
		return corruptf("%d sessions have entries but %d are recorded", len(heads), seen)
	}
	return nil
}

func verifyGrants(ctx context.Context, tx conn) error {
	rows, err := tx.QueryContext(ctx, `
		SELECT g.id, g.spent_uj, g.reserved_uj,
			CAST((SELECT COALESCE(SUM(amount_uj), 0) FROM ledger WHERE grant_id = g.id) AS BIGINT),
			CAST((SELECT COALESCE(SUM(r.amount_uj), 0) FROM reservation_grants rg
				JOIN reservations r ON r.id = rg.reservation WHERE rg.grant_id = g.id) AS BIGINT)
		FROM grants g`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                             string
			spent, reserved, ledger, holds int64
		)
		if err := rows.Scan(&id, &spent, &reserved, &ledger, &holds); err != nil {
			return err
		}
		if spent != ledger {
			return corruptf("grant %q has spent %d µJ but its ledger sums to %d µJ", id, spent, ledger)
		}
		if reserved != holds {
			return corruptf("grant %q has reserved %d µJ but its reservations sum to %d µJ", id, reserved, holds)
		}
	}
	return rows.Err()
}

// verifyLedgerTotals checks every ledger row's running total: the sum of
// its grant's rows up to it, which decisions compare spent_uj with.
func verifyLedgerTotals(ctx context.Context, tx conn) error {
	rows, err := tx.QueryContext(ctx, `SELECT grant_id, id, amount_uj, total_uj FROM ledger ORDER BY grant_id, id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		grant string
		sum   uint64
	)
	for rows.Next() {
		var (
			id                 string
			row, amount, total int64
		)
		if err := rows.Scan(&id, &row, &amount, &total); err != nil {
			return err
		}
		if id != grant {
			grant, sum = id, 0
		}
		a, err := uj("ledger amount_uj", amount)
		if err != nil {
			return err
		}
		var ok bool
		if sum, ok = addAmounts(sum, a); !ok || total < 0 || uint64(total) != sum {
			return corruptf("grant %q: ledger row %d has running total %d µJ, its rows sum to %d µJ", id, row, total, sum)
		}
	}
	return rows.Err()
}

func verifyCheckpoints(ctx context.Context, tx conn) error {
	size, err := logSize(ctx, tx)
	if err != nil {
		return err
	}
	type checkpointRow struct {
		id, n      int64
		root, text []byte
	}
	// Read them all first: checking one queries tree hashes, and a
	// PostgreSQL connection runs one query at a time.
	rows, err := tx.QueryContext(ctx, `SELECT id, size, root, note FROM checkpoints ORDER BY id`)
	if err != nil {
		return err
	}
	var cps []checkpointRow
	for rows.Next() {
		var c checkpointRow
		if err := rows.Scan(&c.id, &c.n, &c.root, &c.text); err != nil {
			rows.Close()
			return err
		}
		cps = append(cps, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, cp := range cps {
		id, n, root, text := cp.id, cp.n, cp.root, cp.text
		if n < 0 || n > size {
			return corruptf("checkpoint %d has size %d beyond the log's %d", id, n, size)
		}
		want, err := tlog.TreeHash(n, hashReader{ctx, tx})
		if err != nil {
			return err
		}
		if got, err := hash32("checkpoint root", root); err != nil {
			return err
		} else if got != want {
			return corruptf("checkpoint %d root does not match the log at size %d", id, n)
		}
		// No verifier is at hand, so open the note only to read its body.
		_, err = note.Open(text, note.VerifierList())
		var unverified *note.UnverifiedNoteError
		if !errors.As(err, &unverified) {
			return corruptf("checkpoint %d is not a signed note: %v", id, err)
		}
		c, err := ParseCheckpoint([]byte(unverified.Note.Text))
		if err != nil {
			return corruptf("checkpoint %d: %v", id, err)
		}
		if c.Size != n || c.Root != want {
			return corruptf("checkpoint %d note says size %d, row says %d", id, c.Size, n)
		}
	}
	return nil
}
