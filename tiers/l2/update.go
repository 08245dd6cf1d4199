package l2

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"lukechampine.com/blake3"

	"github.com/joulehook/joule/core/gitignore"
)

// candidate is a file the scan found: regular, not ignored, within size.
type candidate struct {
	rel         string
	size, mtime int64
}

// stored is a file as the index last saw it.
type stored struct {
	id          int64
	hash        []byte
	size, mtime int64
}

// scanned is a worker's reading of one candidate.
type scanned struct {
	candidate
	hash   []byte
	binary bool
	chunks []Chunk
	terms  []chunkTerms // the full-text columns of each chunk, made on the worker
	err    error
	// maybeRename: the content matches a file that disappeared; the writer
	// moves that file's rows instead of chunking again, when it can.
	maybeRename bool
}

// Update brings the index in line with the tree: files whose size or mtime
// changed are hashed, and only those whose content hash changed are
// re-chunked (and re-embedded); deleted and newly ignored files are
// dropped; a file moved with its content intact keeps its rows. It honours
// .gitignore files at every level and .git/info/exclude, and skips binaries
// and files over the size limit. progress, if not nil, is called from one
// goroutine at a time.
func (ix *Index) Update(ctx context.Context, progress func(Progress)) (Stats, error) {
	if ix.db == nil {
		return Stats{}, errClosed
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	began := time.Now()
	report := func(p Progress) {
		if progress != nil {
			progress(p)
		}
	}
	var st Stats
	report(Progress{Phase: "scan"})
	cands, skipped, err := ix.scan(ctx, func(n int) { report(Progress{Phase: "scan", Done: n}) })
	if err != nil {
		return st, err
	}
	st.Skipped = skipped
	old, err := ix.storedFiles(ctx)
	if err != nil {
		return st, err
	}
	skips, err := ix.skippedFiles(ctx)
	if err != nil {
		return st, err
	}
	present := make(map[string]bool, len(cands))
	var changed []candidate
	for _, c := range cands {
		present[c.rel] = true
		if o, ok := old[c.rel]; ok && o.size == c.size && o.mtime == c.mtime {
			st.Unchanged++
			continue
		}
		if o, ok := skips[c.rel]; ok && o.size == c.size && o.mtime == c.mtime {
			st.Skipped++ // a binary seen before, unchanged: not read again
			continue
		}
		changed = append(changed, c)
	}
	gone := map[string][]string{} // content hash → paths no longer present
	for rel, o := range old {
		if !present[rel] {
			gone[string(o.hash)] = append(gone[string(o.hash)], rel)
		}
	}
	for _, ps := range gone {
		sort.Strings(ps)
	}

	// Building from nothing, the secondary indexes are made once at the
	// end: far cheaper than keeping them ordered row by row.
	bulk := len(old) == 0 && len(changed) > bulkThreshold
	if bulk {
		if _, err := ix.db.ExecContext(ctx, dropIndexes); err != nil {
			return st, err
		}
	}

	results := make(chan scanned, 64)
	jobs := make(chan candidate)
	workers := ix.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				results <- ix.read(c, old, gone)
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, c := range changed {
			select {
			case jobs <- c:
			case <-wctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	werr := ix.write(ctx, &st, results, old, gone, present, skips, len(changed), report)
	if bulk {
		report(Progress{Phase: "index", Done: len(changed), Total: len(changed), Path: "(building lookup tables)"})
		if _, err := ix.db.ExecContext(context.WithoutCancel(ctx), schema); err != nil && werr == nil {
			werr = err
		}
	}
	cancel()
	for range results { // drain, so workers finish
	}
	if werr != nil {
		return st, werr
	}
	ix.invalidateVectors()
	if ix.embedder != nil {
		st.Embedded, st.EmbedErr = ix.embedPending(ctx, report)
		if err := ctx.Err(); err != nil {
			return st, err
		}
		ix.invalidateVectors()
	}
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM files`).Scan(&st.Files); err != nil {
		return st, err
	}
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&st.Chunks); err != nil {
		return st, err
	}
	// Fold the write-ahead log into the database: queries then read one
	// file, not the database and a log as large as it after a build.
	if _, err := ix.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return st, err
	}
	if _, err := ix.db.ExecContext(ctx, `INSERT OR REPLACE INTO meta(key, value) VALUES('updated', ?)`, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return st, err
	}
	st.Elapsed = time.Since(began)
	report(Progress{Phase: "done", Done: st.Files, Total: st.Files})
	return st, nil
}

// scan walks the root, honouring ignore files, and lists candidates in
// path order.
func (ix *Index) scan(ctx context.Context, tick func(int)) ([]candidate, int, error) {
	var (
		out     []candidate
		skipped int
	)
	var walk func(rel string, stack gitignore.Stack) error
	walk = func(rel string, stack gitignore.Stack) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := filepath.Join(ix.root, filepath.FromSlash(rel))
		stack = stack.Enter(ix.root, rel)
		ents, err := os.ReadDir(dir)
		if err != nil {
			if rel == "" {
				return fmt.Errorf("l2: reading root: %w", err)
			}
			return nil // an unreadable subdirectory is not the index's business
		}
		for _, e := range ents {
			name := e.Name()
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			switch {
			case e.IsDir():
				if name == ".git" || stack.Ignored(r, true) {
					continue
				}
				if err := walk(r, stack); err != nil {
					return err
				}
			case e.Type().IsRegular():
				if stack.Ignored(r, false) {
					continue
				}
				fi, err := e.Info()
				if err != nil {
					continue
				}
				if fi.Size() > ix.maxSize {
					skipped++
					continue
				}
				out = append(out, candidate{rel: r, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
				if len(out)%500 == 0 {
					tick(len(out))
				}
			}
			// Symlinks and special files are not followed: a link can
			// lead out of the workspace.
		}
		return nil
	}
	if err := walk("", gitignore.Exclude(ix.root)); err != nil {
		return nil, 0, err
	}
	return out, skipped, nil
}

// skippedFiles is the binaries the last updates read and skipped, by
// path, with the stamp they had.
func (ix *Index) skippedFiles(ctx context.Context) (map[string]stored, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT path, size, mtime FROM skips`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]stored{}
	for rows.Next() {
		var (
			s   stored
			rel string
		)
		if err := rows.Scan(&rel, &s.size, &s.mtime); err != nil {
			return nil, err
		}
		out[rel] = s
	}
	return out, rows.Err()
}

func (ix *Index) storedFiles(ctx context.Context) (map[string]stored, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT id, path, hash, size, mtime FROM files`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]stored{}
	for rows.Next() {
		var (
			s   stored
			rel string
		)
		if err := rows.Scan(&s.id, &rel, &s.hash, &s.size, &s.mtime); err != nil {
			return nil, err
		}
		out[rel] = s
	}
	return out, rows.Err()
}

// read hashes and, when needed, chunks one file; it runs on a worker.
func (ix *Index) read(c candidate, old map[string]stored, gone map[string][]string) scanned {
	s := scanned{candidate: c}
	data, err := os.ReadFile(filepath.Join(ix.root, filepath.FromSlash(c.rel)))
	if err != nil {
		s.err = err
		return s
	}
	sum := blake3.Sum256(data)
	s.hash = sum[:]
	if o, ok := old[c.rel]; ok && string(o.hash) == string(s.hash) {
		return s // touched, not changed
	}
	if isBinary(data) {
		s.binary = true
		return s
	}
	if _, ok := old[c.rel]; !ok && len(gone[string(s.hash)]) > 0 {
		s.maybeRename = true
		return s
	}
	s.chunks = ChunkFile(c.rel, data)
	s.terms = termsOf(s.chunks)
	return s
}

// chunkTerms is what the full-text index stores of a chunk.
type chunkTerms struct{ sym, body string }

func termsOf(cs []Chunk) []chunkTerms {
	out := make([]chunkTerms, len(cs))
	for i, c := range cs {
		out[i] = chunkTerms{symTerms(c.Symbol, c.Defs), termText(c.Text)}
	}
	return out
}

// write applies the workers' results in one transaction.
func (ix *Index) write(ctx context.Context, st *Stats, results <-chan scanned, old map[string]stored, gone map[string][]string, present map[string]bool, skips map[string]stored, total int, report func(Progress)) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	w, err := newWriter(ctx, tx)
	if err != nil {
		return err
	}
	defer w.close()
	claimed := map[string]bool{}
	indexed, binaries := map[string]bool{}, map[string]bool{}
	done := 0
	for s := range results {
		done++
		report(Progress{Phase: "index", Done: done, Total: total, Path: s.rel})
		if err := ctx.Err(); err != nil {
			return err
		}
		o, existed := old[s.rel]
		switch {
		case s.err != nil:
			// Vanished or unreadable between scan and read: treat as absent.
			delete(present, s.rel)
			continue
		case s.binary:
			st.Skipped++
			delete(present, s.rel)
			binaries[s.rel] = true
			if _, err := w.putSkip.ExecContext(ctx, s.rel, s.size, s.mtime); err != nil {
				return err
			}
			continue
		case existed && string(o.hash) == string(s.hash):
			if _, err := w.touch.ExecContext(ctx, s.size, s.mtime, o.id); err != nil {
				return err
			}
			st.Unchanged++
			continue
		}
		if s.maybeRename {
			if from := unclaimed(gone[string(s.hash)], claimed); from != "" {
				claimed[from] = true
				if err := w.rename(ctx, old[from].id, s); err != nil {
					return err
				}
				st.Renamed++
				continue
			}
			data, err := os.ReadFile(filepath.Join(ix.root, filepath.FromSlash(s.rel)))
			if err != nil {
				delete(present, s.rel)
				continue
			}
			s.chunks = ChunkFile(s.rel, data)
			s.terms = termsOf(s.chunks)
		}
		id := int64(0)
		if existed {
			id = o.id
			if err := w.dropRows(ctx, id); err != nil {
				return err
			}
			st.Changed++
		} else {
			st.Added++
		}
		if err := w.putFile(ctx, &id, s); err != nil {
			return err
		}
		indexed[s.rel] = true
	}
	for rel, o := range old {
		if present[rel] || claimed[rel] {
			continue
		}
		if err := w.dropRows(ctx, o.id); err != nil {
			return err
		}
		if _, err := w.delFile.ExecContext(ctx, o.id); err != nil {
			return err
		}
		st.Removed++
	}
	// A binary seen before that is gone, or is now text, is forgotten.
	for rel := range skips {
		if (!present[rel] && !binaries[rel]) || indexed[rel] {
			if _, err := w.dropSkip.ExecContext(ctx, rel); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w.close()
	return tx.Commit()
}

func unclaimed(paths []string, claimed map[string]bool) string {
	for _, p := range paths {
		if !claimed[p] {
			return p
		}
	}
	return ""
}

// writer holds the prepared statements of one update transaction.
type writer struct {
	stmts                                     []*sql.Stmt
	touch, delFile, insFile, updFile          *sql.Stmt
	insChunk, insFTS, insDef, insRef, movFile *sql.Stmt
	delFTS, delChunks, delDefs, delRefs       *sql.Stmt
	selChunks, movDefs, putSkip, dropSkip     *sql.Stmt
}

func newWriter(ctx context.Context, tx *sql.Tx) (*writer, error) {
	w := &writer{}
	prep := []struct {
		dst **sql.Stmt
		q   string
	}{
		{&w.touch, `UPDATE files SET size=?, mtime=? WHERE id=?`},
		{&w.delFile, `DELETE FROM files WHERE id=?`},
		{&w.insFile, `INSERT INTO files(path, hash, size, mtime) VALUES(?,?,?,?)`},
		{&w.updFile, `UPDATE files SET hash=?, size=?, mtime=? WHERE id=?`},
		{&w.movFile, `UPDATE files SET path=?, size=?, mtime=? WHERE id=?`},
		{&w.insChunk, `INSERT INTO chunks(file_id, start_line, end_line, symbol, kind, text) VALUES(?,?,?,?,?,?)`},
		{&w.insFTS, `INSERT INTO fts(rowid, sym, path, body) VALUES(?,?,?,?)`},
		{&w.insDef, `INSERT INTO defs(name, recv, pkg, dir, kind, line, chunk_id, file_id) VALUES(?,?,?,?,?,?,?,?)`},
		{&w.insRef, `INSERT INTO refs(name, qual, pkg, line, call, chunk_id, file_id) VALUES(?,?,?,?,?,?,?)`},
		{&w.delFTS, `DELETE FROM fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id=?)`},
		{&w.delChunks, `DELETE FROM chunks WHERE file_id=?`},
		{&w.delDefs, `DELETE FROM defs WHERE file_id=?`},
		{&w.delRefs, `DELETE FROM refs WHERE file_id=?`},
		{&w.selChunks, `SELECT c.id, c.symbol, c.text, coalesce((SELECT group_concat(d.name, ' ') FROM defs d WHERE d.chunk_id=c.id AND d.kind NOT IN ('field', 'interface method')), '') FROM chunks c WHERE c.file_id=?`},
		{&w.movDefs, `UPDATE defs SET dir=? WHERE file_id=?`},
		{&w.putSkip, `INSERT OR REPLACE INTO skips(path, size, mtime) VALUES(?,?,?)`},
		{&w.dropSkip, `DELETE FROM skips WHERE path=?`},
	}
	for _, p := range prep {
		s, err := tx.PrepareContext(ctx, p.q)
		if err != nil {
			w.close()
			return nil, err
		}
		*p.dst = s
		w.stmts = append(w.stmts, s)
	}
	return w, nil
}

func (w *writer) close() {
	for _, s := range w.stmts {
		s.Close()
	}
	w.stmts = nil
}

func (w *writer) dropRows(ctx context.Context, fileID int64) error {
	for _, s := range []*sql.Stmt{w.delFTS, w.delChunks, w.delDefs, w.delRefs} {
		if _, err := s.ExecContext(ctx, fileID); err != nil {
			return err
		}
	}
	return nil
}

// putFile stores a file's chunks, terms, definitions and references; id
// is the file's row, 0 to insert one.
func (w *writer) putFile(ctx context.Context, id *int64, s scanned) error {
	if *id == 0 {
		r, err := w.insFile.ExecContext(ctx, s.rel, s.hash, s.size, s.mtime)
		if err != nil {
			return err
		}
		if *id, err = r.LastInsertId(); err != nil {
			return err
		}
	} else if _, err := w.updFile.ExecContext(ctx, s.hash, s.size, s.mtime, *id); err != nil {
		return err
	}
	dir := path.Dir(s.rel)
	pathTerms := termText(s.rel)
	for i, c := range s.chunks {
		r, err := w.insChunk.ExecContext(ctx, *id, c.StartLine, c.EndLine, c.Symbol, c.Kind, c.Text)
		if err != nil {
			return err
		}
		cid, err := r.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := w.insFTS.ExecContext(ctx, cid, s.terms[i].sym, pathTerms, s.terms[i].body); err != nil {
			return err
		}
		for _, d := range c.Defs {
			if _, err := w.insDef.ExecContext(ctx, d.Name, d.Recv, d.Pkg, dir, d.Kind, d.Line, cid, *id); err != nil {
				return err
			}
		}
		pkg := ""
		if len(c.Defs) > 0 {
			pkg = c.Defs[0].Pkg
		} else if strings.HasPrefix(c.Symbol, "package ") && c.Kind == "package" {
			pkg = strings.TrimPrefix(c.Symbol, "package ")
		}
		for _, rf := range c.Refs {
			if _, err := w.insRef.ExecContext(ctx, rf.Name, rf.Qual, pkg, rf.Line, rf.Call, cid, *id); err != nil {
				return err
			}
		}
	}
	return nil
}

// rename moves a file's rows to a new path: its chunks, vectors and
// references stay; the path terms and definition directories follow.
func (w *writer) rename(ctx context.Context, id int64, s scanned) error {
	if _, err := w.movFile.ExecContext(ctx, s.rel, s.size, s.mtime, id); err != nil {
		return err
	}
	if _, err := w.movDefs.ExecContext(ctx, path.Dir(s.rel), id); err != nil {
		return err
	}
	rows, err := w.selChunks.QueryContext(ctx, id)
	if err != nil {
		return err
	}
	type row struct {
		id               int64
		sym, text, names string
	}
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.sym, &r.text, &r.names); err != nil {
			rows.Close()
			return err
		}
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := w.delFTS.ExecContext(ctx, id); err != nil {
		return err
	}
	pathTerms := termText(s.rel)
	for _, r := range rs {
		if _, err := w.insFTS.ExecContext(ctx, r.id, termText(r.sym+" "+r.names), pathTerms, termText(r.text)); err != nil {
			return err
		}
	}
	return nil
}

// symTerms is what the symbol column indexes: the chunk's symbol and the
// names it declares.
func symTerms(sym string, defs []Def) string {
	var b strings.Builder
	b.WriteString(sym)
	for _, d := range defs {
		if d.Kind == "field" || d.Kind == "interface method" {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(d.Name)
	}
	return termText(b.String())
}

// bulkThreshold is how many new files make a build from an empty index a
// bulk load (see Update).
var bulkThreshold = 1000
