package hosttest

import (
	"context"
	"database/sql"
	"testing"

	_ "modernc.org/sqlite" // the store joule itself opens
)

// LockStore holds an exclusive write transaction on the SQLite store at db
// (another writer, as a stuck process would), until the test ends or the
// returned release is called, whichever comes first.
func LockStore(t testing.TB, db string) (release func()) {
	t.Helper()
	locker, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(20000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := locker.Conn(context.Background())
	if err != nil {
		locker.Close()
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		conn.Close()
		locker.Close()
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			locker.Close()
		}
	}
	t.Cleanup(release)
	return release
}
