package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// GrantRecord is a grant as the store keeps it. Signed is the opaque signed
// grant; BudgetUJ comes from it, while SpentUJ, ReservedUJ and Revoked are
// the store's running state.
type GrantRecord struct {
	ID         string
	Parent     string // "" for a root grant
	Signed     []byte
	BudgetUJ   uint64
	SpentUJ    uint64 // may exceed BudgetUJ only through Settle
	ReservedUJ uint64 // outstanding reservations
	Revoked    bool
	Created    time.Time
}

// RemainingUJ is what the grant can still pay: budget - spent - reserved,
// or zero when that is negative.
func (g GrantRecord) RemainingUJ() uint64 {
	used := g.SpentUJ + g.ReservedUJ // both ≤ MaxInt64, so no overflow
	if used >= g.BudgetUJ {
		return 0
	}
	return g.BudgetUJ - used
}

// RemainingUnder is what the grant can still pay under a budget of
// budgetUJ: callers pass the budget its verified envelope signs, which
// rules over the budget_uj column.
func (g GrantRecord) RemainingUnder(budgetUJ uint64) uint64 {
	g.BudgetUJ = budgetUJ
	return g.RemainingUJ()
}

// ColumnFault says how the record disagrees with its verified envelope,
// whose id is envelopeID and which signs signed: the envelope is another
// grant's, or the budget_uj or parent column differs. It is "" when they
// agree.
func (g GrantRecord) ColumnFault(envelopeID string, signed SignedGrant) string {
	switch {
	case envelopeID != g.ID:
		return fmt.Sprintf("the stored envelope is grant %s", envelopeID)
	case g.BudgetUJ != signed.BudgetUJ:
		return fmt.Sprintf("budget_uj column says %d µJ, the signed grant %d µJ", g.BudgetUJ, signed.BudgetUJ)
	case g.Parent != signed.Parent:
		return fmt.Sprintf("parent column says %q, the signed grant %q", g.Parent, signed.Parent)
	}
	return ""
}

// LedgerEntry is one debit of a grant: by a sealed decision (Index ≥ 0,
// Reservation 0) or by a settled reservation (Index -1, Reservation > 0).
type LedgerEntry struct {
	GrantID     string
	AmountUJ    uint64
	TotalUJ     uint64 // the grant's spent after this row (AllLedger only)
	Index       int64
	Reservation int64
	Time        time.Time
}

// PutGrant stores a new grant. Putting the same id with the same parent,
// bytes and budget again is a no-op; anything else for an existing id fails
// with ErrConflict. A parent must already be stored. SpentUJ, ReservedUJ
// and Revoked belong to the store and must be zero; a zero Created is
// stamped with the store's clock.
func (s *Store) PutGrant(ctx context.Context, rec GrantRecord) error {
	if err := checkID("grant", rec.ID); err != nil {
		return fmt.Errorf("store: put grant: %w", err)
	}
	if rec.Parent != "" {
		if err := checkID("parent grant", rec.Parent); err != nil {
			return fmt.Errorf("store: put grant %q: %w", rec.ID, err)
		}
		if rec.Parent == rec.ID {
			return fmt.Errorf("store: put grant %q: grant is its own parent", rec.ID)
		}
	}
	if len(rec.Signed) == 0 {
		return fmt.Errorf("store: put grant %q: empty signed grant", rec.ID)
	}
	if err := checkAmount("budget", rec.BudgetUJ); err != nil {
		return fmt.Errorf("store: put grant %q: %w", rec.ID, err)
	}
	if rec.SpentUJ != 0 || rec.ReservedUJ != 0 || rec.Revoked {
		return fmt.Errorf("store: put grant %q: spent, reserved and revoked are kept by the store and must be zero", rec.ID)
	}
	created := rec.Created
	if created.IsZero() {
		created = s.now()
	}
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		old, err := loadGrant(ctx, tx, rec.ID)
		switch {
		case err == nil:
			if old.Parent != rec.Parent || old.BudgetUJ != rec.BudgetUJ || !bytes.Equal(old.Signed, rec.Signed) {
				return fmt.Errorf("%w: a different grant has this id", ErrConflict)
			}
			return nil
		case !errors.Is(err, ErrNotFound):
			return err
		}
		if rec.Parent != "" {
			if _, err := loadGrant(ctx, tx, rec.Parent); err != nil {
				return fmt.Errorf("parent %w", err)
			}
		}
		// On PostgreSQL another client may insert the same id between
		// the read above and this insert: then compare with its row.
		res, err := tx.ExecContext(ctx,
			`INSERT INTO grants (id, parent, signed, budget_uj, created_ns) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			rec.ID, nullable(rec.Parent), rec.Signed, int64(rec.BudgetUJ), unixNano(created))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		old, err = loadGrant(ctx, tx, rec.ID)
		if err != nil {
			return err
		}
		if old.Parent != rec.Parent || old.BudgetUJ != rec.BudgetUJ || !bytes.Equal(old.Signed, rec.Signed) {
			return fmt.Errorf("%w: a different grant has this id", ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: put grant %q: %w", rec.ID, err)
	}
	return nil
}

// Grant returns the grant with id, or an error wrapping ErrNotFound.
func (s *Store) Grant(ctx context.Context, id string) (GrantRecord, error) {
	if err := checkID("grant", id); err != nil {
		return GrantRecord{}, fmt.Errorf("store: %w", err)
	}
	g, err := loadGrant(ctx, s.conn(), id)
	if err != nil {
		return GrantRecord{}, fmt.Errorf("store: %w", s.classify(err))
	}
	return g, nil
}

// Grants returns every grant, oldest first.
func (s *Store) Grants(ctx context.Context) ([]GrantRecord, error) {
	rows, err := s.conn().QueryContext(ctx, `SELECT `+grantColumns+` FROM grants ORDER BY created_ns, id`)
	if err != nil {
		return nil, fmt.Errorf("store: grants: %w", s.classify(err))
	}
	defer rows.Close()
	var out []GrantRecord
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, fmt.Errorf("store: grants: %w", s.classify(err))
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: grants: %w", s.classify(err))
	}
	return out, nil
}

// Revoke marks the grant revoked: later debits and reservations on it, and
// so on any grant delegated from it, fail with ErrRevoked. Revoking twice
// is a no-op.
func (s *Store) Revoke(ctx context.Context, id string) error {
	if err := checkID("grant", id); err != nil {
		return fmt.Errorf("store: revoke: %w", err)
	}
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		res, err := tx.ExecContext(ctx, `UPDATE grants SET revoked = 1 WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store: revoke grant %q: %w", id, err)
	}
	return nil
}

// Ledger returns every debit of the grant, oldest first. Their sum is the
// grant's SpentUJ.
func (s *Store) Ledger(ctx context.Context, grantID string) ([]LedgerEntry, error) {
	if err := checkID("grant", grantID); err != nil {
		return nil, fmt.Errorf("store: ledger: %w", err)
	}
	rows, err := s.conn().QueryContext(ctx,
		`SELECT amount_uj, entry, reservation, created_ns FROM ledger WHERE grant_id = ? ORDER BY id`, grantID)
	if err != nil {
		return nil, fmt.Errorf("store: ledger of grant %q: %w", grantID, s.classify(err))
	}
	defer rows.Close()
	var out []LedgerEntry
	for rows.Next() {
		var (
			amount      int64
			entry, resv sql.NullInt64
			created     int64
		)
		if err := rows.Scan(&amount, &entry, &resv, &created); err != nil {
			return nil, fmt.Errorf("store: ledger of grant %q: %w", grantID, s.classify(err))
		}
		a, err := uj("ledger amount_uj", amount)
		if err != nil {
			return nil, fmt.Errorf("store: ledger of grant %q: %w", grantID, err)
		}
		le := LedgerEntry{GrantID: grantID, AmountUJ: a, Index: -1, Time: fromUnixNano(created)}
		if entry.Valid {
			le.Index = entry.Int64
		}
		if resv.Valid {
			le.Reservation = resv.Int64
		}
		out = append(out, le)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: ledger of grant %q: %w", grantID, s.classify(err))
	}
	if len(out) == 0 {
		if _, err := s.Grant(ctx, grantID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SetSetting stores value under key, replacing any previous value.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	if err := checkID("setting", key); err != nil {
		return fmt.Errorf("store: set setting: %w", err)
	}
	if s.pg && (!utf8.ValidString(value) || strings.ContainsRune(value, 0)) {
		// PostgreSQL's text holds neither; SQLite's does.
		return fmt.Errorf("store: set setting %q: value is not valid UTF-8 or contains NUL, which PostgreSQL cannot store", key)
	}
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
			key, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: set setting %q: %w", key, err)
	}
	return nil
}

// ReplaceSetting sets to value every setting under key, or under key+":"
// and a suffix, whose value is old, and returns how many it changed: a
// renewed grant takes the old one's place wherever it was active.
func (s *Store) ReplaceSetting(ctx context.Context, key, old, value string) (int64, error) {
	if err := checkID("setting", key); err != nil {
		return 0, fmt.Errorf("store: replace setting: %w", err)
	}
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		res, err := tx.ExecContext(ctx,
			`UPDATE settings SET value = ? WHERE value = ? AND (key = ? OR substr(key, 1, ?) = ?)`,
			value, old, key, int64(len(key)+1), key+":")
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: replace setting %q: %w", key, err)
	}
	return n, nil
}

// SettingsUnder returns every setting under key or key+":" and a suffix,
// by key.
func (s *Store) SettingsUnder(ctx context.Context, key string) (map[string]string, error) {
	rows, err := s.conn().QueryContext(ctx, `SELECT key, value FROM settings WHERE key = ? OR substr(key, 1, ?) = ?`, key, int64(len(key)+1), key+":")
	if err != nil {
		return nil, fmt.Errorf("store: settings %q: %w", key, s.classify(err))
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("store: settings %q: %w", key, s.classify(err))
		}
		out[k] = v
	}
	return out, rows.Err()
}

// Setting returns the value stored under key, or an error wrapping
// ErrNotFound.
func (s *Store) Setting(ctx context.Context, key string) (string, error) {
	if err := checkID("setting", key); err != nil {
		return "", fmt.Errorf("store: setting: %w", err)
	}
	var v string
	err := s.conn().QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: setting %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: setting %q: %w", key, s.classify(err))
	}
	return v, nil
}

const grantColumns = `id, parent, signed, budget_uj, spent_uj, reserved_uj, revoked, created_ns`

type scanner interface{ Scan(dest ...any) error }

func scanGrant(row scanner) (GrantRecord, error) {
	var (
		g                       GrantRecord
		parent                  sql.NullString
		budget, spent, reserved int64
		revoked                 int64
		created                 int64
	)
	if err := row.Scan(&g.ID, &parent, &g.Signed, &budget, &spent, &reserved, &revoked, &created); err != nil {
		return GrantRecord{}, err
	}
	var err error
	if g.BudgetUJ, err = uj("budget_uj", budget); err != nil {
		return GrantRecord{}, err
	}
	if g.SpentUJ, err = uj("spent_uj", spent); err != nil {
		return GrantRecord{}, err
	}
	if g.ReservedUJ, err = uj("reserved_uj", reserved); err != nil {
		return GrantRecord{}, err
	}
	g.Parent = parent.String
	g.Revoked = revoked != 0
	g.Created = fromUnixNano(created)
	return g, nil
}

func loadGrant(ctx context.Context, q querier, id string) (GrantRecord, error) {
	g, err := scanGrant(q.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM grants WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return GrantRecord{}, fmt.Errorf("grant %q: %w", id, ErrNotFound)
	}
	return g, err
}

// nullable stores "" as NULL, for optional references.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
