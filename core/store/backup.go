package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
)

// ErrNoOnlineBackup reports a backup or restore asked of a PostgreSQL
// store: the database server's own tools do that (pg_dump, pg_restore).
var ErrNoOnlineBackup = errors.New("a PostgreSQL store is backed up with pg_dump and restored with pg_restore (docs/team.md), not by joule")

// sqliteBackup is the online backup API of modernc.org/sqlite's connections.
type sqliteBackup interface {
	NewBackup(dst string) (*sqlite.Backup, error)
	NewRestore(src string) (*sqlite.Backup, error)
}

// Backup writes a consistent copy of the store to the new file dst (mode
// 0600) with SQLite's online backup API: writers may go on meanwhile, and
// the copy is the database as of one moment. An existing dst is refused.
func (s *Store) Backup(ctx context.Context, dst string) error {
	if s.pg {
		return fmt.Errorf("store: backup: %w", ErrNoOnlineBackup)
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if abs == s.path {
		return errors.New("store: backup: the destination is the store itself")
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	f.Close()
	err = s.withBackup(ctx, func(b sqliteBackup) (*sqlite.Backup, error) { return b.NewBackup(abs) })
	if err != nil {
		os.Remove(abs)
		return fmt.Errorf("store: backup to %s: %w", abs, err)
	}
	return nil
}

// Restore replaces the store's contents by those of the SQLite file src,
// which must be a joule store this build can read (CheckBackup), with the
// online backup API run the other way: it takes the write lock, so
// processes using the store see the old contents or the new, never a mix.
// The witness outside the store still remembers the log as it was; a
// restore that goes back in time is refused by it until the loss is
// accepted.
func (s *Store) Restore(ctx context.Context, src string) error {
	if s.pg {
		return fmt.Errorf("store: restore: %w", ErrNoOnlineBackup)
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if abs == s.path {
		return errors.New("store: restore: the source is the store itself")
	}
	if err := CheckBackup(ctx, abs); err != nil {
		return fmt.Errorf("store: restore from %s: %w", abs, err)
	}
	if err := s.withBackup(ctx, func(b sqliteBackup) (*sqlite.Backup, error) { return b.NewRestore(abs) }); err != nil {
		return fmt.Errorf("store: restore from %s: %w", abs, err)
	}
	// Cached statements and the grant checks' state describe the old
	// contents.
	s.stmts = &stmtCache{db: s.db}
	return nil
}

// CheckBackup opens the SQLite file path read-only and verifies it is a
// whole joule store: its schema, sessions, log and ledger (Verify).
func CheckBackup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	st, err := Open(path, ReadOnly())
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Verify(ctx)
}

func (s *Store) withBackup(ctx context.Context, start func(sqliteBackup) (*sqlite.Backup, error)) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.classify(err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		b, ok := dc.(sqliteBackup)
		if !ok {
			return fmt.Errorf("the SQLite driver (%T) has no backup API", dc)
		}
		bk, err := start(b)
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(256)
			if err != nil {
				bk.Finish()
				return s.classify(err)
			}
			if !more {
				return bk.Finish()
			}
			if err := ctx.Err(); err != nil {
				bk.Finish()
				return err
			}
		}
	})
}
