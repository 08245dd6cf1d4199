package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/joulehook/joule/core"
)

// ErrStoreMoved reports a store opened at another location than the one
// its home's witness is bound to: the configuration or the environment
// names another store. Decisions are refused until the move is recorded.
var ErrStoreMoved = errors.New("store moved")

// ChainHead is where a session's chain ends: its last sequence and the
// chain hash of its last receipt.
type ChainHead struct {
	Seq  uint64
	Head core.ID
}

// Extension line prefixes: the head of a witnessed chain,
// "joule-chain <session> <seq> <head, base64url>", and the store's
// location, "joule-store <location, base64url>".
const (
	chainPrefix    = "joule-chain "
	locationPrefix = "joule-store "
)

// SessionHeads returns the heads of the given sessions that exist, in one
// read: what a caller that derives state from a few sessions compares
// with what it derived it from.
func (s *Store) SessionHeads(ctx context.Context, ids ...string) (map[string]ChainHead, error) {
	out := make(map[string]ChainHead, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		if err := checkID("session", id); err != nil {
			return nil, fmt.Errorf("store: session heads: %w", err)
		}
		args[i] = id
	}
	q := `SELECT id, last_seq, head FROM sessions WHERE id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
	rows, err := s.conn().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: session heads: %w", s.classify(err))
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id   string
			seq  int64
			head []byte
		)
		if err := rows.Scan(&id, &seq, &head); err != nil {
			return nil, fmt.Errorf("store: session heads: %w", s.classify(err))
		}
		h, err := hash32("session head", head)
		if err != nil || seq < 1 {
			return nil, fmt.Errorf("store: session heads: %w", corruptf("session %q has a damaged head row", id))
		}
		out[id] = ChainHead{Seq: uint64(seq), Head: h}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: session heads: %w", s.classify(err))
	}
	return out, nil
}

// chainExtensions lists the heads of sessions as witness extension lines,
// in the transaction that sealed: one read, in the order sessions are
// given.
func chainExtensions(ctx context.Context, q querier, sessions []string) ([]string, error) {
	if len(sessions) == 0 {
		return nil, nil
	}
	args := make([]any, len(sessions))
	for i, id := range sessions {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, `SELECT id, last_seq, head FROM sessions WHERE id IN (?`+strings.Repeat(", ?", len(sessions)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	lines := map[string]string{}
	for rows.Next() {
		var (
			id   string
			seq  int64
			head []byte
		)
		if err := rows.Scan(&id, &seq, &head); err != nil {
			return nil, err
		}
		if checkLine("session", id) != nil || strings.ContainsRune(id, ' ') || len(head) != 32 || seq < 1 {
			continue // not a chain joule names; store check reports a damaged row
		}
		lines[id] = chainPrefix + id + " " + strconv.FormatInt(seq, 10) + " " + base64.RawURLEncoding.EncodeToString(head)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []string
	for _, id := range sessions {
		if l, ok := lines[id]; ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// Chain is the head of session the checkpoint records, and whether it
// records one.
func (c *Checkpoint) Chain(session string) (ChainHead, bool) {
	for _, e := range c.Extensions {
		rest, ok := strings.CutPrefix(e, chainPrefix+session+" ")
		if !ok {
			continue
		}
		seqText, headText, ok := strings.Cut(rest, " ")
		if !ok {
			return ChainHead{}, false
		}
		seq, err := strconv.ParseUint(seqText, 10, 64)
		head, herr := base64.RawURLEncoding.DecodeString(headText)
		if err != nil || herr != nil || len(head) != 32 || seq == 0 {
			return ChainHead{}, false
		}
		var h ChainHead
		h.Seq = seq
		copy(h.Head[:], head)
		return h, true
	}
	return ChainHead{}, false
}

// Location is the store location the checkpoint records, and whether it
// records one (a checkpoint written before locations were recorded does
// not).
func (c *Checkpoint) Location() (string, bool) {
	for _, e := range c.Extensions {
		if rest, ok := strings.CutPrefix(e, locationPrefix); ok {
			b, err := base64.RawURLEncoding.DecodeString(rest)
			if err != nil {
				return "", true // recorded, and matching nothing
			}
			return string(b), true
		}
	}
	return "", false
}

// checkLocation refuses a witnessed checkpoint bound to another location
// than w's: the store opened is not the one the home last appended to.
func (w *Witness) checkLocation(cp *Checkpoint, file string, size int64) error {
	if w == nil || w.Location == "" {
		return nil
	}
	loc, ok := cp.Location()
	if !ok || loc == w.Location {
		return nil
	}
	return &WitnessError{File: file, Witnessed: cp, StoreSize: size, Bound: loc,
		Problem: fmt.Sprintf("this home is bound to the store at %s, where it last appended, not to %s", loc, w.Location), err: ErrStoreMoved}
}

// CheckLocation is checkLocation for a checkpoint read from file: nil, or
// an error wrapping ErrStoreMoved.
func (w *Witness) CheckLocation(cp *Checkpoint, file string) error {
	return w.checkLocation(cp, file, -1)
}

// WitnessedChains returns the chain heads the newest verified witness
// file records, with that checkpoint; nil when there is no witness, none
// yet, or it cannot be read (the seal reports that).
func (s *Store) WitnessedChains() (map[string]ChainHead, *Checkpoint) {
	w := s.wit.w
	if w == nil || len(w.Chains) == 0 {
		return nil, nil
	}
	v := s.witnessed(false)
	if v.err != nil || v.cp == nil {
		return nil, nil
	}
	out := make(map[string]ChainHead, len(w.Chains))
	for _, id := range w.Chains {
		if h, ok := v.cp.Chain(id); ok {
			out[id] = h
		}
	}
	return out, v.cp
}

// CheckChains checks that the store holds every chain head cp, read from
// the witness file file, records (Witness.Chains): each chain at least as
// long as witnessed, its receipt at the witnessed sequence the one
// witnessed. An error wraps ErrRolledBack and names the chain.
func (s *Store) CheckChains(ctx context.Context, cp *Checkpoint, file string) error {
	return s.checkChains(ctx, s.conn(), cp, file)
}

func (s *Store) checkChains(ctx context.Context, q querier, cp *Checkpoint, file string) error {
	w := s.wit.w
	if w == nil {
		return nil
	}
	for _, id := range w.Chains {
		h, ok := cp.Chain(id)
		if !ok {
			continue
		}
		var hash []byte
		err := q.QueryRowContext(ctx, `SELECT hash FROM entries WHERE session = ? AND seq = ?`, id, int64(h.Seq)).Scan(&hash)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return &WitnessError{File: file, Witnessed: cp, StoreSize: -1, err: ErrRolledBack,
				Problem: fmt.Sprintf("the witness recorded %d receipts of session %s, and the store holds no receipt %d of it: signed receipts were taken out", h.Seq, id, h.Seq)}
		case err != nil:
			return s.classify(err)
		case !bytes.Equal(hash, h.Head[:]):
			return &WitnessError{File: file, Witnessed: cp, StoreSize: -1, err: ErrRolledBack,
				Problem: fmt.Sprintf("receipt %d of session %s is not the one the witness recorded: the chain was rewritten", h.Seq, id)}
		}
	}
	return nil
}

// CheckEntries checks that every leaf of the log from index from on has
// its receipt row: a row taken out of the entries table leaves the Merkle
// log (and so any witness) satisfied, but whatever it recorded gone from
// every chain. An error wraps ErrRolledBack. It reads the index range
// once: in the steady state, from is the witnessed size, a receipt or
// none behind the log.
func (s *Store) CheckEntries(ctx context.Context, from int64) error {
	var n, end int64
	err := s.conn().QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(idx) + 1, 0) FROM entries WHERE idx >= ?`, from).Scan(&n, &end)
	if err != nil {
		return fmt.Errorf("store: entries: %w", s.classify(err))
	}
	if end > from && n != end-from {
		return fmt.Errorf("%w: %d of the log's receipts from index %d on are missing from the store (their leaves are in the log): receipts were taken out", ErrRolledBack, end-from-n, from)
	}
	return nil
}
