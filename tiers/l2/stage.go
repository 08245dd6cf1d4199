package l2

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"lukechampine.com/blake3"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/ask"
)

// The decisiveness rule for closing a free-text search: an embedding model
// answered; both rankers put the same chunk first; it leads each ranker's
// runner-up clearly, by DecisiveCosine in cosine similarity and by the
// factor DecisiveBM25 in BM25 score; and every term of the query occurs in
// the chunk (its path, symbol or text). Lexical-only search never closes:
// words alone cannot tell "the code that does X" from code that mentions X.
const (
	DecisiveCosine = 0.05
	DecisiveBM25   = 1.25
)

// Limits of what an answer shows.
const (
	snippetLines = 12 // lines of a definition shown in an answer
	maxSites     = 50 // call sites listed in an answer
)

// Stage is the L2 tier: it closes lookups it can answer with certainty and
// hands its best context to later tiers otherwise.
type Stage struct {
	Index *Index
	// Context is how many snippets a miss appends to the request (default 5).
	Context int
}

var _ tiers.Stage = (*Stage)(nil)

// Tier implements tiers.Stage.
func (s *Stage) Tier() core.Tier { return core.L2 }

// TryResolve implements tiers.Stage. It closes "where is X defined" when X
// resolves to exactly one definition, "who calls X" when X resolves to
// exactly one package-level Go function with at least one recorded call,
// and "find the code that …" when the fused search is decisive (see
// DecisiveCosine); and only when every file the answer cites is unchanged
// since it was indexed. Otherwise it appends its best hits to req.Context
// and returns (nil, nil).
func (s *Stage) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	ix := s.Index
	if ix == nil || ix.db == nil {
		return nil, errClosed
	}
	if req.Root != "" {
		abs, err := filepath.Abs(req.Root)
		if err != nil || filepath.Clean(abs) != ix.root {
			return nil, nil // another workspace: this index knows nothing of it
		}
	}
	q, refused := readQuery(ctx, req.Prompt, symbols{ix})
	switch q.Intent {
	case DefinitionIntent:
		defs, total, err := ix.resolve(ctx, q.Name, s.limit())
		if err != nil {
			return nil, err
		}
		if total == 1 && ix.fresh(ctx, defs[0].Path) {
			answer := definitionAnswer(q.Name, defs[0])
			if n := ask.Sites(answer); n > ask.MaxDefinitionSites {
				return nil, fmt.Errorf("l2: a definition answer citing %d places is not one definition", n)
			}
			return &tiers.Resolution{Answer: ix.note(answer)}, nil
		}
		if total > 0 {
			why := fmt.Sprintf("symbol: one of %d definitions of %s", total, q.Name)
			if total == 1 {
				why = "symbol: the file changed since it was indexed"
			}
			s.hand(req, defs, why)
			return nil, nil
		}
	case CallersIntent:
		defs, total, err := ix.resolve(ctx, q.Name, s.limit())
		if err != nil {
			return nil, err
		}
		if total == 1 {
			callers, err := ix.Callers(ctx, q.Name)
			if err != nil {
				return nil, err
			}
			d := defs[0]
			soleMethod := d.Kind == "method" && isGo(d.Path) && ix.soleUnexportedMethod(ctx, q.Name)
			if soleMethod {
				// an unexported method is called only from its package,
				// and no other method there has the name: every call of
				// a method so named in that directory is a call of it
				kept := callers[:0]
				for _, c := range callers {
					if sameDir(c.Path, filepath.ToSlash(filepath.Dir(d.Path))) {
						kept = append(kept, c)
					}
				}
				callers = kept
			}
			// Only a package-level function's uses are recorded completely:
			// a type's unqualified uses in its own package are not.
			why := ""
			switch {
			case !isGo(d.Path):
				why = "symbol: uses are recorded for Go only"
			case soleMethod && len(callers) == 0:
				why = "symbol: no recorded call (it may be called through an interface or a method value)"
			case soleMethod:
			case d.Kind == "method" || d.Kind == "interface method":
				why = "symbol: candidate calls of any method named " + q.Name + " (receivers are not type-checked)"
			case d.Kind != "func":
				why = "symbol: uses of a " + d.Kind + " inside its package are not recorded"
			case len(callers) == 0:
				why = "symbol: no recorded use (it may be called through a value, by reflection or from outside the workspace)"
			}
			if why == "" {
				if ix.fresh(ctx, d.Path) && ix.allFresh(ctx, callers) {
					return &tiers.Resolution{Answer: ix.note(callersAnswer(q.Name, d, callers))}, nil
				}
				why = "symbol: files changed since they were indexed"
			}
			s.hand(req, append(defs, callers...), why)
			return nil, nil
		}
		if total > 1 {
			s.hand(req, defs, fmt.Sprintf("symbol: one of %d definitions of %s", total, q.Name))
			return nil, nil
		}
	case SearchIntent:
		r, err := ix.search(ctx, q.Text, max(s.limit(), 2))
		if errors.Is(err, ErrEmptyQuery) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if decisive(r) && ix.fresh(ctx, r.hits[0].Path) {
			return &tiers.Resolution{Answer: searchAnswer(q.Text, r.hits[0])}, nil
		}
		s.hand(req, r.hits, "")
		return nil, nil
	}
	// Not a lookup, or one that found nothing: hand on what a search of
	// the whole prompt finds.
	hits, err := ix.Search(ctx, req.Prompt, s.limit())
	if errors.Is(err, ErrEmptyQuery) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.hand(req, hits, "")
	if refused != "" {
		return nil, &ask.Refusal{Reason: refused}
	}
	return nil, nil
}

func (s *Stage) limit() int {
	if s.Context > 0 {
		return s.Context
	}
	return 5
}

// decisive applies the rule documented at DecisiveCosine.
func decisive(r *searched) bool {
	if r.note != "" || len(r.hits) == 0 || len(r.lex) == 0 || len(r.vec) == 0 {
		return false
	}
	top := r.hits[0]
	if top.Lexical != 1 || top.Vector != 1 {
		return false
	}
	if len(r.vec) > 1 && r.vec[0].score-r.vec[1].score < DecisiveCosine {
		return false
	}
	if len(r.lex) > 1 && r.lex[0].score < DecisiveBM25*r.lex[1].score {
		return false
	}
	have := map[string]bool{}
	for _, t := range Terms(top.Path + " " + top.Symbol + " " + top.Text) {
		have[t] = true
	}
	for _, t := range r.terms {
		if !have[t] {
			return false
		}
	}
	return true
}

// hand appends hits to the request's context, best first, up to the limit.
func (s *Stage) hand(req *tiers.Request, hits []Hit, why string) {
	for i, h := range hits {
		if i == s.limit() {
			break
		}
		w := h.Why
		if why != "" {
			w = why
			if s.Index.embedder == nil {
				w += "; " + LexicalOnly
			}
		}
		req.Context = append(req.Context, tiers.Snippet{
			Path: h.Path, StartLine: h.StartLine, EndLine: h.EndLine,
			Symbol: h.Symbol, Text: h.Text, Score: h.Score, Why: w,
		})
	}
}

// fresh reports whether a file's content is what the index holds: an
// answer is only certain about the tree as it is now. An unchanged size
// and modification time vouch for the content, as they do in Update;
// otherwise the file is hashed.
func (ix *Index) fresh(ctx context.Context, rel string) bool {
	var (
		want        []byte
		size, mtime int64
	)
	if err := ix.db.QueryRowContext(ctx, `SELECT hash, size, mtime FROM files WHERE path=?`, rel).Scan(&want, &size, &mtime); err != nil {
		return false
	}
	p := filepath.Join(ix.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if fi.Size() == size && fi.ModTime().UnixNano() == mtime {
		return true
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	sum := blake3.Sum256(data)
	return string(sum[:]) == string(want)
}

func (ix *Index) allFresh(ctx context.Context, hits []Hit) bool {
	seen := map[string]bool{}
	for _, h := range hits {
		if seen[h.Path] {
			continue
		}
		seen[h.Path] = true
		if !ix.fresh(ctx, h.Path) {
			return false
		}
	}
	return true
}

// note adds the lexical-only notice to an answer when it applies.
func (ix *Index) note(answer string) string {
	if ix.embedder == nil {
		return answer + "\n(L2 " + LexicalOnly + ")"
	}
	return answer
}

func isGo(p string) bool { return strings.HasSuffix(p, ".go") }

// snippet renders up to snippetLines of a hit with line numbers.
func snippet(h Hit) string {
	lines := strings.Split(strings.TrimRight(h.Text, "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == snippetLines {
			more := "lines"
			if len(lines)-i == 1 {
				more = "line"
			}
			fmt.Fprintf(&b, "\t… (%d more %s, to %s:%d)\n", len(lines)-i, more, h.Path, h.EndLine)
			break
		}
		fmt.Fprintf(&b, "%6d\t%s\n", h.StartLine+i, l)
	}
	return b.String()
}

func definitionAnswer(name string, h Hit) string {
	return fmt.Sprintf("%s (%s %s) is defined at %s:%d\n\n%s", name, h.Kind, h.Symbol, h.Path, h.Line, snippet(h))
}

func callersAnswer(name string, def Hit, callers []Hit) string {
	var b strings.Builder
	noun := "recorded uses"
	if len(callers) == 1 {
		noun = "recorded use"
	}
	fmt.Fprintf(&b, "%s (%s %s, defined at %s:%d) has %d %s:\n\n", name, def.Kind, def.Symbol, def.Path, def.Line, len(callers), noun)
	for i, c := range callers {
		if i == maxSites {
			fmt.Fprintf(&b, "… and %d more\n", len(callers)-i)
			break
		}
		in := ""
		if c.Symbol != "" {
			in = " in " + c.Symbol
		}
		fmt.Fprintf(&b, "%s:%d%s (%s): %s\n", c.Path, c.Line, in, c.Kind, c.Text)
	}
	return b.String()
}

func searchAnswer(text string, h Hit) string {
	sym := ""
	if h.Symbol != "" {
		sym = " (" + h.Symbol + ")"
	}
	return fmt.Sprintf("The code that %s is at %s:%d-%d%s, found by %s: both rankers agree on it.\n\n%s", text, h.Path, h.StartLine, h.EndLine, sym, h.Why, snippet(h))
}

// soleUnexportedMethod reports whether name (M or T.M) is an unexported
// method and the index holds one declaration of any kind with its bare
// name: its calls are then the calls of a method so named in its package.
func (ix *Index) soleUnexportedMethod(ctx context.Context, name string) bool {
	bare := name[strings.LastIndex(name, ".")+1:]
	if bare == "" || !unicode.IsLower(rune(bare[0])) {
		return false
	}
	_, n, err := ix.resolve(ctx, bare, 1)
	return err == nil && n == 1
}
