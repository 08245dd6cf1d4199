package l1

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/joulehook/joule/core"
)

// A look-up names a symbol; it is answered with the symbol's declaration
// (then its uses, or its calls), found in the syntax of the workspace's Go
// files, never with lines that merely hold its text. Declarations are read
// without type checking, so a look-up is fast on any tree; uses and calls
// are type-checked.

// decl is one declaration in a Go file.
type decl struct {
	name, recv, pkg string // recv: the type of a method or field
	kind            Kind
	fn              string // the function declaring a parameter or a local (T.M for a method)
	file            string // workspace-relative
	line, col       int
	lo, hi          int // the declaration's lines, its doc comment included
	text            string
}

func (d decl) where() string { return fmt.Sprintf("%s:%d:%d", d.file, d.line, d.col) }

func (d decl) describe() string {
	what := string(d.kind)
	switch {
	case d.recv != "":
		what += " of " + d.recv
	case d.fn != "":
		what += " in func " + d.fn
	}
	return what + ", package " + d.pkg
}

// lookupFiles are the Go files a look-up reads: the workspace's, less the
// trees the go command ignores.
func lookupFiles(files core.Files) []string {
	var out []string
	for _, p := range files.Paths() {
		if strings.HasSuffix(p, ".go") && !skipped(p) {
			out = append(out, p)
		}
	}
	return out
}

// declsNamed returns every declaration of name in the workspace's Go files,
// reading only the files that declare it (the workspace's index says which).
// A file that holds it and does not parse is an error: what it declares is
// not known.
func declsNamed(root string, files core.Files, name string, qual []string) ([]decl, error) {
	return declsIn(files, indexFor(root).filesDeclaring(files, name, qual), name)
}

// declsNamedScan is declsNamed without the index: every Go file that
// holds the name's text is parsed (what look-ups did before the index; the
// benchmark's baseline).
func declsNamedScan(files core.Files, name string) ([]decl, error) {
	var cands []string
	needle := []byte(name)
	for _, p := range lookupFiles(files) {
		if bytes.Contains(files[p], needle) {
			cands = append(cands, p)
		}
	}
	return declsIn(files, cands, name)
}

// declsIn parses the files cands and returns their declarations of name.
func declsIn(files core.Files, cands []string, name string) ([]decl, error) {
	var out []decl
	for _, p := range cands {
		src := files[p]
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("%s does not parse (%v); what it declares is not known", p, err)
		}
		out = append(out, fileDecls(fset, f, p, src, name)...)
	}
	return out, nil
}

// fileDecls returns the declarations of name in f; with name "", it
// returns one bare decl (only its name and receiver set) per declaration
// of any name, what the index keeps.
func fileDecls(fset *token.FileSet, f *ast.File, rel string, src []byte, name string) []decl {
	var out []decl
	var lines [][]byte
	if name != "" {
		lines = bytes.Split(src, []byte("\n"))
	}
	add := func(id *ast.Ident, kind Kind, recv, fn string, node ast.Node, doc *ast.CommentGroup) {
		if id == nil || name == "" && id.Name == "_" {
			return
		}
		if name == "" {
			out = append(out, decl{name: id.Name, recv: recv})
			return
		}
		if id.Name != name {
			return
		}
		p := fset.Position(id.Pos())
		lo, hi := fset.Position(node.Pos()).Line, fset.Position(node.End()).Line
		if doc != nil {
			lo = fset.Position(doc.Pos()).Line
		}
		text := ""
		if p.Line-1 < len(lines) {
			text = strings.TrimSpace(string(lines[p.Line-1]))
		}
		out = append(out, decl{name: id.Name, recv: recv, pkg: f.Name.Name, kind: kind, fn: fn, file: rel, line: p.Line, col: p.Column, lo: lo, hi: hi, text: text})
	}
	fields := func(fl *ast.FieldList, kind Kind, recv, fn string) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			for _, id := range fd.Names {
				add(id, kind, recv, fn, fd, fd.Doc)
			}
		}
	}
	var typeSpec func(ts *ast.TypeSpec, doc *ast.CommentGroup, fn string)
	typeSpec = func(ts *ast.TypeSpec, doc *ast.CommentGroup, fn string) {
		kind := KindType
		switch t := ts.Type.(type) {
		case *ast.StructType:
			kind = KindStruct
			if fn == "" {
				fields(t.Fields, KindField, ts.Name.Name, "")
			}
		case *ast.InterfaceType:
			kind = KindInterface
			if fn == "" && t.Methods != nil {
				for _, m := range t.Methods.List {
					if _, ok := m.Type.(*ast.FuncType); ok {
						for _, id := range m.Names {
							add(id, KindMethod, ts.Name.Name, "", m, m.Doc)
						}
					}
				}
			}
		}
		if ts.Doc != nil {
			doc = ts.Doc
		}
		add(ts.Name, kind, "", fn, ts, doc)
	}
	genDecl := func(g *ast.GenDecl, fn string) {
		for _, sp := range g.Specs {
			doc := g.Doc
			switch s := sp.(type) {
			case *ast.TypeSpec:
				if len(g.Specs) > 1 {
					doc = nil
				}
				typeSpec(s, doc, fn)
			case *ast.ValueSpec:
				if s.Doc != nil || len(g.Specs) > 1 {
					doc = s.Doc
				}
				kind := KindVar
				if g.Tok == token.CONST {
					kind = KindConst
				}
				for _, id := range s.Names {
					node := ast.Node(s)
					if len(g.Specs) == 1 {
						node = g
					}
					add(id, kind, "", fn, node, doc)
				}
			case *ast.ImportSpec:
				if s.Name != nil && fn == "" {
					add(s.Name, KindImport, "", "", s, nil)
				}
			}
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			genDecl(d, "")
		case *ast.FuncDecl:
			fn, recv := d.Name.Name, ""
			if d.Recv != nil && len(d.Recv.List) == 1 {
				recv = recvTypeName(d.Recv.List[0].Type)
				fn = recv + "." + d.Name.Name
				add(d.Name, KindMethod, recv, "", d, d.Doc)
				fields(d.Recv, KindParam, "", fn)
			} else {
				add(d.Name, KindFunc, "", "", d, d.Doc)
			}
			fields(d.Type.TypeParams, KindType, "", fn)
			fields(d.Type.Params, KindParam, "", fn)
			fields(d.Type.Results, KindParam, "", fn)
			if d.Body == nil {
				continue
			}
			ast.Inspect(d.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					if n.Tok == token.DEFINE {
						for _, e := range n.Lhs {
							if id, ok := e.(*ast.Ident); ok {
								add(id, KindVar, "", fn, n, nil)
							}
						}
					}
				case *ast.RangeStmt:
					if n.Tok == token.DEFINE {
						for _, e := range []ast.Expr{n.Key, n.Value} {
							if id, ok := e.(*ast.Ident); ok {
								add(id, KindVar, "", fn, n, nil)
							}
						}
					}
				case *ast.DeclStmt:
					if g, ok := n.Decl.(*ast.GenDecl); ok {
						genDecl(g, fn)
					}
				case *ast.FuncLit:
					fields(n.Type.Params, KindParam, "", fn)
					fields(n.Type.Results, KindParam, "", fn)
				}
				return true
			})
		}
	}
	return out
}

// resolve finds the one declaration a symbol names. A request's kind,
// file, line, package or function that the declarations of the name do
// not have is a refusal saying what was found; so are two declarations.
func resolve(root string, files core.Files, sym Symbol) (decl, error) {
	return resolveFrom(sym, func(name string, qual []string) ([]decl, error) { return declsNamed(root, files, name, qual) })
}

// resolveFrom is resolve with the declarations of a name from declsOf,
// which may leave out those its qualifiers rule out.
func resolveFrom(sym Symbol, declsOf func(name string, qual []string) ([]decl, error)) (decl, error) {
	if lang := sym.Lang(); lang != "go" {
		return decl{}, fmt.Errorf("%s is a %s file; L1 looks up Go symbols only", sym.File, lang)
	}
	parts := strings.Split(sym.Name, ".")
	name := parts[len(parts)-1]
	if !token.IsIdentifier(name) {
		return decl{}, fmt.Errorf("%q is not a symbol", sym.Name)
	}
	all, err := declsOf(name, parts[:len(parts)-1])
	if err != nil {
		return decl{}, err
	}
	var named, found []decl
	for _, d := range all {
		if qualified(d, parts[:len(parts)-1]) {
			named = append(named, d)
		}
	}
	var whys []string
	for _, d := range named {
		if why := declDisagrees(d, sym); why != "" {
			whys = append(whys, fmt.Sprintf("the %s at %s %s", d.kind, d.where(), why))
			continue
		}
		found = append(found, d)
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		var where []string
		for _, d := range found {
			where = append(where, d.where()+" ("+d.describe()+")")
		}
		return decl{}, fmt.Errorf("%s is ambiguous: %d declarations, %s; qualify it as pkg.Name, Type.Member, or add its file", sym, len(found), strings.Join(where, "; "))
	case len(whys) > 0:
		sort.Strings(whys)
		if len(whys) > 3 {
			whys = append(whys[:3], fmt.Sprintf("and %d more", len(whys)-3))
		}
		return decl{}, fmt.Errorf("no %s: %s", sym, strings.Join(whys, "; "))
	}
	return decl{}, fmt.Errorf("no declaration of %s in the workspace's Go files", sym.Name)
}

// qualified reports whether d is what a qualifier names: pkg.X (a
// package-level X of a package named pkg, or in directory pkg), T.M (a
// method or field M of T), pkg.T.M.
func qualified(d decl, qual []string) bool {
	pkgOK := func(q string) bool {
		dir := path.Dir(d.file)
		return d.pkg == q || dir == q || strings.HasSuffix(dir, "/"+q) || strings.TrimSuffix(d.pkg, "_test") == q
	}
	switch len(qual) {
	case 0:
		return true
	case 1:
		if d.recv != "" {
			return d.recv == qual[0]
		}
		return d.fn == "" && d.kind != KindImport && pkgOK(qual[0])
	case 2:
		return d.recv == qual[1] && pkgOK(qual[0])
	}
	return false
}

func declDisagrees(d decl, sym Symbol) string {
	if !sym.Kind.Matches(d.kind) {
		return fmt.Sprintf("is a %s, not a %s", d.kind, sym.Kind)
	}
	if sym.File != "" && !sameFile(sym.File, d.file) {
		return "is in " + d.file + ", not " + sym.File
	}
	if sym.Line > 0 && d.line != sym.Line && !(sym.Col > 0 && sym.Line >= d.lo && sym.Line <= d.hi) {
		return fmt.Sprintf("is declared on line %d, not %d", d.line, sym.Line)
	}
	if sym.Col > 0 && d.line == sym.Line && (sym.Col < d.col || sym.Col >= d.col+len(d.name)) {
		return fmt.Sprintf("starts at column %d, not %d", d.col, sym.Col)
	}
	if sym.Pkg != "" {
		dir := path.Dir(d.file)
		if d.pkg != sym.Pkg && dir != sym.Pkg && !strings.HasSuffix(dir, "/"+sym.Pkg) {
			return "is in package " + d.pkg + " (" + dir + "), not " + sym.Pkg
		}
	}
	if sym.Func != "" && d.fn != sym.Func && !strings.HasSuffix(d.fn, "."+sym.Func) {
		if d.fn == "" {
			return "is not declared in a function"
		}
		return "is declared in " + d.fn + ", not " + sym.Func
	}
	return ""
}

const maxLookupLines = 200

// lookup answers a Lookup on the workspace at root.
func lookup(ctx context.Context, root string, files core.Files, c Lookup) (string, error) {
	d, err := resolve(root, files, c.Target)
	if err != nil {
		if c.OrText && strings.HasPrefix(err.Error(), "no declaration of ") {
			return "No Go declaration is named " + c.Target.Name + "; " + find(files, c.Target.Name), nil
		}
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s (%s) is declared at %s", c.Target.Name, d.describe(), d.where())
	if d.hi > d.lo {
		fmt.Fprintf(&sb, " (lines %d-%d)", d.lo, d.hi)
	}
	fmt.Fprintf(&sb, ":\n%s:%d: %s\n", d.file, d.line, d.text)
	if len(c.Builds) > 0 {
		fmt.Fprintf(&sb, "It is also declared for other builds:\n%s\n", strings.Join(c.Builds, "\n"))
	}
	if c.Want == Definition {
		return sb.String(), nil
	}
	if c.Want == Callers && d.kind != KindFunc && d.kind != KindMethod {
		return "", fmt.Errorf("%s is a %s; only a function or a method has callers", c.Target.Name, d.kind)
	}
	refs, scope, err := references(ctx, root, files, d)
	if err != nil {
		if c.Want == Callers {
			return "", err
		}
		fmt.Fprintf(&sb, "Its uses are not listed: %v.\n", err)
		return sb.String(), nil
	}
	var calls, other []ref
	for _, r := range refs {
		if r.call {
			calls = append(calls, r)
		} else {
			other = append(other, r)
		}
	}
	list := func(rs []ref) {
		for i, r := range rs {
			if i == maxLookupLines {
				fmt.Fprintf(&sb, "… %d more\n", len(rs)-i)
				break
			}
			in := ""
			if r.fn != "" {
				in = " in " + r.fn
			}
			fmt.Fprintf(&sb, "%s:%d:%d:%s %s\n", r.file, r.line, r.col, in, r.text)
		}
	}
	if c.Want == Callers {
		if len(calls) == 0 {
			fmt.Fprintf(&sb, "Nothing calls it %s.\n", scope)
		} else {
			fmt.Fprintf(&sb, "%d call(s) %s:\n", len(calls), scope)
			list(calls)
		}
		if len(other) > 0 {
			fmt.Fprintf(&sb, "It is also referred to without a call (a function value) %d time(s), which may call it indirectly:\n", len(other))
			list(other)
		}
		return sb.String(), nil
	}
	if len(refs) == 0 {
		fmt.Fprintf(&sb, "It is not used %s.\n", scope)
		return sb.String(), nil
	}
	fmt.Fprintf(&sb, "%d use(s) %s:\n", len(refs), scope)
	list(refs)
	return sb.String(), nil
}

type ref struct {
	file      string
	line, col int
	fn, text  string
	call      bool
}

// maxWholeModule is the size, in Go files, above which uses of an
// exported symbol are looked for in its own package only (a whole-module
// type check of a tree that big takes minutes); the answer says so.
const maxWholeModule = 3000

// references lists the type-checked uses of d: in the whole module when d
// may be used outside its package, else in its package. scope says where
// they were looked for.
func references(ctx context.Context, root string, files core.Files, d decl) ([]ref, string, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, "", err
	}
	dir := path.Dir(d.file)
	pattern, scope := "./"+dir, "in package "+d.pkg+" ("+dir+")"
	exported := token.IsExported(d.name) && d.fn == "" && (d.recv == "" || token.IsExported(d.recv))
	if exported && len(lookupFiles(files)) <= maxWholeModule {
		pattern, scope = "./...", "in the module"
	} else if exported {
		scope += "; the workspace is too large to type-check whole, so uses in other packages are not listed"
	}
	cfg := &packages.Config{Context: ctx, Mode: loadMode, Dir: real, Tests: true, Fset: token.NewFileSet(), Overlay: overlay(real, files)}
	pkgs, err := loadPackages(cfg, pattern)
	if err != nil {
		return nil, "", fmt.Errorf("loading packages: %v", err)
	}
	want := key{filepath.Join(real, filepath.FromSlash(d.file)), d.line, d.col}
	var declPkgOK bool
	for _, p := range pkgs {
		for id, obj := range p.TypesInfo.Defs {
			if obj != nil && keyOf(cfg.Fset, id.Pos()) == want {
				if len(p.Errors) > 0 {
					return nil, "", fmt.Errorf("package %s does not type-check: %v", p.PkgPath, p.Errors[0])
				}
				declPkgOK = true
			}
		}
	}
	if !declPkgOK {
		return nil, "", fmt.Errorf("the type checker does not see %s at %s (is it excluded by a build constraint?)", d.name, d.where())
	}
	seen := map[key]bool{}
	var out []ref
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, "", fmt.Errorf("package %s does not type-check: %v; its uses would be missed", p.PkgPath, p.Errors[0])
		}
		called := map[*ast.Ident]bool{}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					fun := ast.Unparen(call.Fun)
					for {
						if ix, ok := fun.(*ast.IndexExpr); ok {
							fun = ix.X
						} else if ix, ok := fun.(*ast.IndexListExpr); ok {
							fun = ix.X
						} else {
							break
						}
					}
					switch f := fun.(type) {
					case *ast.Ident:
						called[f] = true
					case *ast.SelectorExpr:
						called[f.Sel] = true
					}
				}
				return true
			})
		}
		for id, obj := range p.TypesInfo.Uses {
			if obj == nil || obj.Name() != d.name || keyOf(cfg.Fset, obj.Pos()) != want {
				continue
			}
			k := keyOf(cfg.Fset, id.Pos())
			if seen[k] {
				continue
			}
			seen[k] = true
			rel := relTo(real, k.file)
			text := ""
			if src, ok := files[rel]; ok {
				if ls := bytes.Split(src, []byte("\n")); k.line-1 < len(ls) {
					text = strings.TrimSpace(string(ls[k.line-1]))
				}
			}
			out = append(out, ref{file: rel, line: k.line, col: k.col, fn: enclosingFunc(cfg.Fset, []*packages.Package{p}, id.Pos()), text: text, call: called[id]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].file != out[j].file {
			return out[i].file < out[j].file
		}
		if out[i].line != out[j].line {
			return out[i].line < out[j].line
		}
		return out[i].col < out[j].col
	})
	return out, scope, nil
}

// loadPackages is packages.Load; a test may memoise it.
var loadPackages = packages.Load
