package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core"
)

// SessionInfo summarizes one session's receipt chain.
type SessionInfo struct {
	ID    string
	Count uint64   // receipts in the chain, which are numbered 1..Count
	Head  [32]byte // chain hash of the last receipt
	First time.Time
	Last  time.Time
}

// Sessions returns every session, oldest first.
func (s *Store) Sessions(ctx context.Context) ([]SessionInfo, error) {
	rows, err := s.conn().QueryContext(ctx, `SELECT id, last_seq, head, first_ns, last_ns FROM sessions ORDER BY first_ns, id`)
	if err != nil {
		return nil, fmt.Errorf("store: sessions: %w", s.classify(err))
	}
	defer rows.Close()
	var out []SessionInfo
	for rows.Next() {
		var (
			si          SessionInfo
			count       int64
			head        []byte
			first, last int64
		)
		if err := rows.Scan(&si.ID, &count, &head, &first, &last); err != nil {
			return nil, fmt.Errorf("store: sessions: %w", s.classify(err))
		}
		if count < 1 {
			return nil, fmt.Errorf("store: sessions: %w", corruptf("session %q has %d receipts", si.ID, count))
		}
		si.Count = uint64(count)
		if si.Head, err = hash32("session head", head); err != nil {
			return nil, fmt.Errorf("store: sessions: %w", err)
		}
		si.First, si.Last = fromUnixNano(first), fromUnixNano(last)
		out = append(out, si)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: sessions: %w", s.classify(err))
	}
	return out, nil
}

// Session returns the session's receipts in sequence order, or an error
// wrapping ErrNotFound for an unknown session.
func (s *Store) Session(ctx context.Context, id string) ([]Entry, error) {
	if err := checkID("session", id); err != nil {
		return nil, fmt.Errorf("store: session: %w", err)
	}
	rows, err := s.conn().QueryContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE session = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("store: session %q: %w", id, s.classify(err))
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("store: session %q: %w", id, s.classify(err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: session %q: %w", id, s.classify(err))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("store: session %q: %w", id, ErrNotFound)
	}
	return out, nil
}

// EntryAt returns the receipt at a Merkle log index.
func (s *Store) EntryAt(ctx context.Context, index int64) (Entry, error) {
	e, err := scanEntry(s.conn().QueryRowContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE idx = ?`, index))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, fmt.Errorf("store: entry at log index %d: %w", index, ErrNotFound)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("store: entry at log index %d: %w", index, s.classify(err))
	}
	return e, nil
}

// EntryByHash returns the receipt whose chain hash is h.
func (s *Store) EntryByHash(ctx context.Context, h [32]byte) (Entry, error) {
	e, err := scanEntry(s.conn().QueryRowContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE hash = ?`, h[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, fmt.Errorf("store: entry with hash %x: %w", h, ErrNotFound)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("store: entry with hash %x: %w", h, s.classify(err))
	}
	return e, nil
}

const entryColumns = `idx, session, seq, prev, hash, envelope, created_ns`

func scanEntry(row scanner) (Entry, error) {
	var (
		e          Entry
		seq        int64
		prev, hash []byte
		created    int64
	)
	if err := row.Scan(&e.Index, &e.Session, &seq, &prev, &hash, &e.Envelope, &created); err != nil {
		return Entry{}, err
	}
	if seq < 1 {
		return Entry{}, corruptf("entry %d has sequence %d", e.Index, seq)
	}
	e.Seq = uint64(seq)
	var err error
	if e.Prev, err = hash32("entry prev", prev); err != nil {
		return Entry{}, err
	}
	if e.Hash, err = hash32("entry hash", hash); err != nil {
		return Entry{}, err
	}
	if core.Sum(e.Envelope) != e.Hash {
		return Entry{}, corruptf("session %q seq %d (log index %d): the envelope does not match its hash %x", e.Session, e.Seq, e.Index, e.Hash)
	}
	e.Time = fromUnixNano(created)
	return e, nil
}

// StoredEntry is a receipt's row as stored, damaged or not.
type StoredEntry struct {
	Entry
	// Fault says how the row breaks the store's invariants (an envelope
	// that does not hash to its stored hash, a malformed column); empty
	// when it does not.
	Fault string
}

// SessionRows returns every row of session id in sequence order, as
// stored: unlike Session, a damaged row is returned, with its Fault,
// rather than failing the whole session, so that damage can be shown
// receipt by receipt. An unknown session is an error wrapping ErrNotFound.
func (s *Store) SessionRows(ctx context.Context, id string) ([]StoredEntry, error) {
	if err := checkID("session", id); err != nil {
		return nil, fmt.Errorf("store: session: %w", err)
	}
	rows, err := s.conn().QueryContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE session = ? ORDER BY seq, idx`, id)
	if err != nil {
		return nil, fmt.Errorf("store: session %q: %w", id, s.classify(err))
	}
	defer rows.Close()
	var out []StoredEntry
	for rows.Next() {
		var (
			e          StoredEntry
			seq        int64
			prev, hash []byte
			created    int64
		)
		if err := rows.Scan(&e.Index, &e.Session, &seq, &prev, &hash, &e.Envelope, &created); err != nil {
			return nil, fmt.Errorf("store: session %q: %w", id, s.classify(err))
		}
		var faults []string
		if seq < 1 {
			faults = append(faults, fmt.Sprintf("sequence %d", seq))
		} else {
			e.Seq = uint64(seq)
		}
		if len(prev) == len(e.Prev) {
			copy(e.Prev[:], prev)
		} else {
			faults = append(faults, fmt.Sprintf("prev is %d bytes", len(prev)))
		}
		if len(hash) == len(e.Hash) {
			copy(e.Hash[:], hash)
			if core.Sum(e.Envelope) != e.Hash {
				faults = append(faults, "the envelope does not match its stored hash")
			}
		} else {
			faults = append(faults, fmt.Sprintf("hash is %d bytes", len(hash)))
		}
		e.Time = fromUnixNano(created)
		if len(faults) > 0 {
			e.Fault = strings.Join(faults, "; ")
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: session %q: %w", id, s.classify(err))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("store: session %q: %w", id, ErrNotFound)
	}
	return out, nil
}

// ResolveGrant returns the id of the one grant whose id is, or starts
// with, prefix (as git takes a unique prefix of a commit id). It fails with
// ErrNotFound when none does and ErrAmbiguous, naming some, when several do.
func (s *Store) ResolveGrant(ctx context.Context, prefix string) (string, error) {
	return s.resolve(ctx, "grant", `SELECT id FROM grants WHERE id = ? OR substr(id, 1, ?) = ? ORDER BY id LIMIT 4`, prefix)
}

// ResolveSession is ResolveGrant for session ids.
func (s *Store) ResolveSession(ctx context.Context, prefix string) (string, error) {
	return s.resolve(ctx, "session", `SELECT id FROM sessions WHERE id = ? OR substr(id, 1, ?) = ? ORDER BY id LIMIT 4`, prefix)
}

func (s *Store) resolve(ctx context.Context, kind, query, prefix string) (string, error) {
	if err := checkID(kind, prefix); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	rows, err := s.conn().QueryContext(ctx, query, prefix, int64(len(prefix)), prefix)
	if err != nil {
		return "", fmt.Errorf("store: resolve %s: %w", kind, s.classify(err))
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", fmt.Errorf("store: resolve %s: %w", kind, s.classify(err))
		}
		if id == prefix {
			return id, nil
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("store: resolve %s: %w", kind, s.classify(err))
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("store: %s %q: %w", kind, prefix, ErrNotFound)
	case 1:
		return ids[0], nil
	}
	some := strings.Join(ids[:min(len(ids), 3)], ", ")
	if len(ids) > 3 {
		some += ", …"
	}
	return "", fmt.Errorf("store: %s %q: %w: it matches %s", kind, prefix, ErrAmbiguous, some)
}

// Summary is the size of a store at one look: what store check reports
// once everything in it is checked.
type Summary struct {
	LogSize  int64
	Root     tlog.Hash // the root of the log's tree of LogSize
	Sessions int
	Grants   int
}

// Summarize counts the store's log, sessions and grants and hashes its
// log's tree.
func (s *Store) Summarize(ctx context.Context) (Summary, error) {
	var sum Summary
	var err error
	if sum.LogSize, err = s.LogSize(ctx); err != nil {
		return Summary{}, err
	}
	sessions, err := s.Sessions(ctx)
	if err != nil {
		return Summary{}, err
	}
	grants, err := s.Grants(ctx)
	if err != nil {
		return Summary{}, err
	}
	if sum.Root, err = s.TreeHash(ctx, sum.LogSize); err != nil {
		return Summary{}, err
	}
	sum.Sessions, sum.Grants = len(sessions), len(grants)
	return sum, nil
}
