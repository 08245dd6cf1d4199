package l2

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"golang.org/x/mod/modfile"
)

// Retrieval constants.
const (
	rrfK  = 60 // reciprocal rank fusion: score = Σ 1/(rrfK + rank)
	depth = 50 // how deep each ranker's list goes into the fusion
)

// Ranking weights of the full-text columns: a match in what a chunk
// declares counts most, then its path, then its body.
const ftsRank = `bm25(fts, 8.0, 3.0, 1.0)`

// ErrEmptyQuery is returned for a query with no searchable word.
var ErrEmptyQuery = errors.New("l2: query has no searchable terms")

// ranked is one ranker's verdict on a chunk.
type ranked struct {
	id    int64
	score float64 // the ranker's own score: -bm25, cosine, or 1 for a symbol
}

// Search returns up to k chunks for a free-text or identifier query, best
// first: BM25 over split identifiers and text, exact symbol-name matches
// and, with an embedding model, cosine similarity, fused by reciprocal rank
// (k=60). Without a model, or when the model fails, every hit's Why says
// so.
func (ix *Index) Search(ctx context.Context, query string, k int) ([]Hit, error) {
	r, err := ix.search(ctx, query, k)
	if err != nil {
		return nil, err
	}
	return r.hits, nil
}

// searched is a search's hits and the rankers' full lists behind them.
type searched struct {
	hits     []Hit
	terms    []string // the query's terms
	lex, vec []ranked
	note     string // non-empty when retrieval was lexical only, and why
}

func (ix *Index) search(ctx context.Context, query string, k int) (*searched, error) {
	if ix.db == nil {
		return nil, errClosed
	}
	if k <= 0 {
		return nil, fmt.Errorf("l2: search: k must be positive, got %d", k)
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	lex, err := ix.lexical(ctx, terms)
	if err != nil {
		return nil, err
	}
	sym, err := ix.symbolic(ctx, query)
	if err != nil {
		return nil, err
	}
	var vec []ranked
	note := LexicalOnly
	if ix.embedder != nil {
		vec, err = ix.semantic(ctx, query)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			note = "lexical only: embedding failed: " + err.Error()
			vec = nil
		default:
			note = ""
		}
	}
	type fused struct {
		id                 int64
		score              float64
		lex, vec, sym      int
		lexScore, vecScore float64
	}
	byID := map[int64]*fused{}
	get := func(id int64) *fused {
		f := byID[id]
		if f == nil {
			f = &fused{id: id}
			byID[id] = f
		}
		return f
	}
	for i, r := range lex {
		f := get(r.id)
		f.lex, f.lexScore = i+1, r.score
		f.score += 1.0 / float64(rrfK+i+1)
	}
	for i, r := range sym {
		f := get(r.id)
		f.sym = i + 1
		f.score += 1.0 / float64(rrfK+i+1)
	}
	for i, r := range vec {
		f := get(r.id)
		f.vec, f.vecScore = i+1, r.score
		f.score += 1.0 / float64(rrfK+i+1)
	}
	all := make([]*fused, 0, len(byID))
	for _, f := range byID {
		all = append(all, f)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].id < all[j].id
	})
	if len(all) > k {
		all = all[:k]
	}
	hits := make([]Hit, 0, len(all))
	for _, f := range all {
		h, err := ix.chunkHit(ctx, f.id)
		if err != nil {
			return nil, err
		}
		h.Score, h.Lexical, h.Vector, h.Symbolic = f.score, f.lex, f.vec, f.sym
		h.lexScore, h.vecScore = f.lexScore, f.vecScore
		var by []string
		if f.lex > 0 {
			by = append(by, "bm25")
		}
		if f.sym > 0 {
			by = append(by, "symbol")
		}
		if f.vec > 0 {
			by = append(by, "vector")
		}
		h.Why = strings.Join(by, "+")
		if note != "" {
			h.Why += "; " + note
		}
		hits = append(hits, h)
	}
	return &searched{hits: hits, terms: terms, lex: lex, vec: vec, note: note}, nil
}

// lexical ranks chunks by BM25. Chunks holding every query term come
// first, ranked by an AND query. The list is filled up from the chunks
// holding any of the rarer terms, taken rarest first while their documents
// number at most orBudget (a term in a tenth of the workspace says little).
// That union is ranked by summing each term's own BM25 top list: BM25 is a
// sum over terms, and single-term queries are an order of magnitude
// cheaper in FTS5 than one OR query over the same documents.
func (ix *Index) lexical(ctx context.Context, terms []string) ([]ranked, error) {
	df, err := ix.docFreqs(ctx, terms)
	if err != nil {
		return nil, err
	}
	var present []string
	for _, t := range terms {
		if df[t] > 0 {
			present = append(present, t)
		}
	}
	if len(present) == 0 {
		return nil, nil
	}
	sort.SliceStable(present, func(i, j int) bool { return df[present[i]] < df[present[j]] })
	var out []ranked
	seen := map[int64]bool{}
	if len(present) > 1 {
		all, err := ix.bm25(ctx, strings.Join(quoteTerms(present), " AND "))
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			seen[r.id] = true
			out = append(out, r)
		}
	}
	if len(out) >= depth {
		return out, nil
	}
	sums := map[int64]float64{}
	sum := 0
	for i, t := range present {
		if i > 0 && sum+df[t] > orBudget {
			break
		}
		sum += df[t]
		rs, err := ix.bm25(ctx, quoteTerms([]string{t})[0])
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			sums[r.id] += r.score
		}
	}
	var rest []ranked
	for id, sc := range sums {
		if !seen[id] {
			rest = append(rest, ranked{id: id, score: sc})
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].score != rest[j].score {
			return rest[i].score > rest[j].score
		}
		return rest[i].id < rest[j].id
	})
	out = append(out, rest[:min(len(rest), depth-len(out))]...)
	return out, nil
}

// orBudget bounds how many chunks the union of single terms ranks.
const orBudget = 8000

func quoteTerms(terms []string) []string {
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return out
}

// bm25 runs one full-text query, best first, depth deep; scores are
// negated bm25() values, so higher is better.
func (ix *Index) bm25(ctx context.Context, match string) ([]ranked, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT rowid, `+ftsRank+` FROM fts WHERE fts MATCH ? ORDER BY `+ftsRank+` LIMIT ?`, match, depth)
	if err != nil {
		return nil, fmt.Errorf("l2: lexical search: %w", err)
	}
	defer rows.Close()
	var out []ranked
	for rows.Next() {
		var r ranked
		if err := rows.Scan(&r.id, &r.score); err != nil {
			return nil, err
		}
		r.score = -r.score
		out = append(out, r)
	}
	return out, rows.Err()
}

// docFreqs is how many chunks hold each term.
func (ix *Index) docFreqs(ctx context.Context, terms []string) (map[string]int, error) {
	df := make(map[string]int, len(terms))
	for _, t := range terms {
		var n int
		err := ix.db.QueryRowContext(ctx, `SELECT doc FROM fts_vocab WHERE term = ?`, t).Scan(&n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("l2: term statistics: %w", err)
		}
		df[t] = n
	}
	return df, nil
}

var identRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`) })

// symbolic ranks chunks declaring a name the query spells exactly: case-
// sensitive matches first, then case-insensitive ones (struct fields and
// interface methods only then).
func (ix *Index) symbolic(ctx context.Context, query string) ([]ranked, error) {
	var names []string
	seen := map[string]bool{}
	words := identRE().FindAllString(query, -1)
	for _, w := range words {
		if len(w) < 3 || stopwords[strings.ToLower(w)] || seen[w] {
			continue
		}
		// In a sentence only a word that is spelt like an identifier
		// (ServeHTTP, parse_config, utf8) names a symbol; "parse" does not.
		if len(words) > 1 && len(splitIdent(w)) < 2 && !strings.ContainsAny(w[1:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			continue
		}
		seen[w] = true
		names = append(names, w)
	}
	if len(names) == 0 {
		return nil, nil
	}
	var out []ranked
	have := map[int64]bool{}
	for pass := 0; pass < 2 && len(out) < depth; pass++ {
		for _, n := range names {
			q := `SELECT DISTINCT chunk_id FROM defs WHERE name = ? AND kind NOT IN ('field', 'interface method') ORDER BY chunk_id LIMIT ?`
			if pass == 1 {
				q = `SELECT DISTINCT chunk_id FROM defs WHERE name = ? COLLATE NOCASE ORDER BY chunk_id LIMIT ?`
			}
			rows, err := ix.db.QueryContext(ctx, q, n, depth)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return nil, err
				}
				if !have[id] && len(out) < depth {
					have[id] = true
					out = append(out, ranked{id: id, score: 1})
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// semantic ranks chunks by cosine similarity to the query's embedding.
func (ix *Index) semantic(ctx context.Context, query string) ([]ranked, error) {
	ectx := ctx
	if ix.qTimeout > 0 {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ctx, ix.qTimeout)
		defer cancel()
	}
	vs, err := ix.embedder.Embed(ectx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("%w: %d vectors for 1 query", errBadVectors, len(vs))
	}
	vc, err := ix.loadVectors(ctx)
	if err != nil {
		return nil, err
	}
	if len(vc.ids) == 0 {
		return nil, errors.New("no chunk has a vector yet (run an update with the model reachable)")
	}
	if len(vs[0]) != vc.dim {
		return nil, fmt.Errorf("query vector has dimension %d, the index %d (model changed? run an update)", len(vs[0]), vc.dim)
	}
	ids, sims := vc.nearest(normalize(vs[0]), depth)
	out := make([]ranked, len(ids))
	for i := range ids {
		out[i] = ranked{id: ids[i], score: float64(sims[i])}
	}
	return out, nil
}

func (ix *Index) chunkHit(ctx context.Context, id int64) (Hit, error) {
	var h Hit
	err := ix.db.QueryRowContext(ctx, `SELECT f.path, c.start_line, c.end_line, c.symbol, c.kind, c.text FROM chunks c JOIN files f ON f.id=c.file_id WHERE c.id=?`, id).
		Scan(&h.Path, &h.StartLine, &h.EndLine, &h.Symbol, &h.Kind, &h.Text)
	if err != nil {
		return h, fmt.Errorf("l2: chunk %d: %w", id, err)
	}
	return h, nil
}

// Name is a parsed symbol reference: Foo, pkg.Foo, T.M, (*T).M, pkg.T.M,
// (*pkg.T).M, and any of these after an import-path-like directory
// (net/http.Get, net/http.(*Client).Do).
type Name struct {
	Dir   string // a directory suffix the package must live in, or ""
	Qual  string // a package name or a type name (ambiguous), or ""
	Recv  string // a receiver type known to be one (pkg.T.M, (*T).M)
	Ident string
}

var (
	identOnly = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`) })
	recvForm  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\(\*?(?:([\p{L}_][\p{L}\p{N}_]*)\.)?([\p{L}_][\p{L}\p{N}_]*)\)\.([\p{L}_][\p{L}\p{N}_]*)$`)
	})
)

// ParseName parses a symbol reference; it fails on anything else.
func ParseName(s string) (Name, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, "()")
	var n Name
	if i := strings.LastIndex(s, "/"); i >= 0 {
		j := strings.IndexByte(s[i:], '.')
		if j < 0 {
			return n, fmt.Errorf("l2: %q is not a symbol name", s)
		}
		n.Dir = strings.Trim(s[:i+j], "/")
		s = s[i+j+1:]
		if n.Dir == "" || strings.Contains(n.Dir, "//") {
			return n, fmt.Errorf("l2: %q is not a symbol name", s)
		}
	}
	if m := recvForm().FindStringSubmatch(s); m != nil {
		n.Qual, n.Recv, n.Ident = m[1], m[2], m[3]
		return n, nil
	}
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if !identOnly().MatchString(p) {
			return n, fmt.Errorf("l2: %q is not a symbol name", s)
		}
	}
	switch len(parts) {
	case 1:
		n.Ident = parts[0]
	case 2:
		n.Qual, n.Ident = parts[0], parts[1]
	case 3:
		n.Qual, n.Recv, n.Ident = parts[0], parts[1], parts[2]
	default:
		return n, fmt.Errorf("l2: %q is not a symbol name", s)
	}
	if n.Dir != "" && n.Qual == "" {
		// net/http.Get: the last directory element names the package.
		n.Qual = n.Dir[strings.LastIndex(n.Dir, "/")+1:]
	}
	return n, nil
}

// defRow is one definitions-table row.
type defRow struct {
	chunk                int64
	name, recv, pkg, dir string
	kind                 string
	line                 int
}

// lookup returns the definitions n resolves to, in path order.
func (ix *Index) lookup(ctx context.Context, n Name) ([]defRow, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT d.chunk_id, d.name, d.recv, d.pkg, d.dir, d.kind, d.line FROM defs d JOIN files f ON f.id=d.file_id WHERE d.name=? ORDER BY f.path, d.line`, n.Ident)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []defRow
	for rows.Next() {
		var d defRow
		if err := rows.Scan(&d.chunk, &d.name, &d.recv, &d.pkg, &d.dir, &d.kind, &d.line); err != nil {
			return nil, err
		}
		if n.matches(d) {
			out = append(out, d)
		}
	}
	return out, rows.Err()
}

func (n Name) matches(d defRow) bool {
	if n.Dir != "" && d.dir != n.Dir && !strings.HasSuffix(d.dir, "/"+n.Dir) {
		return false
	}
	switch {
	case n.Recv != "":
		return d.recv == n.Recv && (n.Qual == "" || d.pkg == n.Qual)
	case n.Qual != "":
		// pkg.Name (a package-level name) or T.M (a member of T).
		return (d.recv == "" && d.pkg == n.Qual) || d.recv == n.Qual
	}
	return true
}

// Definitions returns the declarations a symbol reference resolves to
// ("Foo", "pkg.Foo", "(*T).M", "T.M", "net/http.Get"): exact symbol-table
// lookups, struct fields and interface methods included, so that a name
// with several declarations shows them all. Line is the name's line.
func (ix *Index) Definitions(ctx context.Context, name string) ([]Hit, error) {
	if ix.db == nil {
		return nil, errClosed
	}
	hits, _, err := ix.resolve(ctx, name, math.MaxInt)
	return hits, err
}

// defHits makes hits of the first limit definitions.
func (ix *Index) defHits(ctx context.Context, defs []defRow, limit int) ([]Hit, error) {
	hits := make([]Hit, 0, min(limit, len(defs)))
	for i, d := range defs {
		if i == limit {
			break
		}
		h, err := ix.chunkHit(ctx, d.chunk)
		if err != nil {
			return nil, err
		}
		h.Line, h.Kind, h.Why = d.line, d.kind, ix.why("symbol")
		if d.kind == "method" && d.pkg != "" && strings.HasPrefix(h.Symbol, "(*") {
			h.Symbol = "(*" + d.pkg + "." + h.Symbol[2:] // (*pkg.T).M, as gopls writes it
		} else {
			h.Symbol = defSymbol(d)
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// resolve looks a name up and makes hits of at most limit definitions,
// returning how many there are in all.
func (ix *Index) resolve(ctx context.Context, name string, limit int) ([]Hit, int, error) {
	defs, err := ix.lookupName(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	hits, err := ix.defHits(ctx, defs, limit)
	return hits, len(defs), err
}

// lookupName parses a symbol reference and finds its declarations.
func (ix *Index) lookupName(ctx context.Context, name string) ([]defRow, error) {
	n, err := ParseName(name)
	if err != nil {
		return nil, err
	}
	return ix.lookup(ctx, n)
}

func defSymbol(d defRow) string {
	q := d.name
	if d.recv != "" {
		q = d.recv + "." + d.name
	}
	if d.pkg != "" {
		q = d.pkg + "." + q
	}
	return q
}

// Callers returns the recorded uses of what name resolves to, in path and
// line order: for a package-level Go function or type, its calls inside
// its package and its qualified uses (pkg.Name) from files that import it;
// for a method, every call of a method of that name, whatever the receiver
// (the index does not type-check: Hit.Why says so). Symbol is the
// enclosing declaration; Text the line of the use.
func (ix *Index) Callers(ctx context.Context, name string) ([]Hit, error) {
	if ix.db == nil {
		return nil, errClosed
	}
	defs, err := ix.lookupName(ctx, name)
	if err != nil {
		return nil, err
	}
	modPath := ix.modulePath()
	type site struct {
		path string
		line int
	}
	seen := map[site]bool{}
	var hits []Hit
	for _, d := range defs {
		var (
			q        string
			args     []any
			why      string
			dotFiles map[int64]bool // files that dot-import the package
		)
		switch {
		case d.recv != "" && (d.kind == "method" || d.kind == "interface method"):
			q = `r.name=? AND r.qual='.' AND r.call=1`
			args = []any{d.name}
			why = "call of any method named " + d.name + ": receiver not type-checked"
		case d.recv == "" && d.pkg != "":
			paths := importPaths(d.dir, modPath)
			// Bare calls in its own package, qualified uses from importers,
			// and bare calls in files that dot-import the package.
			in := placeholders(len(paths))
			q = `r.name=? AND ((r.qual='' AND r.call=1 AND r.pkg=? AND f.path LIKE ? ESCAPE '\') OR r.qual IN (` + in + `)` +
				` OR (r.qual='' AND r.call=1 AND r.file_id IN (SELECT file_id FROM refs WHERE name='.' AND qual IN (` + in + `))))`
			args = []any{d.name, d.pkg, likeDir(d.dir)}
			for range 2 {
				for _, p := range paths {
					args = append(args, p)
				}
			}
			if dotFiles, err = ix.dotImporters(ctx, paths); err != nil {
				return nil, err
			}
			why = "reference"
		default:
			continue // fields, constants in non-Go text: no recorded uses
		}
		rows, err := ix.db.QueryContext(ctx, `SELECT r.file_id, f.path, r.line, r.call, r.qual, c.start_line, c.end_line, c.symbol, c.text FROM refs r JOIN files f ON f.id=r.file_id JOIN chunks c ON c.id=r.chunk_id WHERE `+q+` ORDER BY f.path, r.line`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var (
				h      Hit
				call   bool
				qual   string
				fileID int64
			)
			if err := rows.Scan(&fileID, &h.Path, &h.Line, &call, &qual, &h.StartLine, &h.EndLine, &h.Symbol, &h.Text); err != nil {
				rows.Close()
				return nil, err
			}
			if qual == "" && !sameDir(h.Path, d.dir) && !dotFiles[fileID] {
				continue // a bare call from a subdirectory of the root package
			}
			s := site{h.Path, h.Line}
			if seen[s] {
				continue
			}
			seen[s] = true
			h.Kind = "reference"
			if call {
				h.Kind = "call"
			}
			h.Why = ix.why(why)
			h.Text = lineOf(h.Text, h.Line-h.StartLine)
			hits = append(hits, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Path != hits[j].Path {
			return hits[i].Path < hits[j].Path
		}
		return hits[i].Line < hits[j].Line
	})
	return hits, nil
}

func placeholders(n int) string {
	if n == 0 {
		return "NULL"
	}
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// likeDir is a LIKE pattern for the files directly in dir.
func likeDir(dir string) string {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	if dir == "." {
		return "%" // filtered again by sameDir
	}
	return esc.Replace(dir) + "/%"
}

func sameDir(p, dir string) bool { return filepath.ToSlash(filepath.Dir(p)) == dir }

// importPaths lists the import paths a package in dir may be imported by:
// the module path joined with dir, dir itself (the standard library and
// GOPATH-style trees), and dir with any vendor/ prefix removed.
func importPaths(dir, modPath string) []string {
	var out []string
	add := func(p string) {
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	if dir == "." {
		if modPath != "" {
			add(modPath)
		}
		return out
	}
	if modPath != "" && modPath != "std" {
		add(modPath + "/" + dir)
	}
	add(dir)
	if i := strings.LastIndex(dir, "vendor/"); i >= 0 && (i == 0 || dir[i-1] == '/') {
		add(dir[i+len("vendor/"):])
	}
	return out
}

// modulePath is the import path of the root's directory: the module path
// its go.mod declares or, when the root is a directory inside a module
// (GOROOT/src/net/http inside std), that of the enclosing go.mod joined with
// the root's place in it; "" when no go.mod encloses the root.
func (ix *Index) modulePath() string {
	dir, rel := ix.root, ""
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			mod := modfile.ModulePath(data)
			switch {
			case rel == "":
				return mod
			case mod == "std":
				return rel // the standard library: the path below src
			case mod == "":
				return ""
			}
			return mod + "/" + rel
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		rel = path.Join(filepath.Base(dir), rel)
		dir = parent
	}
}

// lineOf returns line i (0-based) of text, trimmed.
func lineOf(text string, i int) string {
	lines := strings.Split(text, "\n")
	if i < 0 || i >= len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[i])
}

// dotImporters is the set of files that dot-import a package known by
// any of paths.
func (ix *Index) dotImporters(ctx context.Context, paths []string) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(paths) == 0 {
		return out, nil
	}
	args := make([]any, len(paths))
	for i, p := range paths {
		args[i] = p
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT DISTINCT file_id FROM refs WHERE name='.' AND qual IN (`+placeholders(len(paths))+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// why adds the lexical-only notice to a hit's provenance when it applies.
func (ix *Index) why(w string) string {
	if ix.embedder == nil {
		return w + "; " + LexicalOnly
	}
	return w
}
