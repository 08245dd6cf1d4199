package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", "joule")
	path := filepath.Join(dir, "joule.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode(), want)
		}
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	var mode, sync, fk string
	for q, dst := range map[string]*string{"PRAGMA journal_mode": &mode, "PRAGMA synchronous": &sync, "PRAGMA foreign_keys": &fk} {
		if err := s.db.QueryRow(q).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	if mode != "wal" || sync != "2" || fk != "1" {
		t.Errorf("journal_mode=%s synchronous=%s foreign_keys=%s, want wal 2 (FULL) 1", mode, sync, fk)
	}
}

func TestOpenReopensExisting(t *testing.T) { forBackends(t, testOpenReopensExisting) }

func testOpenReopensExisting(t *testing.T, b backend) {
	path := b.fresh(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	putGrant(t, s, "g", "", 10)
	e := seal(t, s, "sess", []string{"g"}, 3, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, err := s.Grant(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	if g.SpentUJ != 3 {
		t.Errorf("spent after reopen %d, want 3", g.SpentUJ)
	}
	e2 := seal(t, s, "sess", nil, 0, "b")
	if e2.Seq != 2 || e2.Prev != e.Hash || e2.Index != 1 {
		t.Errorf("after reopen got seq %d index %d, want seq 2 index 1 linked to the first", e2.Seq, e2.Index)
	}
}

func TestOpenOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts []Option
		want string
	}{
		{"empty path", "", nil, "empty path"},
		{"zero lock timeout", filepath.Join(dir, "a.db"), []Option{WithLockTimeout(0)}, "lock timeout 0s is not positive"},
		{"negative lock timeout", filepath.Join(dir, "b.db"), []Option{WithLockTimeout(-time.Second)}, "not positive"},
		{"nil clock", filepath.Join(dir, "c.db"), []Option{WithClock(nil)}, "nil clock"},
		{"path is a directory", dir, nil, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.path, tt.opts...)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// storeFile returns the bytes of a closed store holding a few entries.
// pageSize 0 keeps SQLite's default; a small one gives small fuzz seeds.
func storeFile(t testing.TB, pageSize int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seed.db")
	if pageSize != 0 {
		db := rawDB(t, path)
		for _, q := range []string{fmt.Sprintf("PRAGMA page_size = %d", pageSize), "CREATE TABLE x (a)", "DROP TABLE x"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	putGrant(t, s, "g", "", 1000)
	for i := range 20 {
		seal(t, s, []string{"a", "b"}[i%2], []string{"g"}, 7, "seed")
	}
	if _, err := s.Checkpoint(context.Background(), "example.com/log", testSigner(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("WAL left behind after Close; seed file would be incomplete")
	}
	return b
}

func TestOpenBadFiles(t *testing.T) {
	good := storeFile(t, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 8192)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	// Damage every page after the first (page size 4096), keeping the
	// header and schema page intact.
	damaged := append([]byte(nil), good...)
	for i := 4096; i < len(damaged); i++ {
		damaged[i] ^= 0x5a
	}
	tests := []struct {
		name    string
		content []byte
		want    error // from Open, or else from Verify
	}{
		{"random bytes", garbage, ErrCorrupt},
		{"text file", []byte("this is not a database, just a note to self\n"), ErrCorrupt},
		{"sqlite header only", []byte("SQLite format 3\x00"), ErrCorrupt},
		{"truncated store", good[:len(good)/2], ErrCorrupt},
		{"damaged pages", damaged, ErrCorrupt},
		{"header damaged", append([]byte("SQLite format 4\x00"), good[16:]...), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "joule.db")
			if err := os.WriteFile(path, tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err == nil {
				err = s.Verify(context.Background())
				s.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			t.Logf("error: %v", err)
		})
	}
}

func TestOpenEmptyFileIsNewStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "joule.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.LogSize(context.Background()); err != nil || n != 0 {
		t.Fatalf("LogSize = %d, %v; want 0, nil", n, err)
	}
}

// rawDB opens path with the driver directly, bypassing the store.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenRefusesForeignAndNewer(t *testing.T) {
	tests := []struct {
		name  string
		setup []string // run against a fresh store file (or an empty file, for foreign)
		fresh bool     // start from an empty file instead of a store
		want  error
		msg   string
	}{
		{"other application's database", []string{"CREATE TABLE notes (body TEXT)"}, true, ErrNotStore, "no joule application id"},
		{"other application id", []string{"PRAGMA application_id = 1234"}, true, ErrNotStore, "application id 0x4d2"},
		{"user_version without app id", []string{"PRAGMA user_version = 3"}, true, ErrNotStore, "schema version 3"},
		{"newer schema", []string{"PRAGMA user_version = 99"}, false, ErrTooNew, "schema version 99, this joule knows up to 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "joule.db")
			if !tt.fresh {
				s, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			db := rawDB(t, path)
			for _, q := range tt.setup {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %q, want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
}

func TestSchemaGolden(t *testing.T) {
	s := openTest(t)
	rows, err := s.db.Query(`SELECT type, name, COALESCE(sql, '') FROM sqlite_schema ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		b.WriteString("-- " + typ + " " + name + "\n" + text + "\n\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var version, app int64
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("PRAGMA application_id").Scan(&app); err != nil {
		t.Fatal(err)
	}
	if version != int64(len(migrations)) || app != applicationID {
		t.Errorf("user_version %d application_id %#x, want %d %#x", version, app, len(migrations), applicationID)
	}
	golden(t, "schema.golden", []byte(b.String()))
}

func TestConcurrentOpenOfNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "joule.db")
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			s, err := Open(path)
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
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkConsistent(t, s)
}

func TestSettings(t *testing.T) { forBackends(t, testSettings) }

func testSettings(t *testing.T, b backend) {
	s := b.open(t)
	ctx := context.Background()
	tests := []struct {
		name, key, value string
		wantErr          string
	}{
		{"set", "active_grant", "g1", ""},
		{"replace", "active_grant", "g2", ""},
		{"empty value", "note", "", ""},
		{"empty key", "", "x", "empty setting id"},
		{"control key", "a\nb", "x", "contains a control character"},
		{"invalid utf8 key", "a\xffb", "x", "not valid UTF-8"},
		{"long key", strings.Repeat("k", 513), "x", "longer than 512 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.SetSetting(ctx, tt.key, tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SetSetting error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Setting(ctx, tt.key)
			if err != nil || got != tt.value {
				t.Fatalf("Setting = %q, %v; want %q", got, err, tt.value)
			}
		})
	}
	if _, err := s.Setting(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing setting: %v, want ErrNotFound", err)
	}
}

// holdWriteLock takes the database write lock from a separate connection
// until the returned function is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db := rawDB(t, path)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Error(err)
		}
		conn.Close()
	}
}

func TestLockedStoreFailsClosed(t *testing.T) { forBackends(t, testLockedStoreFailsClosed) }

func testLockedStoreFailsClosed(t *testing.T, b backend) {
	s := b.open(t, WithLockTimeout(300*time.Millisecond))
	putGrant(t, s, "g", "", 100)
	release := b.holdWriteLock(t, s, "g")

	start := time.Now()
	_, err := s.Seal(context.Background(), SealRequest{Session: "s", Debit: []string{"g"}, AmountUJ: 1, Build: allowBuild("x")})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Seal under a held lock: %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("gave up after %v, before the lock timeout", waited)
	}
	// The caller's own cancellation is reported as such, not as ErrLocked.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Reserve(ctx, []string{"g"}, 1); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrLocked) {
		t.Errorf("Reserve with an expiring context: %v, want context.DeadlineExceeded", err)
	}
	// Reads do not need the write lock.
	if _, err := s.Grant(context.Background(), "g"); err != nil {
		t.Errorf("read under a held write lock: %v", err)
	}
	release()
	e := seal(t, s, "s", []string{"g"}, 1, "after")
	if e.Seq != 1 || e.Index != 0 {
		t.Errorf("first seal after the lock got seq %d index %d; a failed seal left traces", e.Seq, e.Index)
	}
}

// TestWritesBeginImmediate checks a write transaction holds the write lock
// from BEGIN, before its first statement, so concurrent writers queue
// instead of failing on a lock upgrade.
func TestWritesBeginImmediate(t *testing.T) {
	s := openTest(t)
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(context.Background(), func(ctx context.Context, tx conn) error {
			close(started)
			<-finish
			return nil
		})
	}()
	<-started
	other := rawDB(t, s.Path()+"?_busy_timeout=0")
	_, err := other.Exec("BEGIN IMMEDIATE")
	if !isBusy(err) {
		t.Errorf("a second writer got %v while a store write was open, want SQLITE_BUSY", err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("write lock still held after the store's write ended: %v", err)
	}
	conn.ExecContext(context.Background(), "ROLLBACK")
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir%20", "joule.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seal(t, s, "s", nil, 0, "x")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.LogSize(context.Background()); err != nil || n != 1 {
		t.Fatalf("reopened log size %d, %v; want 1", n, err)
	}
}
