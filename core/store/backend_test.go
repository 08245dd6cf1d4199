package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/joulehook/joule/core/store/pgtest"
)

// The store's suite runs against both backends: each test written as
// testX(t, b) runs once on a fresh SQLite file and once on a fresh database
// of a throwaway PostgreSQL server (started on first use, stopped by
// TestMain). Without PostgreSQL binaries the postgres half skips, or fails
// when CI=true.

type backend struct {
	name  string
	fresh func(t testing.TB) string // a new, empty store location
}

var backends = []backend{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "joule.db") }},
	{"postgres", freshPostgres},
}

func forBackends(t *testing.T, f func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// open opens a fresh store, closed at the end of the test.
func (b backend) open(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return b.openAt(t, b.fresh(t), opts...)
}

// openAt opens the store at location, closed at the end of the test.
func (b backend) openAt(t testing.TB, location string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(location, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

var (
	pgOnce   sync.Once
	pgServer *pgtest.Server
	pgErr    error
)

// freshPostgres creates a database on the shared test server.
func freshPostgres(t testing.TB) string {
	t.Helper()
	bin := pgtest.Require(t)
	pgOnce.Do(func() { pgServer, pgErr = pgtest.Start(bin) })
	if pgErr != nil {
		t.Fatalf("start PostgreSQL: %v", pgErr)
	}
	u, err := pgServer.NewDatabase(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer != nil {
		if err := pgServer.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop PostgreSQL:", err)
		}
	}
	os.Exit(code)
}

// holdWriteLock holds, from a separate connection until release is called,
// what a write must wait for: SQLite's write lock, or on PostgreSQL the
// row locks of the grants ids and of the log head.
func (b backend) holdWriteLock(t *testing.T, s *Store, ids ...string) (release func()) {
	t.Helper()
	if !s.pg {
		return holdWriteLock(t, s.Path())
	}
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := conn{q: tx, pg: true}
	if _, err := lockGrants(context.Background(), c, ids); err != nil {
		t.Fatal(err)
	}
	if err := lockLog(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(); err != nil {
			t.Error(err)
		}
	}
}

var (
	zeroblob = regexp.MustCompile(`zeroblob\((\d+)\)`)
	blobLit  = regexp.MustCompile(`X'([0-9a-fA-F]*)'`)
)

// rawExec runs tampering SQL written for SQLite on either backend.
func rawExec(s *Store, query string) (sql.Result, error) {
	if s.pg {
		query = zeroblob.ReplaceAllString(query, `decode(repeat('00', $1), 'hex')`)
		query = blobLit.ReplaceAllString(query, `'\x$1'::bytea`)
	}
	return s.db.Exec(query)
}

func TestRebind(t *testing.T) {
	tests := []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE id = ?`, `SELECT a FROM t WHERE id = $1`},
		{`INSERT INTO t (a, b, c) VALUES (?, ?, ?)`, `INSERT INTO t (a, b, c) VALUES ($1, $2, $3)`},
		{strings.Repeat("?,", 11) + "?", "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12"},
	}
	for _, tt := range tests {
		if got := rebind(tt.in); got != tt.want {
			t.Errorf("rebind(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := (conn{pg: false}).bind(tt.in); got != tt.in {
			t.Errorf("SQLite bind changed %q to %q", tt.in, got)
		}
	}
}
