// Package store is joule's durable store: grants and their ledger, the
// per-session receipt chains, and one Merkle log over every receipt, kept in
// one SQLite file shared by every joule process on a machine or, for a team,
// in one PostgreSQL database shared by every machine.
//
// On SQLite every write is one BEGIN IMMEDIATE transaction, so concurrent
// processes queue for the write lock instead of deadlocking on a lock
// upgrade, and every commit is fsynced (WAL, synchronous=FULL) before a
// method returns: an answered decision survives kill -9 and power loss. On
// PostgreSQL a write takes row locks on the grants it touches and, to append
// to the log, on the single log head row, always in that order. Either way
// sequence numbers, log indexes and budgets are read and written inside the
// transaction, never carried in process memory from one transaction to the
// next. Concurrent Seals of one process share a transaction and its sync
// (group commit, group.go).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	// ErrNotFound reports a grant, reservation, setting, entry or
	// checkpoint that is not in the store.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous reports an id prefix that more than one id starts with.
	ErrAmbiguous = errors.New("ambiguous id prefix")
	// ErrRevoked reports a debit or reservation against a revoked grant.
	ErrRevoked = errors.New("grant revoked")
	// ErrConflict reports a write that contradicts what the store already
	// holds, such as different bytes for an existing grant id.
	ErrConflict = errors.New("conflicts with stored data")
	// ErrLocked reports that the write lock stayed held by others past the
	// lock timeout. The gate must treat it as deny.
	ErrLocked = errors.New("database locked")
	// ErrCorrupt reports a file that is not a SQLite database, a damaged
	// database, or stored data that breaks the store's invariants.
	ErrCorrupt = errors.New("store corrupt")
	// ErrNotStore reports a healthy SQLite database that belongs to some
	// other application.
	ErrNotStore = errors.New("not a joule store")
	// ErrUnavailable reports a PostgreSQL server that cannot be reached or
	// went away mid-transaction. The gate must treat it as deny.
	ErrUnavailable = errors.New("store unavailable")
	// ErrTooNew reports a database written by a newer joule whose schema
	// this build does not know.
	ErrTooNew = errors.New("database schema is newer than this joule")
)

// BudgetError reports a grant whose remaining budget (budget - spent -
// outstanding reservations) cannot pay for an amount.
type BudgetError struct {
	GrantID     string
	RemainingUJ uint64
	NeededUJ    uint64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("grant %q budget exhausted: %d µJ remaining, %d µJ needed", e.GrantID, e.RemainingUJ, e.NeededUJ)
}

// DefaultLockTimeout is how long a write waits for the database write lock,
// across retries, before failing with ErrLocked.
const DefaultLockTimeout = 10 * time.Second

// DefaultFile is the store's file name inside $JOULE_HOME.
const DefaultFile = "joule.db"

// MaxEnvelopeSize bounds one receipt envelope; receipts carry hashes, not
// content, so anything larger is a caller bug.
const MaxEnvelopeSize = 4 << 20

// maxIDLen bounds grant, session and setting identifiers.
const maxIDLen = 512

// Store is an open store. Its methods are safe for concurrent use by many
// goroutines, and many processes (on PostgreSQL, many machines) may open the
// same store at once.
type Store struct {
	db          *sql.DB
	path        string // the SQLite file, or the PostgreSQL URL without its password
	pg          bool
	lockTimeout time.Duration
	now         func() time.Time
	// writeGate lets one goroutine of this process at a time contend for the
	// file's write lock, so goroutines queue in Go instead of polling SQLite.
	writeGate chan struct{}
	// group gathers concurrent Seals into one transaction (group.go).
	group sealGroup
	stmts *stmtCache // SQLite only
	// walBusy is set while a goroutine checks the log's size (wal.go);
	// walRetryAt is the size at which it tries again after a busy attempt.
	walBusy    atomic.Bool
	walRetryAt int64
	// grantCheck verifies grant envelopes on decision paths (signed.go).
	grantCheck grantCheckSlot
	// wit is the witness outside the database (witness.go).
	wit witnessState
	// cos serializes rounds of cosigning by the witnesses elsewhere
	// (cosign.go).
	cos cosignState
	// readOnly: opened with ReadOnly.
	readOnly bool
}

type config struct {
	lockTimeout time.Duration
	now         func() time.Time
	readOnly    bool
}

// ReadOnly opens an existing SQLite store for reading only: nothing is
// created or migrated, and every write fails. It serves the commands that
// only look (receipts ls, grant ls, verify) where the store or its
// directory is not writable, and the check of a backup.
func ReadOnly() Option {
	return func(c *config) { c.readOnly = true }
}

// Option configures Open.
type Option func(*config)

// WithLockTimeout sets how long a write waits for the write lock, across
// retries, before failing with ErrLocked. It must be positive.
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) { c.lockTimeout = d }
}

// WithClock sets the clock stamped on entries, grants and reservations.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// Open opens the store at path and migrates its schema to the current
// version. A postgres:// or postgresql:// URL opens a PostgreSQL database
// (see OpenPostgres); anything else is the path of a SQLite file, created
// (mode 0600, parent directory 0700) if missing. A database that is not a
// joule store, or was written by a newer joule, is refused.
func Open(path string, opts ...Option) (*Store, error) {
	if IsURL(path) {
		return OpenPostgres(path, opts...)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: path %q: %w", path, err)
	}
	if cfg.readOnly {
		return openReadOnly(abs, cfg)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %q: %w", abs, err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}
	// SQLite would wait for ever on a FIFO put in the store's place.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("not a regular file (%v)", st.Mode().Type())
		}
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}

	db, err := sql.Open("sqlite", dsn(abs, cfg.lockTimeout))
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}
	db.SetMaxIdleConns(4)
	s := &Store{
		db:          db,
		path:        abs,
		lockTimeout: cfg.lockTimeout,
		now:         cfg.now,
		writeGate:   make(chan struct{}, 1),
	}
	// The schema's creation and migration are work, not a wait: they get
	// a minute however short the lock timeout (a loaded machine took more
	// than 300 ms), as PostgreSQL's open does. Waiting for another
	// process's lock stays bounded by the lock timeout.
	ctx, cancel := context.WithTimeout(context.Background(), max(cfg.lockTimeout, time.Minute))
	defer cancel()
	lockDeadline := time.Now().Add(cfg.lockTimeout)
	// Switching a new file to WAL needs an exclusive lock, and SQLite
	// answers BUSY at once, without its busy handler, when another process
	// is doing the same: so several hooks starting together on a fresh
	// home retry here, within the lock timeout, rather than fail.
	for {
		err := s.init(ctx)
		if err == nil {
			s.stmts = &stmtCache{db: db}
			return s, nil
		}
		if !errors.Is(err, ErrLocked) || ctx.Err() != nil || time.Now().After(lockDeadline) {
			db.Close()
			return nil, fmt.Errorf("store: open %q: %w", abs, err)
		}
		time.Sleep(time.Duration(5+rand.IntN(45)) * time.Millisecond)
	}
}

func newConfig(opts []Option) (config, error) {
	cfg := config{lockTimeout: DefaultLockTimeout, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lockTimeout <= 0 {
		return cfg, fmt.Errorf("store: lock timeout %v is not positive", cfg.lockTimeout)
	}
	if cfg.now == nil {
		return cfg, errors.New("store: nil clock")
	}
	return cfg, nil
}

// IsURL reports whether location names a PostgreSQL database rather than
// a SQLite file.
func IsURL(location string) bool {
	l := strings.ToLower(location)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// dsn builds the modernc.org/sqlite URI. The driver applies the busy timeout
// before the other pragmas, and _txlock=immediate makes every non-read-only
// transaction BEGIN IMMEDIATE.
func dsn(abs string, lockTimeout time.Duration) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(lockTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	// A log that SQLite restarts (a resident process keeps the WAL index
	// alive) shrinks back to this size; see walTruncateAt for the rest.
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walTruncateAt))
	// A URI path must be escaped ('?', '#', '%') and absolute with forward
	// slashes, which on Windows means "/C:/...".
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	u := url.URL{Path: p}
	return "file://" + u.EscapedPath() + "?" + q.Encode()
}

// openReadOnly opens abs with SQLite's mode=ro. A WAL database needs its
// -shm index, which a reader cannot create in a directory it may not write:
// then, with no -wal file left to read (every commit checkpointed), the
// file is opened immutable, as what it is on disk.
func openReadOnly(abs string, cfg config) (*Store, error) {
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("store: open %q read-only: %w", abs, err)
	}
	var last error
	for _, mode := range []string{"mode=ro", "immutable=1"} {
		if mode == "immutable=1" {
			if _, err := os.Stat(abs + "-wal"); err == nil {
				break
			}
		}
		d := dsn(abs, cfg.lockTimeout)
		d = strings.NewReplacer("_journal_mode=WAL&", "", "_txlock=immediate", "_txlock=deferred").Replace(d) + "&" + mode
		db, err := sql.Open("sqlite", d)
		if err != nil {
			return nil, fmt.Errorf("store: open %q: %w", abs, err)
		}
		s := &Store{db: db, path: abs, lockTimeout: cfg.lockTimeout, now: cfg.now, writeGate: make(chan struct{}, 1), readOnly: true}
		ctx, cancel := context.WithTimeout(context.Background(), cfg.lockTimeout)
		version, app, err := schemaState(ctx, s.conn())
		cancel()
		if err == nil {
			err = checkSchema(version, app)
		}
		if err == nil && (app != applicationID || version != int64(len(migrations))) {
			err = fmt.Errorf("%w: schema version %d, this joule's is %d (run 'joule store migrate' where the store is writable)", ErrNotStore, version, len(migrations))
		}
		if err == nil {
			s.stmts = &stmtCache{db: db}
			return s, nil
		}
		db.Close()
		last = s.classify(err)
	}
	return nil, fmt.Errorf("store: open %q read-only: %w", abs, last)
}

// ReadOnly reports whether the store was opened with ReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// init checks the connection settings and brings the schema up to date.
func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return s.classify(err)
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want \"wal\" (is the file on a file system without shared memory?)", mode)
	}
	return s.migrate(ctx)
}

// Close publishes what a Deferred witness queued and closes the store's
// connections.
func (s *Store) Close() error {
	s.FlushWitness()
	if s.stmts != nil {
		s.stmts.close()
	}
	return s.db.Close()
}

// Path returns the absolute path of the SQLite file, or the PostgreSQL URL
// with its password removed.
func (s *Store) Path() string { return s.path }

// Backend names the database: "sqlite" or "postgres".
func (s *Store) Backend() string {
	if s.pg {
		return "postgres"
	}
	return "sqlite"
}

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// write runs fn in one write transaction (BEGIN IMMEDIATE on SQLite) and
// commits it. A busy database, and on PostgreSQL a serialization failure,
// a deadlock or a connection lost before COMMIT, is retried with jitter
// until the lock timeout; fn may therefore run more than once and must
// have no effects outside tx.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	lockCtx, cancel := context.WithTimeout(ctx, s.lockTimeout)
	defer cancel()
	// PostgreSQL queues writers on row locks in the server, and many of
	// them proceed at once on disjoint grants; SQLite has one write lock.
	if !s.pg {
		select {
		case s.writeGate <- struct{}{}:
		case <-lockCtx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return s.locked(lockCtx.Err())
		}
		defer func() { <-s.writeGate }()
	}

	for attempt := 0; ; attempt++ {
		err := s.writeOnce(lockCtx, fn)
		if err == nil {
			s.truncateWALIfLarge(ctx)
			return nil
		}
		if ctx.Err() == nil && lockCtx.Err() != nil {
			if s.pg && pgConnLost(err) {
				return unavailable(err)
			}
			return s.locked(err)
		}
		if !s.retry(err, attempt) {
			return s.classify(err)
		}
		// SQLite returns SQLITE_BUSY without waiting in a few cases (WAL
		// recovery, a snapshot that moved); PostgreSQL aborts one side of
		// a deadlock, and a pooled connection may have died with a server
		// restart. Retry the whole transaction.
		backoff := time.Duration(1+rand.IntN(20)) * time.Millisecond
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-lockCtx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return s.locked(err)
		}
	}
}

func (s *Store) locked(cause error) error {
	return fmt.Errorf("%w: held by others past the %v lock timeout: %w", ErrLocked, s.lockTimeout, cause)
}

// retry reports whether a failed write transaction is tried again.
func (s *Store) retry(err error, attempt int) bool {
	if !s.pg {
		return isBusy(err)
	}
	var ce commitError
	switch {
	case pgRetry(err):
		return true
	case errors.As(err, &ce), pgDialFailed(err):
		// A COMMIT whose answer was lost may have committed: running fn
		// again could seal the decision twice. A server that refuses
		// connections is down: deny now rather than at the lock timeout.
		return false
	case pgConnLost(err):
		// The pool handed out a connection that died with a server
		// restart; a fresh one is dialled on the next attempt.
		return attempt < 3
	}
	return false
}

// commitError marks a failure of COMMIT itself, whose outcome is unknown
// when the connection was lost.
type commitError struct{ err error }

func (e commitError) Error() string { return "commit: " + e.err.Error() }
func (e commitError) Unwrap() error { return e.err }

func (s *Store) writeOnce(ctx context.Context, fn func(ctx context.Context, tx conn) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	c := s.txConn(tx)
	c.short = !s.pg
	if err := fn(ctx, c); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		committed = true // nothing left to roll back
		return commitError{err}
	}
	committed = true
	return nil
}

// read runs fn in one read transaction, so its queries see one snapshot
// (PostgreSQL needs REPEATABLE READ for that; SQLite gives it anyway).
func (s *Store) read(ctx context.Context, fn func(tx conn) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.pg {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return s.classify(err)
	}
	defer tx.Rollback()
	if err := fn(s.txConn(tx)); err != nil {
		return s.classify(err)
	}
	return nil
}

// isBusy reports whether err is SQLite's "another connection holds the lock".
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// classify turns driver errors into the store's sentinels.
func (s *Store) classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrLocked) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnavailable) {
		return err
	}
	if s.pg {
		return s.classifyPG(err)
	}
	if isBusy(err) {
		return s.locked(err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: not a SQLite database (wrong file or damaged header): %w", ErrCorrupt, err)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	return err
}

// corruptf reports stored data that breaks an invariant.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// checkID validates a grant, session or setting identifier.
func checkID(kind, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("empty %s id", kind)
	case len(id) > maxIDLen:
		return fmt.Errorf("%s id %q is longer than %d bytes", kind, id[:32]+"...", maxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%s id %q is not valid UTF-8", kind, id)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s id %q contains a control character", kind, id)
		}
	}
	return nil
}

// checkAmount rejects amounts SQLite's signed 64-bit integers cannot hold.
func checkAmount(what string, uj uint64) error {
	if uj > math.MaxInt64 {
		return fmt.Errorf("%s %d µJ exceeds the store limit of %d µJ", what, uj, int64(math.MaxInt64))
	}
	return nil
}

// addAmounts adds µJ amounts, failing rather than leaving SQLite's range.
func addAmounts(a, b uint64) (uint64, bool) {
	sum := a + b
	if sum < a || sum > math.MaxInt64 {
		return 0, false
	}
	return sum, true
}

// unixNano and fromUnixNano convert stored timestamps.
func unixNano(t time.Time) int64 { return t.UnixNano() }

func fromUnixNano(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// uj converts a stored amount, which CHECK constraints keep non-negative.
func uj(column string, v int64) (uint64, error) {
	if v < 0 {
		return 0, corruptf("negative %s %d", column, v)
	}
	return uint64(v), nil
}

// hash32 converts a stored 32-byte hash.
func hash32(column string, b []byte) ([32]byte, error) {
	var h [32]byte
	if len(b) != len(h) {
		return h, corruptf("%s is %d bytes, want 32", column, len(b))
	}
	copy(h[:], b)
	return h, nil
}
