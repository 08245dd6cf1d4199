package store

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// The Merkle log is an RFC 6962 tree over every envelope, in log index
// order, kept as tlog's stored hashes (one row per stored hash index) so
// tree hashes and proofs read O(log n) rows instead of recomputing.

// hashReader reads stored hashes inside one transaction.
type hashReader struct {
	ctx context.Context
	q   querier
}

func (r hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	if len(indexes) == 0 {
		return out, nil
	}
	// One query for all of them: on PostgreSQL each query is a round trip.
	var q strings.Builder
	q.WriteString(`SELECT id, hash FROM tlog_hashes WHERE id IN (?`)
	q.WriteString(strings.Repeat(", ?", len(indexes)-1))
	q.WriteString(`)`)
	args := make([]any, len(indexes))
	for i, id := range indexes {
		args[i] = id
	}
	rows, err := r.q.QueryContext(r.ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[int64]tlog.Hash, len(indexes))
	for rows.Next() {
		var (
			id int64
			b  []byte
		)
		if err := rows.Scan(&id, &b); err != nil {
			return nil, err
		}
		if found[id], err = hash32("stored tree hash", b); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, id := range indexes {
		h, ok := found[id]
		if !ok {
			return nil, corruptf("stored tree hash %d is missing", id)
		}
		out[i] = h
	}
	return out, nil
}

// logSize returns the number of leaves, checking that the stored hashes
// match it so a damaged log is never extended.
func logSize(ctx context.Context, q querier) (int64, error) {
	// One statement, so PostgreSQL reads both from one snapshot even
	// outside a transaction; each is one step down a primary key index.
	var size, stored int64
	if err := q.QueryRowContext(ctx, `SELECT
		(SELECT COALESCE(MAX(idx) + 1, 0) FROM entries),
		(SELECT COALESCE(MAX(id) + 1, 0) FROM tlog_hashes)`).Scan(&size, &stored); err != nil {
		return 0, err
	}
	if err := checkStored(size, stored); err != nil {
		return 0, err
	}
	return size, nil
}

// checkStored checks the number of stored tree hashes against the number
// of leaves, so a damaged log is never extended.
func checkStored(size, stored int64) error {
	if want := tlog.StoredHashCount(size); stored != want {
		return corruptf("log has %d entries and %d stored tree hashes, want %d", size, stored, want)
	}
	return nil
}

// appendLeaf stores the tree hashes that leaf idx completes.
func appendLeaf(ctx context.Context, tx conn, idx int64, data []byte) error {
	hashes, err := tlog.StoredHashes(idx, data, hashReader{ctx, tx})
	if err != nil {
		return err
	}
	return insertHashes(ctx, tx, tlog.StoredHashIndex(0, idx), hashes)
}

// LogSize returns the number of receipts in the Merkle log.
func (s *Store) LogSize(ctx context.Context) (int64, error) {
	n, err := logSize(ctx, s.conn())
	if err != nil {
		return 0, fmt.Errorf("store: log size: %w", s.classify(err))
	}
	return n, nil
}

// TreeHash returns the root hash of the log's first n leaves.
func (s *Store) TreeHash(ctx context.Context, n int64) (tlog.Hash, error) {
	var h tlog.Hash
	err := s.read(ctx, func(tx conn) error {
		if err := checkTreeSize(ctx, tx, n); err != nil {
			return err
		}
		var err error
		h, err = tlog.TreeHash(n, hashReader{ctx, tx})
		return err
	})
	if err != nil {
		return tlog.Hash{}, fmt.Errorf("store: tree hash of size %d: %w", n, err)
	}
	return h, nil
}

// ProveRecord returns the proof that the log's tree of size treeSize
// contains the leaf at index (check it with tlog.CheckRecord).
func (s *Store) ProveRecord(ctx context.Context, index, treeSize int64) (tlog.RecordProof, error) {
	var p tlog.RecordProof
	err := s.read(ctx, func(tx conn) error {
		if index < 0 || index >= treeSize {
			return fmt.Errorf("index %d is outside the tree of size %d", index, treeSize)
		}
		if err := checkTreeSize(ctx, tx, treeSize); err != nil {
			return err
		}
		var err error
		p, err = tlog.ProveRecord(treeSize, index, hashReader{ctx, tx})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: prove record %d in tree of size %d: %w", index, treeSize, err)
	}
	return p, nil
}

// ProveTree returns the proof that the log's tree of size newSize extends
// the tree of size oldSize (check it with tlog.CheckTree).
func (s *Store) ProveTree(ctx context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
	var p tlog.TreeProof
	err := s.read(ctx, func(tx conn) error {
		if oldSize < 1 || oldSize > newSize {
			return fmt.Errorf("old size %d must be in [1, new size %d]", oldSize, newSize)
		}
		if err := checkTreeSize(ctx, tx, newSize); err != nil {
			return err
		}
		var err error
		p, err = tlog.ProveTree(newSize, oldSize, hashReader{ctx, tx})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: prove tree %d extends %d: %w", newSize, oldSize, err)
	}
	return p, nil
}

func checkTreeSize(ctx context.Context, q querier, n int64) error {
	size, err := logSize(ctx, q)
	if err != nil {
		return err
	}
	if n < 0 || n > size {
		return fmt.Errorf("tree size %d is outside the log of size %d", n, size)
	}
	return nil
}
