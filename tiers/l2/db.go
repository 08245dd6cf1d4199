package l2

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// schemaVersion changes whenever the tables or the chunking change: an
// index of another version is dropped and rebuilt (it is a cache).
const schemaVersion = "l2/3"

const schema = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
	id INTEGER PRIMARY KEY,
	path TEXT NOT NULL UNIQUE,
	hash BLOB NOT NULL,
	size INTEGER NOT NULL,
	mtime INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS skips(path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(
	id INTEGER PRIMARY KEY,
	file_id INTEGER NOT NULL,
	start_line INTEGER NOT NULL,
	end_line INTEGER NOT NULL,
	symbol TEXT NOT NULL,
	kind TEXT NOT NULL,
	text TEXT NOT NULL,
	vec BLOB
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(sym, path, body, content='', contentless_delete=1, tokenize="unicode61 remove_diacritics 2 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(fts, 'row');
CREATE TABLE IF NOT EXISTS defs(
	name TEXT NOT NULL,
	recv TEXT NOT NULL,
	pkg TEXT NOT NULL,
	dir TEXT NOT NULL,
	kind TEXT NOT NULL,
	line INTEGER NOT NULL,
	chunk_id INTEGER NOT NULL,
	file_id INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS defs_name ON defs(name);
CREATE INDEX IF NOT EXISTS defs_lname ON defs(name COLLATE NOCASE);
CREATE INDEX IF NOT EXISTS defs_file ON defs(file_id);
CREATE TABLE IF NOT EXISTS refs(
	name TEXT NOT NULL,
	qual TEXT NOT NULL,
	pkg TEXT NOT NULL,
	line INTEGER NOT NULL,
	call INTEGER NOT NULL,
	chunk_id INTEGER NOT NULL,
	file_id INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS refs_name ON refs(name);
CREATE INDEX IF NOT EXISTS refs_file ON refs(file_id);
`

// dropIndexes removes the secondary indexes for a bulk build; schema
// recreates them.
const dropIndexes = `DROP INDEX IF EXISTS chunks_file; DROP INDEX IF EXISTS defs_name; DROP INDEX IF EXISTS defs_lname; DROP INDEX IF EXISTS defs_file; DROP INDEX IF EXISTS refs_name; DROP INDEX IF EXISTS refs_file;`

func (ix *Index) open(dbPath string) error {
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return fmt.Errorf("l2: index directory: %w", err)
	}
	// A rebuildable cache: synchronous=OFF trades durability on power loss
	// (the next update rebuilds what was lost) for indexing speed.
	dsn := "file:" + dbPath + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-65536)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("l2: open %s: %w", dbPath, err)
	}
	ix.db = db
	if err := ix.migrate(); err != nil {
		db.Close()
		ix.db = nil
		return fmt.Errorf("l2: open %s: %w", dbPath, err)
	}
	return nil
}

func (ix *Index) migrate() error {
	var v string
	err := ix.db.QueryRow(`SELECT value FROM meta WHERE key='schema'`).Scan(&v)
	if err == nil && v != schemaVersion {
		for _, t := range []string{"meta", "files", "skips", "chunks", "fts_vocab", "fts", "defs", "refs"} {
			if _, err := ix.db.Exec("DROP TABLE IF EXISTS " + t); err != nil {
				return err
			}
		}
	}
	if _, err := ix.db.Exec(schema); err != nil {
		return err
	}
	_, err = ix.db.Exec(`INSERT OR REPLACE INTO meta(key, value) VALUES('schema', ?), ('root', ?)`, schemaVersion, ix.root)
	return err
}
