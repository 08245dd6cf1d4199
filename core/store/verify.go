package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Verify checks the whole store, reading every row: SQLite's own integrity
// and foreign keys, each session chain (sequences 1..n, every Prev the
// previous Hash, every Hash the BLAKE3 of its envelope), the Merkle log
// (every stored hash recomputed from the envelopes), every grant's spent and
// reserved against its ledger and reservations, and every checkpoint's root.
// It returns nil or an error wrapping ErrCorrupt that names the first fault.
// Its cost grows with the store; the hot paths do not call it.
func (s *Store) Verify(ctx context.Context) error {
	err := s.read(ctx, func(tx *sql.Tx) error {
		for _, check := range []func(context.Context, *sql.Tx) error{
			verifySQLite, verifyEntries, verifyGrants, verifyCheckpoints,
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

func verifySQLite(ctx context.Context, tx *sql.Tx) error {
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

func verifyEntries(ctx context.Context, tx *sql.Tx) error {
	size, err := logSize(ctx, tx)
	if err != nil {
		return err
	}
	reader := hashReader{ctx, tx}
	heads := make(map[string]chainHead)
	rows, err := tx.QueryContext(ctx, `SELECT `+entryColumns+` FROM entries ORDER BY idx`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var n int64
	for ; rows.Next(); n++ {
		e, err := scanEntry(rows)
		if err != nil {
			return err
		}
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
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != size {
		return corruptf("log size %d but %d entries", size, n)
	}
	return verifySessions(ctx, tx, heads)
}

func verifySessions(ctx context.Context, tx *sql.Tx, heads map[string]chainHead) error {
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

func verifyGrants(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `
		SELECT g.id, g.spent_uj, g.reserved_uj,
			(SELECT COALESCE(SUM(amount_uj), 0) FROM ledger WHERE grant_id = g.id),
			(SELECT COALESCE(SUM(r.amount_uj), 0) FROM reservation_grants rg
				JOIN reservations r ON r.id = rg.reservation WHERE rg.grant_id = g.id)
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

func verifyCheckpoints(ctx context.Context, tx *sql.Tx) error {
	size, err := logSize(ctx, tx)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, size, root, note FROM checkpoints ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, n      int64
			root, text []byte
		)
		if err := rows.Scan(&id, &n, &root, &text); err != nil {
			return err
		}
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
	return rows.Err()
}
