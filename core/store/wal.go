package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"os"
)

// walTruncateAt is the size of the write-ahead log past which a writer
// folds the log into the database and truncates it to nothing.
//
// SQLite's own auto-checkpoint is not enough for joule's one-shot hook
// processes, which open the store, seal one decision and exit. When no other
// process has the database open, the next opener rebuilds the WAL index by
// reading the whole log, and the rebuilt index says nothing in it has been
// checkpointed yet. The log is only restarted by a writer that saw it fully
// checkpointed, which a process that exits after its one write never is: so
// the log grows by every decision, every opener reads all of it, and past
// the auto-checkpoint threshold every commit copies all of it again. A
// TRUNCATE checkpoint empties it, so an opener reads at most this much.
var walTruncateAt int64 = 512 << 10

// truncateWALIfLarge runs after a committed write on SQLite. One goroutine
// of a process checks at a time; the others have nothing to add.
func (s *Store) truncateWALIfLarge(ctx context.Context) {
	if s.pg || !s.walBusy.CompareAndSwap(false, true) {
		return
	}
	defer s.walBusy.Store(false)
	fi, err := os.Stat(s.path + "-wal")
	if err != nil || fi.Size() < max(walTruncateAt, s.walRetryAt) {
		return
	}
	// Best effort: the decision is already committed, and a log that could
	// not be truncated now is truncated by a later writer. After a busy
	// attempt this process waits for the log to grow by as much again, so
	// a long reader elsewhere does not make every write try.
	if done, _ := s.truncateWAL(ctx); done {
		s.walRetryAt = 0
	} else {
		s.walRetryAt = fi.Size() + walTruncateAt
	}
}

// truncateWAL checkpoints the whole log into the database and truncates
// it. It reports whether it did; busy means another connection was reading
// or writing.
func (s *Store) truncateWAL(ctx context.Context) (done bool, err error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	// TRUNCATE waits, through the busy handler, for readers in other
	// processes to move on; a hook must not wait for a long reader, so try
	// once without waiting and leave the log to a later writer.
	if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false, err
	}
	defer func() {
		restore := fmt.Sprintf("PRAGMA busy_timeout = %d", s.lockTimeout.Milliseconds())
		if _, err := c.ExecContext(context.WithoutCancel(ctx), restore); err != nil {
			// A pooled connection that would not wait for locks would
			// fail writes at once: drop it instead.
			c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	var busy, logFrames, checkpointed int
	if err := c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed); err != nil {
		if isBusy(err) {
			return false, nil
		}
		return false, err
	}
	return busy == 0, nil
}
