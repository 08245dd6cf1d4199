package l1

import (
	"context"
	"fmt"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// Edits in languages other than Go go to their own language servers
// (tiers/l1/lsp): a rename at FILE:LINE:COL of a TypeScript, JavaScript or
// Python file, and organize imports of one such file. The server's edit is
// applied to the snapshot and type-checked there; the stage then signs it as
// one op like any other L1 edit. A server that is missing, refuses or errors
// is a miss, with nothing written.

// renameAny renames through a language server when the target is a
// position in a file one serves, and with the Go rename otherwise.
func renameAny(ctx context.Context, root string, files core.Files, c Rename) (core.Files, string, error) {
	sym := c.Target
	if _, served := lsp.For(sym.File); !served || !sym.Pos() {
		return rename(ctx, root, files, c)
	}
	r, err := lsp.Rename(ctx, root, files, strings.TrimPrefix(sym.File, "./"), sym.Line, sym.Col, c.To)
	if err != nil {
		return nil, "", err
	}
	return r.Next, served(r), nil
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
