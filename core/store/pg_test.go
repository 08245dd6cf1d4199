package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of what only the PostgreSQL backend has: URLs, its schema record,
// an unreachable server, migrations racing across clients.

func TestPostgresOpen(t *testing.T) {
	loc := freshPostgres(t)
	u, _ := url.Parse(loc)
	password, _ := u.User.Password()

	s := backends[1].openAt(t, loc)
	if s.Backend() != "postgres" || strings.Contains(s.Path(), password) || !strings.Contains(s.Path(), "xxxxx") {
		t.Errorf("Backend %q Path %q: want postgres and the URL without its password", s.Backend(), s.Path())
	}
	// What the lock timeout becomes on the server.
	var lt string
	if err := s.db.QueryRow(`SHOW lock_timeout`).Scan(&lt); err != nil || lt != "10s" {
		t.Errorf("lock_timeout %q %v, want 10s", lt, err)
	}

	// A closed port: a prompt ErrUnavailable, not a hang or ErrLocked.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name, url string
		want      error
		msg       string
	}{
		{"unreachable", "postgres://joule:s3cret@" + closed + "/x?sslmode=disable", ErrUnavailable, ""},
		{"wrong password", strings.Replace(loc, password, "wrong-s3cret", 1), ErrUnavailable, "password authentication failed"},
		{"bad pool size", loc + "&pool_max_conns=0", nil, "pool_max_conns"},
		{"bad url", "postgres://joule:s3cret@[::1/x", nil, "not a postgres:// URL"},
		{"unknown parameter", loc + "&no_such_setting=1", nil, "no_such_setting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			s, err := Open(tt.url, WithLockTimeout(2*time.Second))
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), password) {
				t.Errorf("error shows the password: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
	if s, err := Open(loc + "&pool_max_conns=2"); err != nil {
		t.Errorf("pool_max_conns=2: %v", err)
	} else {
		if n := s.db.Stats().MaxOpenConnections; n != 2 {
			t.Errorf("max open connections %d, want 2", n)
		}
		s.Close()
	}
}

func TestPostgresRefusesForeignAndNewer(t *testing.T) {
	tests := []struct {
		name  string
		setup string
		want  error
	}{
		{"newer schema", `UPDATE joule_schema SET version = version + 1`, ErrTooNew},
		{"other application id", `UPDATE joule_schema SET application_id = 7`, ErrNotStore},
		{"tables without joule_schema", `DROP TABLE joule_schema`, ErrNotStore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := freshPostgres(t)
			s, err := Open(loc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.Exec(tt.setup); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s, err = Open(loc)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
		})
	}
}

// TestPostgresConcurrentMigrate opens one new database from many clients
// at once: the advisory lock lets exactly one create the schema.
func TestPostgresConcurrentMigrate(t *testing.T) {
	loc := freshPostgres(t)
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			s, err := Open(loc)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	s := backends[1].openAt(t, loc)
	checkConsistent(t, s)
}

// TestPostgresSchemaGolden pins the PostgreSQL schema as the server
// reports it, beside schema.golden for SQLite.
func TestPostgresSchemaGolden(t *testing.T) {
	s := backends[1].open(t)
	rows, err := s.db.Query(`SELECT table_name, column_name, data_type, is_nullable, COALESCE(collation_name, ''), COALESCE(column_default, ''), is_identity
		FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var table, col, typ, null, coll, def, ident string
		if err := rows.Scan(&table, &col, &typ, &null, &coll, &def, &ident); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s.%s %s null=%s collate=%s default=%s identity=%s\n", table, col, typ, null, coll, def, ident)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	crows, err := s.db.Query(`SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer crows.Close()
	for crows.Next() {
		var table, name, def string
		if err := crows.Scan(&table, &name, &def); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "constraint %s %s: %s\n", table, name, def)
	}
	var version, app int64
	if err := s.db.QueryRow(`SELECT version, application_id FROM joule_schema`).Scan(&version, &app); err != nil {
		t.Fatal(err)
	}
	if version != int64(len(migrations)) || app != applicationID {
		t.Errorf("joule_schema version %d application_id %#x, want %d %#x", version, app, len(migrations), applicationID)
	}
	golden(t, "schema-postgres.golden", []byte(b.String()))
}

// TestMixedConcurrency runs reservations, settling seals, plain seals and
// checkpoints from many goroutines through two handles on grants that
// overlap, so a lock order mistake on PostgreSQL would deadlock or lose an
// update: every amount must add up afterwards.
func TestMixedConcurrency(t *testing.T) { forBackends(t, testMixedConcurrency) }

func testMixedConcurrency(t *testing.T, b backend) {
	loc := b.fresh(t)
	s1 := b.openAt(t, loc, WithLockTimeout(time.Minute))
	s2 := b.openAt(t, loc, WithLockTimeout(time.Minute))
	ctx := context.Background()
	putGrant(t, s1, "root", "", 1<<40)
	putGrant(t, s1, "a", "root", 1<<40)
	putGrant(t, s1, "b", "root", 1<<40)
	const workers, each = 6, 12
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*Store{s1, s2}[w%2]
			leaf := []string{"a", "b"}[w%2]
			for i := range each {
				switch i % 3 {
				case 0: // reserve 7, then seal the call settling it at 5
					id, err := s.Reserve(ctx, []string{leaf, "root"}, 7)
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := s.Seal(ctx, SealRequest{Session: fmt.Sprintf("w%d", w), Settle: &id, SettleUJ: 5,
						Build: allowBuild("settle")}); err != nil {
						t.Error(err)
						return
					}
				case 1: // a decision debiting the other leaf's chain
					other := []string{"b", "a"}[w%2]
					if _, err := s.Seal(ctx, SealRequest{Session: fmt.Sprintf("w%d", w), Debit: []string{other, "root"}, AmountUJ: 3,
						Build: allowBuild("debit")}); err != nil {
						t.Error(err)
						return
					}
				case 2:
					if _, err := s.Checkpoint(ctx, "joule.test/mixed", testSigner(t)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	checkConsistent(t, s1)
	root, err := s1.Grant(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	perWorker := uint64(each/3) * (5 + 3)
	if root.SpentUJ != workers*perWorker || root.ReservedUJ != 0 {
		t.Errorf("root spent %d reserved %d, want %d and 0", root.SpentUJ, root.ReservedUJ, workers*perWorker)
	}
}

// FuzzParsePGURL: any store URL either parses or fails, never panics, and
// neither the error nor the URL shown repeats its password.
func FuzzParsePGURL(f *testing.F) {
	for _, s := range []string{
		"postgres://joule:s3cret@127.0.0.1:5432/joule?sslmode=disable",
		"postgresql://u:p%40ss@h/d?pool_max_conns=4&application_name=x",
		"postgres://u:pw@h/d?pool_max_conns=0",
		"postgres://u:pw@[::1/d",
		"postgres://u:pw@h:99999/d",
		"postgres:///d?host=/run/postgresql",
		"postgres://u:pw@h/d?sslmode=bogus",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		pc, shown, n, err := parsePGURL(raw, time.Second)
		var pw string
		if u, perr := url.Parse(raw); perr == nil && u.User != nil {
			pw, _ = u.User.Password()
		}
		if err != nil {
			// The error may quote the redacted URL, whose host or path
			// could contain the password's text by chance.
			msg := err.Error()
			if su, perr := url.Parse(raw); perr == nil {
				msg = strings.ReplaceAll(msg, su.Redacted(), "")
			}
			if len(pw) >= 4 && strings.Contains(msg, pw) {
				t.Errorf("error repeats the password: %v", err)
			}
			return
		}
		if pc == nil || n < 1 || n > 1000 {
			t.Fatalf("parsed to %v with %d connections", pc, n)
		}
		su, perr := url.Parse(shown)
		if perr != nil {
			t.Fatalf("shown URL %q does not parse: %v", shown, perr)
		}
		if p, ok := su.User.Password(); ok && p != "xxxxx" {
			t.Errorf("shown URL %q keeps a password", shown)
		}
	})
}
