package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL backend goes through database/sql with pgx's stdlib
// driver, so every query of the store is the same Go code on both backends;
// database/sql's pool reconnects after a server restart (pgx pings a
// connection idle for over a second before reusing it).

// DefaultMaxConns bounds one process's connections to PostgreSQL unless the
// URL sets pool_max_conns. Appends to the log queue on one row lock, so
// more connections add load on the server, not throughput.
const DefaultMaxConns = 8

// DefaultConnectTimeout bounds dialling and authenticating to PostgreSQL
// unless the URL sets connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// OpenPostgres opens the store in the PostgreSQL database at a
// postgres:// or postgresql:// URL (libpq's URL form: user, password, host,
// port, database and parameters such as sslmode; host=/dir for a unix
// socket) and migrates its schema to the current version. The optional
// parameter pool_max_conns bounds this process's connections (default
// DefaultMaxConns). The lock timeout becomes the session's lock_timeout, so
// a write waiting on a row lock longer fails with ErrLocked. A server that
// cannot be reached fails with ErrUnavailable; a database holding other
// tables and no joule schema with ErrNotStore.
func OpenPostgres(rawURL string, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	pc, shown, maxConns, err := parsePGURL(rawURL, cfg.lockTimeout)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*pc)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{
		db:          db,
		path:        shown,
		pg:          true,
		lockTimeout: cfg.lockTimeout,
		now:         cfg.now,
	}
	// Creating the schema of a new database takes longer than a short
	// lock timeout allows; reaching the server is bounded by the connect
	// timeout.
	ctx, cancel := context.WithTimeout(context.Background(), max(cfg.lockTimeout, time.Minute))
	defer cancel()
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", shown, s.classify(err))
	}
	return s, nil
}

// parsePGURL turns a store URL into pgx's connection settings, the URL to
// show (without its password) and the pool size. Its errors never quote
// the password.
func parsePGURL(rawURL string, lockTimeout time.Duration) (pc *pgx.ConnConfig, shown string, maxConns int, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || !IsURL(rawURL) {
		// url's errors quote the input, password and all.
		return nil, "", 0, errors.New("store: not a postgres:// URL (check its syntax; special characters in the password must be percent-encoded)")
	}
	shown = u.Redacted()
	q := u.Query()
	maxConns = DefaultMaxConns
	if v := q.Get("pool_max_conns"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return nil, "", 0, fmt.Errorf("store: %s: pool_max_conns %q: want a number of connections from 1 to 1000", shown, v)
		}
		maxConns = n
		q.Del("pool_max_conns")
		u.RawQuery = q.Encode()
	}
	pc, err = pgx.ParseConfig(u.String())
	if err != nil {
		// pgx redacts the password in its parse errors; make sure.
		msg := err.Error()
		if pw, ok := u.User.Password(); ok && pw != "" && strings.Contains(msg, pw) {
			msg = "invalid PostgreSQL URL"
		}
		return nil, "", 0, fmt.Errorf("store: %s: %s", shown, msg)
	}
	if pc.RuntimeParams == nil {
		pc.RuntimeParams = map[string]string{}
	}
	pc.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(lockTimeout.Milliseconds(), 1), 10)
	if pc.RuntimeParams["application_name"] == "" {
		pc.RuntimeParams["application_name"] = "joule"
	}
	if pc.ConnectTimeout == 0 {
		// A refused connection fails at once; this bounds a server that
		// does not answer. Not the lock timeout: a SCRAM handshake on a
		// busy machine can take longer than a short one.
		pc.ConnectTimeout = DefaultConnectTimeout
	}
	return pc, shown, maxConns, nil
}

// pgSchemaState reads the schema version and application id recorded in
// joule_schema, PostgreSQL's stand-in for SQLite's user_version and
// application_id, and counts the tables in the current schema.
func pgSchemaState(ctx context.Context, q conn) (version, app int64, tables int, err error) {
	if err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil {
		return 0, 0, 0, err
	}
	var exists bool
	if err := q.QueryRowContext(ctx, `SELECT to_regclass('joule_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, 0, 0, err
	}
	if !exists {
		return 0, 0, tables, nil
	}
	err = q.QueryRowContext(ctx, `SELECT application_id, version FROM joule_schema WHERE id = 1`).Scan(&app, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, 0, corruptf("joule_schema has no row")
	}
	return version, app, tables, err
}

// pgMigrateLock is the advisory lock key that serializes migrations across
// every process and machine: the application id.
const pgMigrateLock = applicationID

// migratePG is migrate on PostgreSQL: the same checks, a transaction
// holding an advisory lock so that two machines never migrate at once, and
// DDL that commits or rolls back with it.
func (s *Store) migratePG(ctx context.Context) error {
	version, app, _, err := pgSchemaState(ctx, s.conn())
	if err != nil {
		return err
	}
	if err := checkSchema(version, app); err != nil {
		return err
	}
	if app == applicationID && version == int64(len(migrations)) {
		return nil
	}
	// Not s.write: the lock timeout is for decisions, not for DDL.
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	err = func(tx conn) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(pgMigrateLock)); err != nil {
			return err
		}
		version, app, tables, err := pgSchemaState(ctx, tx)
		if err != nil {
			return err
		}
		if err := checkSchema(version, app); err != nil {
			return err
		}
		if app == 0 {
			if tables != 0 {
				return fmt.Errorf("%w: the database's schema has %d tables and no joule_schema table", ErrNotStore, tables)
			}
			if _, err := tx.ExecContext(ctx, `
CREATE TABLE joule_schema (
	id             INTEGER PRIMARY KEY CHECK (id = 1),
	application_id BIGINT NOT NULL,
	version        BIGINT NOT NULL
)`); err != nil {
				return fmt.Errorf("create joule_schema (does this role own the database? run 'joule store migrate' as its owner): %w", err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO joule_schema (id, application_id, version) VALUES (1, ?, 0)`, int64(applicationID)); err != nil {
				return err
			}
		}
		for v := version; v < int64(len(migrations)); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v].postgres); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE joule_schema SET version = ? WHERE id = 1`, int64(len(migrations)))
		return err
	}(conn{q: sqlTx, pg: true})
	if err != nil {
		return err
	}
	return sqlTx.Commit()
}

// verifyPostgres is Verify's database-level check on PostgreSQL, which
// enforces foreign keys itself and has no quick_check: the schema is the
// one this build knows and the log head row exists, and no row references
// a missing one (a restore with --disable-triggers, say, could break that).
func verifyPostgres(ctx context.Context, tx conn) error {
	version, app, _, err := pgSchemaState(ctx, tx)
	if err != nil {
		return err
	}
	if app != applicationID || version != int64(len(migrations)) {
		return corruptf("schema version %d application id %#x, want %d %#x", version, app, len(migrations), applicationID)
	}
	var heads int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM log_head`).Scan(&heads); err != nil {
		return err
	}
	if heads != 1 {
		return corruptf("log_head has %d rows, want 1", heads)
	}
	for _, c := range []struct{ what, query string }{
		{"entry references a missing session", `SELECT count(*) FROM entries e LEFT JOIN sessions s ON s.id = e.session WHERE s.id IS NULL`},
		{"grant references a missing parent", `SELECT count(*) FROM grants g LEFT JOIN grants p ON p.id = g.parent WHERE g.parent IS NOT NULL AND p.id IS NULL`},
		{"ledger row references a missing grant", `SELECT count(*) FROM ledger l LEFT JOIN grants g ON g.id = l.grant_id WHERE g.id IS NULL`},
		{"ledger row references a missing entry", `SELECT count(*) FROM ledger l LEFT JOIN entries e ON e.idx = l.entry WHERE l.entry IS NOT NULL AND e.idx IS NULL`},
		{"reservation hold references a missing grant or reservation", `SELECT count(*) FROM reservation_grants rg LEFT JOIN grants g ON g.id = rg.grant_id LEFT JOIN reservations r ON r.id = rg.reservation WHERE g.id IS NULL OR r.id IS NULL`},
	} {
		var n int64
		if err := tx.QueryRowContext(ctx, c.query).Scan(&n); err != nil {
			return err
		}
		if n != 0 {
			return corruptf("%d rows: %s", n, c.what)
		}
	}
	return nil
}
