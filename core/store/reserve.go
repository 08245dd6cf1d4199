package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Reserve holds amountUJ in flight against every grant in grants (all or
// none), for a metered call whose cost is known only afterwards. It fails
// with a *BudgetError if any grant's budget - spent - reserved is below
// amountUJ, or with ErrRevoked or ErrNotFound. The reservation stays until
// Settle or Release.
func (s *Store) Reserve(ctx context.Context, grants []string, amountUJ uint64) (int64, error) {
	if err := checkReserve(grants, amountUJ); err != nil {
		return 0, fmt.Errorf("store: reserve: %w", err)
	}
	var id int64
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		locked, err := lockGrants(ctx, tx, grants)
		if err != nil {
			return err
		}
		links, debitErr, err := s.checkDebit(ctx, tx, grants, amountUJ, locked)
		if err != nil {
			return err
		}
		if debitErr != nil {
			return debitErr
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO reservations (amount_uj, created_ns) VALUES (?, ?) RETURNING id`,
			int64(amountUJ), unixNano(s.now())).Scan(&id)
		if err != nil {
			return err
		}
		for _, g := range links {
			reserved, ok := addAmounts(g.ReservedUJ, amountUJ)
			if !ok {
				return fmt.Errorf("grant %q: reserved %d µJ + %d µJ overflows", g.ID, g.ReservedUJ, amountUJ)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE grants SET reserved_uj = ? WHERE id = ?`, int64(reserved), g.ID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO reservation_grants (reservation, grant_id) VALUES (?, ?)`, id, g.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: reserve %d µJ: %w", amountUJ, err)
	}
	return id, nil
}

func checkReserve(grants []string, amountUJ uint64) error {
	if len(grants) == 0 {
		return errors.New("no grants to reserve against")
	}
	if err := checkAmount("amount", amountUJ); err != nil {
		return err
	}
	return checkGrantList(grants)
}

// Settle ends reservation id by charging actualUJ, which may be more or less
// than was reserved, to each of its grants. The call it paid for has already
// happened, so the charge is recorded even if it takes a grant past its
// budget or the grant was revoked since; later debits then fail.
func (s *Store) Settle(ctx context.Context, id int64, actualUJ uint64) error {
	if err := checkAmount("actual amount", actualUJ); err != nil {
		return fmt.Errorf("store: settle reservation %d: %w", id, err)
	}
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		return s.endReservation(ctx, tx, id, &actualUJ)
	})
	if err != nil {
		return fmt.Errorf("store: settle reservation %d: %w", id, err)
	}
	return nil
}

// Release ends reservation id without charging anything.
func (s *Store) Release(ctx context.Context, id int64) error {
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		return s.endReservation(ctx, tx, id, nil)
	})
	if err != nil {
		return fmt.Errorf("store: release reservation %d: %w", id, err)
	}
	return nil
}

// ReleaseBefore releases every reservation made before t, such as those of
// a metering process that died between Reserve and Settle, and returns how
// many it released.
func (s *Store) ReleaseBefore(ctx context.Context, t time.Time) (int, error) {
	var n int
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		n = 0
		rows, err := tx.QueryContext(ctx, `SELECT id FROM reservations WHERE created_ns < ? ORDER BY id`, unixNano(t))
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			err := s.endReservation(ctx, tx, id, nil)
			if tx.pg && errors.Is(err, ErrNotFound) {
				// Settled or released by another client since the
				// query above: not ours to count.
				continue
			}
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: release reservations before %v: %w", t, err)
	}
	return n, nil
}

// endReservation removes reservation id and its hold on each grant,
// charging *actual to each when actual is not nil.
func (s *Store) endReservation(ctx context.Context, tx conn, id int64, actual *uint64) error {
	return s.drawReservation(ctx, tx, id, nil, actual)
}

// drawReservation takes *release µJ off reservation id's hold (all of it,
// ending the reservation, when release is nil) and charges *actual to each
// of its grants when actual is not nil.
func (s *Store) drawReservation(ctx context.Context, tx conn, id int64, release, actual *uint64) error {
	if tx.pg {
		held, err := reservationGrants(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := lockGrants(ctx, tx, held); err != nil {
			return err
		}
	}
	var amount int64
	err := tx.QueryRowContext(ctx, `SELECT amount_uj FROM reservations WHERE id = ?`, id).Scan(&amount)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reservation %d: %w (already settled or released?)", id, ErrNotFound)
	}
	if err != nil {
		return err
	}
	held, err := uj("reservation amount_uj", amount)
	if err != nil {
		return err
	}
	taken := held
	if release != nil {
		taken = min(*release, held)
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT g.id, g.spent_uj, g.reserved_uj FROM reservation_grants r JOIN grants g ON g.id = r.grant_id
		WHERE r.reservation = ? ORDER BY g.id`, id)
	if err != nil {
		return err
	}
	type link struct {
		id              string
		spent, reserved int64
	}
	var links []link
	for rows.Next() {
		var l link
		if err := rows.Scan(&l.id, &l.spent, &l.reserved); err != nil {
			rows.Close()
			return err
		}
		links = append(links, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(links) == 0 {
		return corruptf("reservation %d holds no grants", id)
	}
	now := unixNano(s.now())
	for _, l := range links {
		reserved, spent := uint64(max(l.reserved, 0)), uint64(max(l.spent, 0))
		if reserved < held {
			return corruptf("grant %q reserves %d µJ, less than reservation %d's %d µJ", l.id, reserved, id, held)
		}
		reserved -= taken
		if actual != nil {
			var ok bool
			if spent, ok = addAmounts(spent, *actual); !ok {
				return fmt.Errorf("grant %q: spent %d µJ + %d µJ overflows", l.id, spent, *actual)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE grants SET spent_uj = ?, reserved_uj = ? WHERE id = ?`,
			int64(spent), int64(reserved), l.id); err != nil {
			return err
		}
		if actual != nil && *actual > 0 {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO ledger (grant_id, amount_uj, total_uj, reservation, created_ns) VALUES (?, ?, ?, ?, ?)`,
				l.id, int64(*actual), int64(spent), id, now); err != nil {
				return err
			}
		}
	}
	if release != nil {
		_, err = tx.ExecContext(ctx, `UPDATE reservations SET amount_uj = ? WHERE id = ?`, int64(held-taken), id)
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM reservations WHERE id = ?`, id)
	return err
}

// reservationGrants lists the grants reservation id holds, to lock them
// before reading the reservation. An unknown reservation holds none.
func reservationGrants(ctx context.Context, tx conn, id int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT grant_id FROM reservation_grants WHERE reservation = ? ORDER BY grant_id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, err
		}
		ids = append(ids, g)
	}
	return ids, rows.Err()
}
