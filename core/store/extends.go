package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
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

// CosignedOf returns the newest checkpoint in the store's checkpoints
// table of the log origin that is signed by the log's key (logV) and
// cosigned by the witness's (cosV), and its note; nil when there is none.
// On a team's store every machine keeps there what its witnesses cosigned
// (RecordCosigned), so the others can ask a witness that serves nothing
// back (litewitness) whether it has cosigned more of that log since. A
// row of origin whose signature from either key does not verify (a
// cosignature copied from another checkpoint or another log, a forged
// one) is an error wrapping ErrCorrupt: no member can write a cosigned
// checkpoint the witness did not sign. With every, each row of origin is
// checked (store check); else the scan stops at the newest that verifies
// (the gate).
func (s *Store) CosignedOf(ctx context.Context, origin string, logV, cosV note.Verifier, every bool) (*Checkpoint, []byte, error) {
	rows, err := s.conn().QueryContext(ctx, `SELECT id, note FROM checkpoints ORDER BY id DESC`)
	if err != nil {
		return nil, nil, fmt.Errorf("store: cosigned checkpoints of %q: %w", origin, s.classify(err))
	}
	defer rows.Close()
	prefix := []byte(origin + "\n")
	var newest *Checkpoint
	var newestMsg []byte
	for rows.Next() {
		var id int64
		var msg []byte
		if err := rows.Scan(&id, &msg); err != nil {
			return nil, nil, fmt.Errorf("store: cosigned checkpoints of %q: %w", origin, s.classify(err))
		}
		if !bytes.HasPrefix(msg, prefix) {
			continue
		}
		n, err := note.Open(msg, note.VerifierList(logV, cosV))
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &invalid):
			return nil, nil, corruptf("checkpoint %d of %q carries a signature of %s that does not verify on it (copied from another checkpoint or log, or forged)", id, origin, invalid.Name)
		case err != nil:
			continue // signed by neither key
		}
		var logSigned, cosigned bool
		for _, sig := range n.Sigs {
			logSigned = logSigned || sig.Name == logV.Name() && sig.Hash == logV.KeyHash()
			cosigned = cosigned || sig.Name == cosV.Name() && sig.Hash == cosV.KeyHash()
		}
		if !logSigned || !cosigned {
			continue
		}
		cp, err := ParseCheckpoint([]byte(n.Text))
		if err != nil || cp.Origin != origin {
			return nil, nil, corruptf("checkpoint %d of %q: %v", id, origin, err)
		}
		if newest == nil {
			newest, newestMsg = &cp, msg
		}
		if !every {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("store: cosigned checkpoints of %q: %w", origin, s.classify(err))
	}
	return newest, newestMsg, nil
}

// RecordCosigned keeps a cosigned checkpoint of the log (signed note,
// with the witness's cosignature lines) in the checkpoints table, where
// every machine of a team reads it (CosignedOf). Only a PostgreSQL store
// is shared; on SQLite the home's cosigned file is the record, and this
// does nothing.
func (s *Store) RecordCosigned(ctx context.Context, cp *Checkpoint, msg []byte) error {
	if !s.pg {
		return nil
	}
	_, err := s.conn().ExecContext(ctx,
		`INSERT INTO checkpoints (size, root, note, created_ns) VALUES (?, ?, ?, ?)`,
		cp.Size, cp.Root[:], msg, unixNano(s.now()))
	if err != nil {
		return fmt.Errorf("store: record the cosigned checkpoint of size %d: %w", cp.Size, s.classify(err))
	}
	return nil
}
