package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWALTruncateNeverWaits: while another connection holds a read
// transaction open (a resident server reading the log, say), the log cannot
// be truncated; writes must then neither wait for the reader nor fail, and
// the first write after the reader is gone truncates the log.
func TestWALTruncateNeverWaits(t *testing.T) {
	defer func(old int64) { walTruncateAt = old }(walTruncateAt)
	walTruncateAt = 16 << 10
	path := filepath.Join(t.TempDir(), "joule.db")
	// A truncation that waited for the reader would wait this long.
	s, err := Open(path, WithLockTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	putGrant(t, s, "g", "", 1<<40)
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reader, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	ctx := context.Background()
	if _, err := reader.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM entries").Scan(&n); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		for range 20 {
			if _, err := s.Seal(ctx, SealRequest{Session: "s", Debit: []string{"g"}, AmountUJ: 1, Build: allowBuild("held")}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a deadlock guard, far below the lock timeout
		t.Fatal("sealing waited for the reader: a truncation blocked on it")
	}
	if size := walSize(); size < walTruncateAt {
		t.Fatalf("log is %d bytes, want it past %d while the reader holds it", size, walTruncateAt)
	}
	if _, err := reader.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	// The store waits for the log to grow by as much again after a busy
	// attempt; write until it tries.
	for range 40 {
		seal(t, s, "s", []string{"g"}, 1, "free")
		if walSize() < walTruncateAt {
			break
		}
	}
	if size := walSize(); size >= walTruncateAt {
		t.Errorf("log is %d bytes after the reader left, want it truncated below %d", size, walTruncateAt)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}
