package store

import (
	"context"
	"fmt"
)

// SessionRange returns up to limit receipts of session id with sequence
// numbers after afterSeq, in order: a page of a chain, read without loading
// the whole chain. An unknown session or a page past the end is empty.
func (s *Store) SessionRange(ctx context.Context, id string, afterSeq uint64, limit int) ([]Entry, error) {
	if err := checkID("session", id); err != nil {
		return nil, fmt.Errorf("store: session range: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.conn().QueryContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?`, id, int64(afterSeq), limit)
	if err != nil {
		return nil, fmt.Errorf("store: session %q range: %w", id, s.classify(err))
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("store: session %q range: %w", id, s.classify(err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: session %q range: %w", id, s.classify(err))
	}
	return out, nil
}
