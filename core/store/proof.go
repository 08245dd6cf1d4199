package store

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Inclusion is a proof, checked against Root, that the log entry at Index
// is in the log's tree of Size.
type Inclusion struct {
	Index    int64
	Envelope []byte    // the entry's record
	Leaf     tlog.Hash // tlog.RecordHash(Envelope)
	Size     int64
	Root     tlog.Hash
	Proof    tlog.RecordProof
}

// Consistency is a proof, checked against both roots, that the log's tree
// of Size extends the tree of OldSize.
type Consistency struct {
	OldSize int64
	OldRoot tlog.Hash
	Size    int64
	Root    tlog.Hash
	Proof   tlog.TreeProof
}

// treeAt returns size, or the log's size when size is 0, with its root.
func (s *Store) treeAt(ctx context.Context, size int64) (int64, tlog.Hash, error) {
	if size == 0 {
		n, err := s.LogSize(ctx)
		if err != nil {
			return 0, tlog.Hash{}, err
		}
		size = n
	}
	root, err := s.TreeHash(ctx, size)
	return size, root, err
}

// ProveInclusion proves that the entry at index is in the log's tree of
// size (0: the whole log). The proof is checked before it is returned, so
// a store whose hashes disagree with its entries fails here.
func (s *Store) ProveInclusion(ctx context.Context, index, size int64) (Inclusion, error) {
	size, root, err := s.treeAt(ctx, size)
	if err != nil {
		return Inclusion{}, err
	}
	en, err := s.EntryAt(ctx, index)
	if err != nil {
		return Inclusion{}, err
	}
	proof, err := s.ProveRecord(ctx, index, size)
	if err != nil {
		return Inclusion{}, err
	}
	leaf := tlog.RecordHash(en.Envelope)
	if err := tlog.CheckRecord(proof, size, root, index, leaf); err != nil {
		return Inclusion{}, err
	}
	return Inclusion{Index: index, Envelope: en.Envelope, Leaf: leaf, Size: size, Root: root, Proof: proof}, nil
}

// ProveConsistency proves that the log's tree of size (0: the whole log)
// extends its own tree of oldSize, both roots as the store computes them.
func (s *Store) ProveConsistency(ctx context.Context, oldSize, size int64) (Consistency, error) {
	size, root, err := s.treeAt(ctx, size)
	if err != nil {
		return Consistency{}, err
	}
	proof, err := s.ProveTree(ctx, oldSize, size)
	if err != nil {
		return Consistency{}, err
	}
	oldRoot, err := s.TreeHash(ctx, oldSize)
	if err != nil {
		return Consistency{}, err
	}
	if err := tlog.CheckTree(proof, size, root, oldSize, oldRoot); err != nil {
		return Consistency{}, err
	}
	return Consistency{OldSize: oldSize, OldRoot: oldRoot, Size: size, Root: root, Proof: proof}, nil
}

// ProveExtends proves that the log's tree of size (0: the whole log)
// extends the checkpoint old. The old root is the one old signed, never
// the store's own idea of it: that is what catches a log rolled back or
// rewritten, reported as an error wrapping ErrRolledBack. from names where
// old came from, for that error.
func (s *Store) ProveExtends(ctx context.Context, old Checkpoint, from string, size int64) (Consistency, error) {
	size, root, err := s.treeAt(ctx, size)
	if err != nil {
		return Consistency{}, err
	}
	if old.Size > size {
		return Consistency{}, fmt.Errorf("%w: the checkpoint of %s is of log size %d, but the store holds %d receipts", ErrRolledBack, from, old.Size, size)
	}
	c := Consistency{OldSize: old.Size, OldRoot: old.Root, Size: size, Root: root}
	if old.Size == 0 {
		return c, nil // every log extends the empty one
	}
	if c.Proof, err = s.ProveTree(ctx, old.Size, size); err != nil {
		return Consistency{}, err
	}
	if err := tlog.CheckTree(c.Proof, size, root, old.Size, old.Root); err != nil {
		return Consistency{}, fmt.Errorf("%w: the log of size %d is not an extension of the checkpoint of %s (size %d, root %s): %v", ErrRolledBack, size, from, old.Size, old.Root, err)
	}
	return c, nil
}

// VerifyLatestCheckpoint checks the last checkpoint stored: its signature
// with v, and that the log as it is now extends it. A store that has
// signed no checkpoint yet passes.
func (s *Store) VerifyLatestCheckpoint(ctx context.Context, v note.Verifier) error {
	text, err := s.LatestCheckpoint(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := note.Open(text, note.VerifierList(v))
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	cp, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return err
	}
	size, err := s.LogSize(ctx)
	if err != nil {
		return err
	}
	if cp.Size > size {
		return fmt.Errorf("checkpoint of size %d is ahead of the log (%d)", cp.Size, size)
	}
	if cp.Size == 0 {
		return nil // every log extends the empty one
	}
	proof, err := s.ProveTree(ctx, cp.Size, size)
	if err != nil {
		return err
	}
	head, err := s.TreeHash(ctx, size)
	if err != nil {
		return err
	}
	return tlog.CheckTree(proof, size, head, cp.Size, cp.Root)
}

// Newest reads files (w.Files when none are given) as witness files of w
// and returns the newest checkpoint among them, verified with w.Verifier,
// and its signed note; nil when none of the files exists.
func (w *Witness) Newest(files ...string) (*Checkpoint, []byte, error) {
	if len(files) == 0 {
		files = w.Files
	}
	var best *Checkpoint
	var bestMsg []byte
	for _, f := range files {
		cp, msg, err := ReadWitnessFile(f, w.Origin, w.Verifier)
		if err != nil {
			return nil, nil, err
		}
		if cp != nil && (best == nil || cp.Size > best.Size) {
			best, bestMsg = cp, msg
		}
	}
	return best, bestMsg, nil
}

// SessionID returns the session id arg names: the id itself, or the one
// id it is a unique prefix of. An arg that names no session comes back as
// given, so that the caller reports it as it does any unknown session; an
// ambiguous prefix is an error wrapping ErrAmbiguous.
func (s *Store) SessionID(ctx context.Context, arg string) (string, error) {
	id, err := s.ResolveSession(ctx, arg)
	switch {
	case err == nil:
		return id, nil
	case errors.Is(err, ErrAmbiguous):
		return "", err
	}
	return arg, nil
}
