// Package l2 is tier L2: an incremental structural index of a workspace and
// hybrid (BM25 + vector, reciprocal rank fusion) retrieval over it.
package l2

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"lukechampine.com/blake3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// LexicalOnly is the note every hit and answer carries when no embedding
// model is configured: retrieval is BM25 and the symbol table, nothing else.
const LexicalOnly = "lexical only: no embedding model configured"

// Defaults for the limits an Option can change.
const (
	DefaultMaxFileSize = 1 << 20 // bytes; larger files are skipped
	DefaultBatch       = 32      // texts per embedding request
)

// Index is the workspace index: one SQLite file, a rebuildable cache of
// the tree under Root.
type Index struct {
	root     string
	db       *sql.DB
	embedder Embedder
	maxSize  int64
	batch    int
	workers  int
	qTimeout time.Duration

	mu      sync.Mutex // serialises Update against itself
	vecMu   sync.RWMutex
	vectors *vectorCache // nil until the first vector search after an update
}

// Option configures Open.
type Option func(*Index)

// WithEmbedder makes the index embed chunks and queries with e; without it
// retrieval is lexical and symbolic only, and says so.
func WithEmbedder(e Embedder) Option { return func(ix *Index) { ix.embedder = e } }

// WithMaxFileSize skips files larger than n bytes (default 1 MiB).
func WithMaxFileSize(n int64) Option { return func(ix *Index) { ix.maxSize = n } }

// WithWorkers sets how many files are read and chunked at once (default
// GOMAXPROCS).
func WithWorkers(n int) Option { return func(ix *Index) { ix.workers = n } }

// WithQueryTimeout bounds the embedding of a query (default 5s): past it
// the search answers lexically, and says so.
func WithQueryTimeout(d time.Duration) Option { return func(ix *Index) { ix.qTimeout = d } }

// WithBatch sets how many chunks go into one embedding request.
func WithBatch(n int) Option { return func(ix *Index) { ix.batch = n } }

// DefaultPath is where the index of root lives under a joule home:
// home/index/<hex BLAKE3(abs root)[:16]>.db.
func DefaultPath(home, root string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = root
	}
	sum := blake3.Sum256([]byte(filepath.Clean(abs)))
	return filepath.Join(home, "index", hex.EncodeToString(sum[:])[:16]+".db")
}

// Root is the absolute workspace directory the index covers.
func (ix *Index) Root() string { return ix.root }

// Semantic reports whether an embedding model is configured.
func (ix *Index) Semantic() bool { return ix.embedder != nil }

// Stats is what one Update did.
type Stats struct {
	Files     int // text files in the index after the update
	Added     int // new files chunked
	Changed   int // files whose content hash changed, re-chunked
	Renamed   int // files moved with unchanged content: rows kept, nothing re-chunked
	Removed   int // files deleted or newly ignored
	Unchanged int // files left alone
	Skipped   int // binaries and files over the size limit
	Chunks    int // chunks in the index after the update
	Embedded  int // chunks embedded by this update
	// EmbedErr is why some chunks have no vector yet (the model was
	// unreachable); they are retried on the next update.
	EmbedErr error
	Elapsed  time.Duration
}

// Progress reports an update's advance: Phase is "scan", "index", "embed"
// or "done"; Done of Total items; Path is the file in hand, if any.
type Progress struct {
	Phase       string
	Done, Total int
	Path        string
}

// Hit is one retrieved chunk.
type Hit struct {
	Path               string // slash-separated, relative to the root
	StartLine, EndLine int    // 1-based, inclusive
	Symbol, Kind       string // e.g. "(*Server).Serve", "method"; empty for plain text
	Text               string
	Score              float64 // fused reciprocal-rank score; higher is better
	Lexical, Vector    int     // ranks in the BM25 and vector rankings, 0 = absent
	Symbolic           int     // rank among exact symbol-name matches, 0 = absent
	Line               int     // for call sites: the line of the call
	Why                string  // how it was found; carries LexicalOnly when it applies

	lexScore, vecScore float64 // the rankers' own scores, for the decisiveness rule
}

var errClosed = errors.New("l2: index is closed")

// Open opens (creating if needed) the index of root stored at dbPath.
func Open(dbPath, root string, opts ...Option) (*Index, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("l2: root %q: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("l2: root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("l2: root %q is not a directory", root)
	}
	ix := &Index{root: abs, maxSize: DefaultMaxFileSize, batch: DefaultBatch, qTimeout: 5 * time.Second}
	for _, o := range opts {
		o(ix)
	}
	if err := ix.open(dbPath); err != nil {
		if !isCorrupt(err) {
			return nil, err
		}
		// The index is a cache: a damaged one (power lost mid-write under
		// synchronous=OFF) is discarded and rebuilt by the next update.
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if rerr := os.Remove(dbPath + suffix); rerr != nil && !os.IsNotExist(rerr) {
				return nil, err
			}
		}
		if err := ix.open(dbPath); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// Close closes the database.
func (ix *Index) Close() error {
	if ix.db == nil {
		return nil
	}
	err := ix.db.Close()
	ix.db = nil
	return err
}

// Status describes an index without changing it.
type Status struct {
	Root     string
	Files    int
	Chunks   int
	Vectors  int    // chunks with an embedding
	Model    string // the embedding model of the stored vectors, if any
	Updated  time.Time
	Semantic bool // an embedding model is configured for queries
}

// Status reads the index's counts.
func (ix *Index) Status(ctx context.Context) (Status, error) {
	if ix.db == nil {
		return Status{}, errClosed
	}
	st := Status{Root: ix.root, Semantic: ix.embedder != nil}
	err := ix.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks), (SELECT count(*) FROM chunks WHERE vec IS NOT NULL),
		coalesce((SELECT value FROM meta WHERE key='embed_model'), '')`).
		Scan(&st.Files, &st.Chunks, &st.Vectors, &st.Model)
	if err != nil {
		return st, fmt.Errorf("l2: status: %w", err)
	}
	var up string
	_ = ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='updated'`).Scan(&up)
	if up != "" {
		st.Updated, _ = time.Parse(time.RFC3339Nano, up)
	}
	return st, nil
}

// isCorrupt reports whether err is SQLite finding the file damaged or not
// a database at all.
func isCorrupt(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "malformed") || strings.Contains(msg, "not a database") || strings.Contains(msg, "SQLITE_CORRUPT") || strings.Contains(msg, "SQLITE_NOTADB")
}
