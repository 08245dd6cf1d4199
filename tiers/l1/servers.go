package l1

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/token"
	"sort"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// Edits in languages other than Go go to their own language servers
// (tiers/l1/lsp): a rename of a TypeScript, JavaScript or Python symbol,
// at FILE:LINE:COL or by name (in a file, or anywhere), and organize
// imports of one such file. The server's edit is
// applied to the snapshot and type-checked there; the stage then signs it as
// one op like any other L1 edit. A server that is missing, refuses or errors
// is a miss, with nothing written.

// renameAny renames through a language server when the target is in a
// file one serves (at a position, or by name), or when it is named with no
// file and is not Go's; with the Go rename otherwise.
func renameAny(ctx context.Context, root string, files core.Files, c Rename) (core.Files, string, error) {
	sym := c.Target
	file := strings.TrimPrefix(sym.File, "./")
	if sym.Kind == KindPackage || sym.Kind == KindImport {
		return rename(ctx, root, files, c)
	}
	rename := renameGo
	if srv, ok := lsp.For(file); ok {
		if sym.Pos() {
			if sym.Name != "" {
				if why := atName(files, file, sym); why != "" {
					return nil, "", fmt.Errorf("rename: %s", why)
				}
			}
			r, err := lsp.Rename(ctx, root, files, file, sym.Line, sym.Col, c.To)
			if err != nil {
				return nil, "", err
			}
			return r.Next, served(r), nil
		}
		rel, err := fileNamed(files, file)
		if err != nil {
			return nil, "", err
		}
		return renameByName(ctx, root, files, srv, rel, c)
	}
	if sym.File != "" || sym.Pos() {
		return rename(ctx, root, files, c)
	}
	// Named, no file: Go's when the workspace has Go (classes are not);
	// else, or when Go has no declaration of it, the one other language
	// the workspace has.
	langs := servedLangs(files)
	hasGo := false
	for p := range files {
		if strings.HasSuffix(p, ".go") && !skipped(p) {
			hasGo = true
			break
		}
	}
	if hasGo && sym.Kind != KindClass {
		next, summary, err := rename(ctx, root, files, c)
		if err == nil || !errors.Is(err, errNoDecl) || len(langs) == 0 {
			return next, summary, err
		}
	}
	switch len(langs) {
	case 0:
		return rename(ctx, root, files, c)
	case 1:
		return renameByName(ctx, root, files, langs[0], "", c)
	}
	var names []string
	for _, l := range langs {
		names = append(names, l.Language)
	}
	return nil, "", fmt.Errorf("rename: the workspace has %s files: name the file %s is declared in", strings.Join(names, " and "), sym.Name)
}

// renameGo renames a Go symbol through the resident gopls when one runs
// for the workspace, with L1's own type-checked rename otherwise (starting
// gopls in the background for the next request). L1's rename reads the
// module anew each time (go list, parsing, type-checking: most of a second
// on a small module); a resident gopls has it in memory and re-checks only
// what an edit changes. gopls refusing or failing gives way to L1's rename,
// whose answer or refusal is the one given; an edit of gopls's that breaks
// the type check is refused.
func renameGo(ctx context.Context, root string, files core.Files, c Rename) (core.Files, string, error) {
	sym := c.Target
	if sym.Kind == KindPackage || sym.Kind == KindImport || sym.Lang() != "go" || !token.IsIdentifier(c.To) {
		return rename(ctx, root, files, c)
	}
	if !lsp.Default.Resident(lsp.Gopls, root) {
		lsp.Default.Warm(lsp.Gopls, root)
		return rename(ctx, root, files, c)
	}
	next, summary, err := renameThroughGopls(ctx, root, files, c)
	if err == nil || errors.Is(err, lsp.ErrRegression) || ctx.Err() != nil {
		return next, summary, err
	}
	return rename(ctx, root, files, c)
}

// renameThroughGopls renames at the position a request gives, or at the
// one declaration its name resolves to in the syntax (resolve, as a
// look-up does), through the resident gopls.
func renameThroughGopls(ctx context.Context, root string, files core.Files, c Rename) (core.Files, string, error) {
	sym := c.Target
	rel, line, col := "", 0, 0
	switch {
	case sym.Pos():
		if sym.Kind != KindAny || sym.Pkg != "" || sym.Func != "" {
			return nil, "", errors.New("a position with a kind or qualifier is checked by L1's rename")
		}
		f, err := fileNamed(files, strings.TrimPrefix(sym.File, "./"))
		if err != nil {
			return nil, "", err
		}
		if sym.Name != "" {
			if why := atName(files, f, sym); why != "" {
				return nil, "", errors.New(why)
			}
		}
		rel, line, col = f, sym.Line, sym.Col
	default:
		d, err := resolve(root, files, sym)
		if err != nil {
			return nil, "", err
		}
		rel, line, col = d.file, d.line, d.col
	}
	r, err := lsp.Rename(ctx, root, files, rel, line, col, c.To)
	if err != nil {
		return nil, "", err
	}
	if r.Old == c.To {
		return nil, "", fmt.Errorf("rename: %s is already called %s", sym, c.To)
	}
	n := 0
	for p, b := range r.Next {
		if !bytes.Equal(files[p], b) {
			n++
		}
	}
	return r.Next, fmt.Sprintf("renamed %s to %s: %d occurrence(s) in %d file(s) through gopls (it answered in %s of %s)",
		r.Old, c.To, r.Edits, n, r.Server.Round(1e5), r.Total.Round(1e5)), nil
}

// servedLangs are the language servers for the files of the workspace.
func servedLangs(files core.Files) []lsp.Server {
	var out []lsp.Server
	for _, s := range lsp.Servers {
		for p := range files {
			if sv, ok := lsp.For(p); ok && sv.Name == s.Name && !skipped(p) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// fileNamed is the workspace path a request's file names: the path, or
// the one file whose path ends with it.
func fileNamed(files core.Files, named string) (string, error) {
	if _, ok := files[named]; ok {
		return named, nil
	}
	var hits []string
	for p := range files {
		if sameFile(named, p) {
			hits = append(hits, p)
		}
	}
	switch len(hits) {
	case 0:
		return "", fmt.Errorf("rename: no file %s in the workspace", named)
	case 1:
		return hits[0], nil
	}
	sort.Strings(hits)
	return "", fmt.Errorf("rename: %s names %d files (%s); give its path", named, len(hits), strings.Join(hits, ", "))
}

// atName says why the identifier at a position is not the name a request
// gives it, or "".
func atName(files core.Files, rel string, sym Symbol) string {
	last := sym.Name[strings.LastIndexByte(sym.Name, '.')+1:]
	ls := strings.Split(string(files[rel]), "\n")
	if sym.Line > len(ls) || sym.Col-1 > len(ls[sym.Line-1]) || !strings.HasPrefix(ls[sym.Line-1][sym.Col-1:], last) {
		return fmt.Sprintf("%s:%d:%d is not %s", rel, sym.Line, sym.Col, sym.Name)
	}
	return ""
}

// renameByName renames a declaration a request names in a TypeScript,
// JavaScript or Python file (rel; "" for any) through srv: the kind and
// line the request gives must be the declaration's.
func renameByName(ctx context.Context, root string, files core.Files, srv lsp.Server, rel string, c Rename) (core.Files, string, error) {
	sym := c.Target
	if sym.Pkg != "" || sym.Func != "" {
		return nil, "", fmt.Errorf("rename: a package or function qualifier is for Go symbols; name the %s file instead", srv.Language)
	}
	if strings.Count(sym.Name, ".") > 1 {
		return nil, "", fmt.Errorf("rename: %s: name a %s symbol as NAME or Class.member", sym.Name, srv.Language)
	}
	match := func(s lsp.Symbol) string {
		got := lspKind(s.Kind)
		ok := sym.Kind.Matches(got) ||
			// a variable and a constant are one kind here (let, const; Python's UPPER_CASE)
			(sym.Kind == KindVar || sym.Kind == KindConst) && (got == KindVar || got == KindConst)
		if !ok {
			return "is a " + lsp.KindName(s.Kind) + ", not a " + string(sym.Kind)
		}
		if sym.Line > 0 && s.Line != sym.Line {
			return fmt.Sprintf("is on line %d, not %d", s.Line, sym.Line)
		}
		return ""
	}
	r, err := lsp.RenameSymbol(ctx, root, files, srv, rel, sym.Name, c.To, match)
	if err != nil {
		return nil, "", err
	}
	return r.Next, served(r), nil
}

// lspKind maps an LSP SymbolKind onto the kinds a request names.
func lspKind(k int) Kind {
	switch k {
	case lsp.SymClass:
		return KindClass
	case lsp.SymMethod, lsp.SymConstructor:
		return KindMethod
	case lsp.SymProperty, lsp.SymField:
		return KindField
	case lsp.SymInterface:
		return KindInterface
	case lsp.SymFunction:
		return KindFunc
	case lsp.SymVariable:
		return KindVar
	case lsp.SymConstant, lsp.SymEnumMember:
		return KindConst
	case lsp.SymEnum, lsp.SymTypeParam:
		return KindType
	case lsp.SymStruct:
		return KindStruct
	case lsp.SymModule, lsp.SymNamespace:
		return KindPackage
	}
	return KindAny
}

// formatAny organizes the imports of one TypeScript, JavaScript or Python
// file through its language server, and formats as formatFiles does
// otherwise.
func formatAny(ctx context.Context, root string, files core.Files, c Format) (core.Files, string, error) {
	if _, one := files[c.Glob]; !c.Imports || !one {
		return formatFiles(ctx, root, files, c)
	}
	if _, ok := lsp.For(c.Glob); !ok {
		return formatFiles(ctx, root, files, c)
	}
	r, err := lsp.OrganizeImports(ctx, root, files, c.Glob)
	if err != nil {
		return nil, "", err
	}
	return r.Next, served(r), nil
}

func served(r *lsp.Result) string {
	return fmt.Sprintf("%s (the server answered in %s of %s)", r.Summary, r.Server.Round(1e6), r.Total.Round(1e6))
}
