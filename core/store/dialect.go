package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// The store's SQL is written once, with ? placeholders and the subset of
// SQL that SQLite and PostgreSQL share; conn adapts it to the backend. What
// differs beyond that (schema types, locking, integrity checks, error
// codes) is chosen by the pg flag at the few places that need it.

// conn runs the store's SQL on one backend, inside a transaction or not.
type conn struct {
	q     querier
	pg    bool
	stmts *stmtCache // nil: each statement is prepared afresh
	// short: statements run to the end once started, see stmtContext.
	short bool
}

// conn returns a conn on the store's connection pool, for single
// statements that need no transaction.
func (s *Store) conn() conn { return conn{q: s.db, pg: s.pg, stmts: s.stmts} }

// txConn is a conn inside tx.
func (s *Store) txConn(tx *sql.Tx) conn { return conn{q: tx, pg: s.pg, stmts: s.stmts} }

// stmtCache keeps the store's statements prepared. database/sql with
// modernc's SQLite prepares every statement on every call, about a fifth of
// a decision's CPU; a statement prepared once is re-used on each connection
// (pgx caches its own, so PostgreSQL stores have none). A statement is
// prepared the second time it runs: a one-shot hook process runs each once
// and should not pay for preparing them.
type stmtCache struct {
	db   *sql.DB
	m    sync.Map // query → *sql.Stmt
	seen sync.Map // query → struct{}: ran once, unprepared
}

// get returns the prepared statement for query, or nil the first time.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if v, ok := c.m.Load(query); ok {
		return v.(*sql.Stmt), nil
	}
	if _, again := c.seen.LoadOrStore(query, struct{}{}); !again {
		return nil, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if v, loaded := c.m.LoadOrStore(query, st); loaded {
		st.Close()
		return v.(*sql.Stmt), nil
	}
	return st, nil
}

func (c *stmtCache) close() {
	c.m.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
}

// prepared returns query as a statement of the conn's transaction or pool,
// or nil to run it unprepared.
func (c conn) prepared(ctx context.Context, query string) *sql.Stmt {
	if c.stmts == nil {
		return nil
	}
	st, err := c.stmts.get(ctx, query)
	if err != nil || st == nil {
		return nil // the plain call runs it, and reports any error
	}
	if tx, ok := c.q.(*sql.Tx); ok {
		return tx.StmtContext(ctx, st)
	}
	return st
}

func (c conn) bind(query string) string {
	if !c.pg {
		return query
	}
	return rebind(query)
}

// stmtContext is the context a statement runs with. modernc's SQLite
// starts a goroutine per statement to interrupt it if its context ends,
// which costs more than the store's short statements inside a SQLite
// write transaction (which already holds every lock they need, so they
// never wait): those run without one, and a context that has ended is
// still reported before the next statement starts.
func (c conn) stmtContext(ctx context.Context) context.Context {
	if c.short && ctx.Err() == nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (c conn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = c.stmtContext(ctx)
	if st := c.prepared(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.q.ExecContext(ctx, c.bind(query), args...)
}

func (c conn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = c.stmtContext(ctx)
	if st := c.prepared(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.q.QueryContext(ctx, c.bind(query), args...)
}

func (c conn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = c.stmtContext(ctx)
	if st := c.prepared(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.q.QueryRowContext(ctx, c.bind(query), args...)
}

var rebound sync.Map // query → query with $n placeholders

// rebind turns ? placeholders into PostgreSQL's $1, $2, …. The store's
// queries are constants without ? inside literals, so a plain scan is
// exact; the result is cached because the same few queries run on every
// decision.
func rebind(query string) string {
	if v, ok := rebound.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	// Queries built at run time (IN lists) vary only in their length, so
	// the cache stays small.
	rebound.Store(query, out)
	return out
}

// lockGrants takes the row locks of the grants ids, in byte order so that
// two transactions never wait for each other's grants, and returns the
// locked grants by id (for checkDebit, saving a read of each). SQLite's
// BEGIN IMMEDIATE already holds the whole database, so there it does
// nothing and returns nil. Grant locks are taken before the log head in
// every transaction: the one lock order that keeps PostgreSQL free of
// deadlocks.
func lockGrants(ctx context.Context, tx conn, ids []string) (map[string]GrantRecord, error) {
	if !tx.pg || len(ids) == 0 {
		return nil, nil
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	args := make([]any, len(sorted))
	for i, id := range sorted {
		args[i] = id
	}
	// ORDER BY sorts before FOR UPDATE locks, so rows lock in id order.
	rows, err := tx.QueryContext(ctx, `SELECT `+grantColumns+` FROM grants WHERE id IN (?`+
		strings.Repeat(", ?", len(sorted)-1)+`) ORDER BY id FOR UPDATE`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	locked := make(map[string]GrantRecord, len(sorted))
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, err
		}
		locked[g.ID] = g
	}
	return locked, rows.Err()
}

// lockLog takes the log head's row lock, which orders every append to the
// Merkle log and every session chain: leaf indexes and sequence numbers are
// read and assigned under it, inside the database, so two machines never
// produce the same position.
func lockLog(ctx context.Context, tx conn) error {
	if !tx.pg {
		return nil
	}
	var id int64
	return tx.QueryRowContext(ctx, `SELECT id FROM log_head WHERE id = 1 FOR UPDATE`).Scan(&id)
}

// PostgreSQL error codes the store acts on
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const (
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgLockNotAvailable     = "55P03"
	pgAdminShutdown        = "57P01"
	pgCrashShutdown        = "57P02"
	pgCannotConnectNow     = "57P03"
	pgTooManyConnections   = "53300"
	pgDataCorrupted        = "XX001"
	pgIndexCorrupted       = "XX002"
)

// pgRetry reports a PostgreSQL error after which the whole transaction is
// retried: a serialization failure or a detected deadlock.
func pgRetry(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == pgSerializationFailure || pe.Code == pgDeadlockDetected
}

// pgConnLost reports an error that means the server or the connection to it
// is gone, so the transaction did not commit unless it failed in COMMIT.
func pgConnLost(err error) bool {
	if pgDialFailed(err) {
		return true
	}
	if pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The caller's deadline or the lock timeout, not the server.
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == pgAdminShutdown, pe.Code == pgCrashShutdown, pe.Code == pgCannotConnectNow,
			pe.Code == pgTooManyConnections, strings.HasPrefix(pe.Code, "08"):
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		strings.Contains(err.Error(), "conn closed")
}

// pgDialFailed reports a failure to reach the server at all, which no
// retry within one decision will fix.
func pgDialFailed(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// classifyPG turns PostgreSQL errors into the store's sentinels.
func (s *Store) classifyPG(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgLockNotAvailable, pgSerializationFailure, pgDeadlockDetected:
			return s.locked(err)
		case pgDataCorrupted, pgIndexCorrupted:
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	if pgConnLost(err) {
		return unavailable(err)
	}
	return err
}

func unavailable(err error) error {
	return &unavailableError{err}
}

// unavailableError reports a PostgreSQL server that cannot be reached or
// went away; it matches ErrUnavailable.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string {
	return ErrUnavailable.Error() + ": " + e.err.Error()
}

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }
