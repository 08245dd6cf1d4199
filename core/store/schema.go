package store

import (
	"context"
	"database/sql"
	"fmt"
)

// applicationID marks the file as a joule store in the SQLite header
// ("JOUL"), so a database of some other application is never migrated.
const applicationID = 0x4a4f554c

// migrations[i] takes the schema from version i to version i+1. Entries are
// append-only: never edit a released migration, add a new one.
var migrations = []string{
	// 1: grants, ledger, reservations, settings, sessions, entries, tlog
	// hashes, checkpoints. Amounts are µJ in signed 64-bit INTEGERs; the Go
	// side rejects values above math.MaxInt64. Times are Unix nanoseconds.
	`
CREATE TABLE grants (
	id          TEXT PRIMARY KEY NOT NULL,
	parent      TEXT REFERENCES grants(id),
	signed      BLOB NOT NULL,
	budget_uj   INTEGER NOT NULL CHECK (budget_uj >= 0),
	spent_uj    INTEGER NOT NULL DEFAULT 0 CHECK (spent_uj >= 0),
	reserved_uj INTEGER NOT NULL DEFAULT 0 CHECK (reserved_uj >= 0),
	revoked     INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),
	created_ns  INTEGER NOT NULL
) STRICT;

CREATE TABLE settings (
	key   TEXT PRIMARY KEY NOT NULL,
	value TEXT NOT NULL
) STRICT;

CREATE TABLE sessions (
	id       TEXT PRIMARY KEY NOT NULL,
	last_seq INTEGER NOT NULL CHECK (last_seq >= 1),
	head     BLOB NOT NULL CHECK (length(head) = 32),
	first_ns INTEGER NOT NULL,
	last_ns  INTEGER NOT NULL
) STRICT;

CREATE TABLE entries (
	idx        INTEGER PRIMARY KEY CHECK (idx >= 0),
	session    TEXT NOT NULL REFERENCES sessions(id),
	seq        INTEGER NOT NULL CHECK (seq >= 1),
	prev       BLOB NOT NULL CHECK (length(prev) = 32),
	hash       BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
	envelope   BLOB NOT NULL,
	created_ns INTEGER NOT NULL,
	UNIQUE (session, seq)
) STRICT;

CREATE TABLE tlog_hashes (
	id   INTEGER PRIMARY KEY CHECK (id >= 0),
	hash BLOB NOT NULL CHECK (length(hash) = 32)
) STRICT;

CREATE TABLE reservations (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	amount_uj  INTEGER NOT NULL CHECK (amount_uj >= 0),
	created_ns INTEGER NOT NULL
) STRICT;

CREATE TABLE reservation_grants (
	reservation INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
	grant_id    TEXT NOT NULL REFERENCES grants(id),
	PRIMARY KEY (reservation, grant_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE ledger (
	id          INTEGER PRIMARY KEY,
	grant_id    TEXT NOT NULL REFERENCES grants(id),
	amount_uj   INTEGER NOT NULL CHECK (amount_uj >= 0),
	entry       INTEGER REFERENCES entries(idx),
	reservation INTEGER,
	created_ns  INTEGER NOT NULL,
	CHECK ((entry IS NULL) <> (reservation IS NULL))
) STRICT;
CREATE INDEX ledger_by_grant ON ledger (grant_id, id);

CREATE TABLE checkpoints (
	id         INTEGER PRIMARY KEY,
	size       INTEGER NOT NULL CHECK (size >= 0),
	root       BLOB NOT NULL CHECK (length(root) = 32),
	note       BLOB NOT NULL,
	created_ns INTEGER NOT NULL
) STRICT;
`,
}

// migrate brings the schema to the latest version. The common case, an up to date
// store, costs one read and never takes the write lock.
func (s *Store) migrate(ctx context.Context) error {
	version, app, err := schemaState(ctx, s.db)
	if err != nil {
		return s.classify(err)
	}
	if err := checkSchema(version, app); err != nil {
		return err
	}
	if app == applicationID && version == int64(len(migrations)) {
		return nil
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Another process may have migrated since the read above.
		version, app, err := schemaState(ctx, tx)
		if err != nil {
			return err
		}
		if err := checkSchema(version, app); err != nil {
			return err
		}
		if app == 0 {
			var objects int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
				return err
			}
			if objects != 0 {
				return fmt.Errorf("%w: database has %d schema objects and no joule application id", ErrNotStore, objects)
			}
		}
		for v := version; v < int64(len(migrations)); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
			}
		}
		// PRAGMA arguments cannot be bound; both values are integers we own.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
		return err
	})
}

func schemaState(ctx context.Context, q querier) (version, app int64, err error) {
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, 0, err
	}
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return 0, 0, err
	}
	return version, app, nil
}

// checkSchema refuses databases this build must not touch.
func checkSchema(version, app int64) error {
	switch {
	case app != 0 && app != applicationID:
		return fmt.Errorf("%w: application id %#x, want %#x", ErrNotStore, app, applicationID)
	case app == 0 && version != 0:
		return fmt.Errorf("%w: schema version %d without the joule application id", ErrNotStore, version)
	case version > int64(len(migrations)):
		return fmt.Errorf("%w: schema version %d, this joule knows up to %d; upgrade joule", ErrTooNew, version, len(migrations))
	case version < 0:
		return fmt.Errorf("%w: negative schema version %d", ErrCorrupt, version)
	}
	return nil
}
