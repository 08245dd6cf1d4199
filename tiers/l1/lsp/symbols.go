package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
)

// Symbol is a declaration a server reports (textDocument/documentSymbol):
// its name, the name of the declaration holding it ("" at the top of a
// file), its LSP SymbolKind, and where its name is (1-based line, byte
// column).
type Symbol struct {
	Name, Container string
	Kind            int
	File            string
	Line, Col       int
	pos             Position
}

// The LSP SymbolKinds L1 maps onto the kinds a request names.
const (
	SymModule      = 2
	SymNamespace   = 3
	SymClass       = 5
	SymMethod      = 6
	SymProperty    = 7
	SymField       = 8
	SymConstructor = 9
	SymEnum        = 10
	SymInterface   = 11
	SymFunction    = 12
	SymVariable    = 13
	SymConstant    = 14
	SymEnumMember  = 22
	SymStruct      = 23
	SymTypeParam   = 26
)

// ErrNoSymbol is returned when no declaration matches a rename by name.
var ErrNoSymbol = errors.New("no declaration")

// RenameSymbol renames, through srv, the one declaration named name (its
// last dotted part; the part before it must be its container) that match
// accepts (match says why not, or ""): declared in file when file is not
// "", else anywhere in the workspace (in the files whose text holds the
// name; documentSymbol finds the declarations). None, or more than one, is refused.
func RenameSymbol(ctx context.Context, root string, files core.Files, srv Server, file, name, to string, match func(Symbol) string) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	t0 := time.Now()
	if to == "" || strings.ContainsAny(to, " \t\r\n.") {
		return nil, fmt.Errorf("rename: %q is not a name", to)
	}
	container, last := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		container, last = name[:i], name[i+1:]
	}
	if file != "" {
		if _, ok := files[file]; !ok {
			return nil, fmt.Errorf("rename: %s is not in the workspace", file)
		}
	}
	s, release, err := Default.acquire(ctx, srv, root)
	if err != nil {
		return nil, err
	}
	defer func() { release(ctx.Err() != nil) }()
	if err := s.sync(files); err != nil {
		return nil, err
	}
	t1 := time.Now()
	cands := []string{file}
	if file == "" {
		cands = s.symbolFiles(files, last)
	}
	var found []Symbol
	var near []string
	for _, f := range cands {
		syms, err := s.documentSymbols(ctx, files, f)
		if err != nil {
			return nil, err
		}
		for _, sy := range syms {
			if sy.Name != last {
				continue
			}
			why := ""
			if container != "" && sy.Container != container {
				why = "is in " + orTop(sy.Container) + ", not " + container
			} else {
				why = match(sy)
			}
			if why != "" {
				near = append(near, fmt.Sprintf("the one at %s:%d %s", sy.File, sy.Line, why))
				continue
			}
			found = append(found, sy)
		}
	}
	server := time.Since(t1)
	where := "the workspace"
	if file != "" {
		where = file
	}
	switch {
	case len(found) == 0 && len(near) == 0:
		return nil, fmt.Errorf("rename: %w of %s in %s (%s)", ErrNoSymbol, name, where, srv.Name)
	case len(found) == 0:
		sort.Strings(near)
		return nil, fmt.Errorf("rename: %w of %s in %s that the request describes: %s", ErrNoSymbol, name, where, strings.Join(near, "; "))
	case len(found) > 1:
		var at []string
		for _, sy := range found {
			at = append(at, fmt.Sprintf("%s:%d:%d", sy.File, sy.Line, sy.Col))
		}
		sort.Strings(at)
		return nil, fmt.Errorf("rename: %s is ambiguous, %d declarations (%s); name its kind, file or position", name, len(found), strings.Join(at, ", "))
	}
	sy := found[0]
	at := fmt.Sprintf("%s:%d:%d", sy.File, sy.Line, sy.Col)
	next, rs, n, err := s.renameAt(ctx, files, sy.File, sy.pos, at, to)
	if err != nil {
		return nil, err
	}
	return &Result{Next: next, Server: server + rs, Total: time.Since(t0),
		Summary: fmt.Sprintf("renamed %s (%s at %s) to %s through %s: %d edit(s) in %d file(s)", name, KindName(sy.Kind), at, to, srv.Name, n, changed(files, next))}, nil
}

func orTop(c string) string {
	if c == "" {
		return "the file's top level"
	}
	return c
}

// KindName is how messages call an LSP SymbolKind.
func KindName(k int) string {
	switch k {
	case SymModule:
		return "module"
	case SymNamespace:
		return "namespace"
	case SymClass:
		return "class"
	case SymMethod:
		return "method"
	case SymProperty:
		return "property"
	case SymField:
		return "field"
	case SymConstructor:
		return "constructor"
	case SymEnum:
		return "enum"
	case SymInterface:
		return "interface"
	case SymFunction:
		return "function"
	case SymVariable:
		return "variable"
	case SymConstant:
		return "constant"
	case SymEnumMember:
		return "enum member"
	case SymStruct:
		return "struct"
	case SymTypeParam:
		return "type parameter"
	}
	return fmt.Sprintf("symbol kind %d", k)
}

// symbolFiles are the files of the server's language whose text holds
// name as a word, sorted: the only ones that can declare it. (Not
// workspace/symbol: pyright answers it with nothing until its workspace
// is initialized, and a fuzzy match besides.)
func (s *session) symbolFiles(files core.Files, name string) []string {
	re := regexp.MustCompile(`(^|[^\p{L}\p{N}_$])` + regexp.QuoteMeta(name) + `($|[^\p{L}\p{N}_$])`)
	var out []string
	for _, p := range files.Paths() {
		if sv, ok := For(p); ok && sv.Name == s.srv.Name && !ignored(p) && re.Match(files[p]) {
			out = append(out, p)
		}
	}
	return out
}

type docSymbol struct {
	Name           string      `json:"name"`
	Kind           int         `json:"kind"`
	SelectionRange *Range      `json:"selectionRange"`
	Children       []docSymbol `json:"children"`
	// a flat SymbolInformation instead
	Location *struct {
		Range Range `json:"range"`
	} `json:"location"`
	ContainerName string `json:"containerName"`
}

// documentSymbols are the declarations of rel, flattened with their
// containers.
func (s *session) documentSymbols(ctx context.Context, files core.Files, rel string) ([]Symbol, error) {
	var raw json.RawMessage
	err := s.c.call(ctx, "textDocument/documentSymbol", map[string]any{
		"textDocument": map[string]any{"uri": fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))},
	}, &raw)
	if err != nil {
		return nil, fmt.Errorf("%s: listing the symbols of %s: %v", s.srv.Name, rel, err)
	}
	var ds []docSymbol
	if err := json.Unmarshal(raw, &ds); err != nil {
		return nil, fmt.Errorf("%s: bad documentSymbol answer: %v", s.srv.Name, err)
	}
	src := files[rel]
	var out []Symbol
	var walk func(d docSymbol, container string) error
	walk = func(d docSymbol, container string) error {
		var pos Position
		switch {
		case d.SelectionRange != nil:
			pos = d.SelectionRange.Start
		case d.Location != nil:
			pos = d.Location.Range.Start
			container = d.ContainerName
		default:
			return fmt.Errorf("%s: a symbol of %s without a position", s.srv.Name, rel)
		}
		off, err := offset(src, pos)
		if err != nil {
			return fmt.Errorf("%s: symbol %s of %s: %v", s.srv.Name, d.Name, rel, err)
		}
		// The name must be where the server says: the rename goes there.
		name := d.Name
		if i := strings.IndexByte(name, '('); i > 0 {
			name = name[:i]
		}
		if bytes.HasPrefix(src[off:], []byte(name)) {
			ls := bytes.LastIndexByte(src[:off], '\n') + 1
			out = append(out, Symbol{Name: name, Container: container, Kind: d.Kind, File: rel,
				Line: pos.Line + 1, Col: off - ls + 1, pos: pos})
		}
		for _, c := range d.Children {
			if err := walk(c, name); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range ds {
		if err := walk(d, ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}
