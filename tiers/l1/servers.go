package l1

import (
	"context"
	"fmt"
	"strconv"
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

// serverPos splits a rename target FILE:LINE:COL naming a file a language
// server serves.
func serverPos(target string) (file string, line, col int, ok bool) {
	parts := strings.Split(target, ":")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	if _, ok := lsp.For(parts[0]); !ok {
		return "", 0, 0, false
	}
	l, err1 := strconv.Atoi(parts[1])
	c, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || l < 1 || c < 1 {
		return "", 0, 0, false
	}
	return strings.TrimPrefix(parts[0], "./"), l, c, true
}

// renameAny renames through a language server when the target is a
// position in a file one serves, and with the Go rename otherwise.
func renameAny(ctx context.Context, root string, files core.Files, c Rename) (core.Files, string, error) {
	file, line, col, ok := serverPos(c.Target)
	if !ok {
		return rename(ctx, root, files, c)
	}
	r, err := lsp.Rename(ctx, root, files, file, line, col, c.To)
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
