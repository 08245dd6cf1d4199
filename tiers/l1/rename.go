package l1

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/joulehook/joule/core"
)

// errNoDecl is wrapped by a Go rename that finds no declaration of the
// name at all: a rename by name may then be another language's.
var errNoDecl = errors.New("no declaration")

// key names a declaration independently of which package variant (a
// package, its test variant) type-checked it: file, line and column.
type key struct {
	file      string
	line, col int
}

func keyOf(fset *token.FileSet, pos token.Pos) key {
	p := fset.Position(pos)
	return key{filepath.Clean(p.Filename), p.Line, p.Column}
}

// loadMode is what a type-checked rename needs; dependencies come from
// export data, so positions in other packages are file:line:col, as keyed.
const loadMode = packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
	packages.NeedImports | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo

// rename renames one Go identifier everywhere the type checker says it is
// used in the module at root, tests included, and nowhere else.
func rename(ctx context.Context, root string, files core.Files, c Rename) (core.Files, string, error) {
	sym := c.Target
	if lang := sym.Lang(); lang != "go" {
		return nil, "", fmt.Errorf("rename: %s is a %s file; L1 renames Go symbols only", sym.File, lang)
	}
	tstr := sym.Name
	switch {
	case sym.Kind == KindPackage:
		tstr = pkgPrefix + sym.Name
	case sym.Pos():
		tstr = fmt.Sprintf("%s:%d:%d", sym.File, sym.Line, sym.Col)
	}
	if (!token.IsIdentifier(c.To) || c.To == "_") && sym.Kind != KindPackage {
		return nil, "", fmt.Errorf("rename: %q is not a valid Go identifier", c.To)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, "", err
	}
	// The packages are read from disk, overlaid with the snapshot's Go files
	// where they differ (an editor's unsaved buffers); every site is checked
	// against the snapshot before it is edited.
	cfg := &packages.Config{Context: ctx, Mode: loadMode, Dir: real, Tests: true, Fset: token.NewFileSet(), Overlay: overlay(real, files)}
	pkgs, err := loadPackages(cfg, "./...")
	if err != nil {
		return nil, "", fmt.Errorf("rename: loading packages: %v", err)
	}
	if len(pkgs) == 0 {
		return nil, "", fmt.Errorf("rename: no Go packages in %s", root)
	}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, "", fmt.Errorf("rename: package %s does not type-check: %v (a rename needs full type information)", p.PkgPath, p.Errors[0])
		}
	}
	if p, ok, err := packageTarget(cfg.Fset, pkgs, real, tstr); err != nil {
		return nil, "", err
	} else if ok {
		if sym.Name != "" && sym.Kind != KindPackage {
			return nil, "", fmt.Errorf("rename: %s:%d:%d is the package clause of %s, not %s", sym.File, sym.Line, sym.Col, p.Name, sym.Name)
		}
		return renamePackage(cfg.Fset, pkgs, real, files, p, c.To)
	}
	target, err := findTarget(cfg.Fset, pkgs, real, sym)
	if err != nil {
		return nil, "", err
	}
	if target.obj.Name() == c.To {
		return nil, "", fmt.Errorf("rename: %s is already called %s", sym, c.To)
	}
	if pn, ok := target.obj.(*types.PkgName); ok {
		if err := checkImportName(pkgs, pn, c.To); err != nil {
			return nil, "", err
		}
	}
	keys := map[key]bool{target.key: true}
	addEmbedded(cfg.Fset, pkgs, keys)
	linked := []types.Object{target.obj}
	if m, ok := target.obj.(*types.Func); ok && m.Signature().Recv() != nil {
		objs, err := coupled(cfg.Fset, pkgs, m, target.key, keys, c.To)
		if err != nil {
			return nil, "", err
		}
		for k, o := range objs {
			if k != target.key {
				linked = append(linked, o)
			}
		}
	}
	sites := map[string]map[int]bool{} // file → byte offsets of the old name
	add := func(f string, off int) {
		if sites[f] == nil {
			sites[f] = map[int]bool{}
		}
		sites[f][off] = true
	}
	otherPkg := false
	for _, p := range pkgs {
		for id, obj := range identObjects(p) {
			if obj == nil || obj.Name() != target.obj.Name() || !keys[keyOf(cfg.Fset, obj.Pos())] {
				continue
			}
			if err := checkConflict(p, id, obj, c.To); err != nil {
				return nil, "", err
			}
			if obj.Pkg() != nil && obj.Pkg().Path() != strings.TrimSuffix(p.PkgPath, "_test") && obj.Pkg().Path() != p.PkgPath {
				otherPkg = true
			}
			pos := cfg.Fset.Position(id.Pos())
			add(filepath.Clean(pos.Filename), pos.Offset)
			if def := p.TypesInfo.Defs[id]; def != nil && keys[keyOf(cfg.Fset, def.Pos())] {
				if f := fileOf(p, id.Pos()); f != nil {
					tok := cfg.Fset.File(id.Pos())
					if doc := declDoc(f, id, tok); doc != nil {
						docWordSites(doc, tok, obj.Name(), add)
					}
				}
			}
		}
	}
	for _, o := range linked {
		docLinkSites(pkgs, o, add)
	}
	if otherPkg && !token.IsExported(c.To) && token.IsExported(target.obj.Name()) {
		return nil, "", fmt.Errorf("rename: %s is used in other packages; unexported %s would not be visible there", target.obj.Name(), c.To)
	}
	next := files.Clone()
	n := 0
	for f, offs := range sites {
		rel, err := filepath.Rel(real, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, "", fmt.Errorf("rename: %s is referenced from %s, outside the workspace", sym, f)
		}
		rel = filepath.ToSlash(rel)
		src, ok := files[rel]
		if !ok {
			return nil, "", fmt.Errorf("rename: %s is not in the workspace snapshot", rel)
		}
		var sorted []int
		for o := range offs {
			sorted = append(sorted, o)
		}
		sort.Ints(sorted)
		old := target.obj.Name()
		var out []byte
		last := 0
		for _, o := range sorted {
			if o+len(old) > len(src) || string(src[o:o+len(old)]) != old {
				return nil, "", fmt.Errorf("rename: %s:%d does not hold %s (the file changed while it was analysed)", rel, o, old)
			}
			out = append(out, src[last:o]...)
			out = append(out, c.To...)
			last = o + len(old)
		}
		next[rel] = append(out, src[last:]...)
		n += len(sorted)
	}
	return next, fmt.Sprintf("renamed %s to %s: %d occurrence(s) in %d file(s)", target.obj.Name(), c.To, n, len(sites)), nil
}

// overlay maps each Go file of the snapshot whose content is not what the
// disk holds to that content, so the type checker sees the snapshot.
func overlay(root string, files core.Files) map[string][]byte {
	var m map[string][]byte
	for p, b := range files {
		if !strings.HasSuffix(p, ".go") {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(p))
		if disk, err := os.ReadFile(abs); err == nil && bytes.Equal(disk, b) {
			continue
		}
		if m == nil {
			m = map[string][]byte{}
		}
		m[abs] = b
	}
	return m
}

type targetObj struct {
	obj types.Object
	key key
}

// identObjects lists every identifier of p that denotes or declares an object.
func identObjects(p *packages.Package) map[*ast.Ident]types.Object {
	m := make(map[*ast.Ident]types.Object, len(p.TypesInfo.Defs)+len(p.TypesInfo.Uses))
	for id, obj := range p.TypesInfo.Defs {
		if obj != nil {
			m[id] = obj
		}
	}
	for id, obj := range p.TypesInfo.Uses {
		m[id] = obj // an embedded field's identifier denotes its type name
	}
	return m
}

// addEmbedded adds the embedded fields a renamed type name declares: the
// field takes the type's name, so its selections are renamed with it.
func addEmbedded(fset *token.FileSet, pkgs []*packages.Package, keys map[key]bool) {
	for _, p := range pkgs {
		for id, obj := range p.TypesInfo.Defs {
			v, ok := obj.(*types.Var)
			if !ok || !v.Embedded() {
				continue
			}
			if tn := p.TypesInfo.Uses[id]; tn != nil && keys[keyOf(fset, tn.Pos())] {
				keys[keyOf(fset, v.Pos())] = true
			}
		}
	}
}

// findTarget resolves a rename target to exactly one declaration, which
// must agree with everything the request says about it.
func findTarget(fset *token.FileSet, pkgs []*packages.Package, root string, sym Symbol) (*targetObj, error) {
	qual, name := "", sym.Name
	if i := strings.LastIndexByte(sym.Name, '.'); i >= 0 {
		qual, name = sym.Name[:i], sym.Name[i+1:]
	}
	if sym.Pos() {
		abs := filepath.Clean(filepath.Join(root, filepath.FromSlash(sym.File)))
		for _, p := range pkgs {
			for id, obj := range identObjects(p) {
				pos := fset.Position(id.Pos())
				if filepath.Clean(pos.Filename) == abs && pos.Line == sym.Line && sym.Col >= pos.Column && sym.Col < pos.Column+len(id.Name) {
					at := fmt.Sprintf("%s:%d:%d", sym.File, sym.Line, sym.Col)
					if sym.Name != "" && (id.Name != name || !qualifies(obj, qual)) {
						return nil, fmt.Errorf("rename: the identifier at %s is %s, not %s", at, id.Name, sym.Name)
					}
					t, err := checkTarget(fset, obj, at)
					if err != nil {
						return nil, err
					}
					pos := Symbol{Kind: sym.Kind, Pkg: sym.Pkg, Func: sym.Func} // the position was matched already
					if why := disagrees(fset, pkgs, root, obj, pos); why != "" {
						return nil, fmt.Errorf("rename: %s at %s %s", id.Name, at, why)
					}
					return t, nil
				}
			}
		}
		return nil, fmt.Errorf("rename: no identifier at %s:%d:%d", sym.File, sym.Line, sym.Col)
	}
	if !token.IsIdentifier(name) {
		return nil, fmt.Errorf("rename: %q is not an identifier, pkg.Name, Type.Member or file.go:line:col", sym.Name)
	}
	found := map[key]types.Object{}
	near := map[key]string{} // a declaration of the name that disagrees with the request, and why
	for _, p := range pkgs {
		for id, obj := range p.TypesInfo.Defs {
			if v, ok := obj.(*types.Var); ok && v.Embedded() {
				continue // an embedded field follows its type
			}
			if obj == nil || id.Name != name || !qualifies(obj, qual) {
				continue
			}
			k := keyOf(fset, obj.Pos())
			if why := disagrees(fset, pkgs, root, obj, sym); why != "" {
				near[k] = why
				continue
			}
			found[k] = obj
		}
	}
	switch len(found) {
	case 0:
		if len(near) == 0 {
			return nil, fmt.Errorf("rename: %w of %s in the module", errNoDecl, sym.Name)
		}
		var whys []string
		for k, why := range near {
			whys = append(whys, fmt.Sprintf("the one at %s:%d %s", relTo(root, k.file), k.line, why))
		}
		sort.Strings(whys)
		return nil, fmt.Errorf("rename: no %s: %s", sym, strings.Join(whys, "; "))
	case 1:
		for _, obj := range found {
			return checkTarget(fset, obj, sym.Name)
		}
	}
	var where []string
	for k := range found {
		where = append(where, relTo(root, k.file)+":"+strconv.Itoa(k.line)+":"+strconv.Itoa(k.col))
	}
	sort.Strings(where)
	return nil, fmt.Errorf("rename: %s is ambiguous, %d declarations (%s); qualify it as pkg.Name, Type.Member or file.go:line:col", sym, len(found), strings.Join(where, ", "))
}

func relTo(root, file string) string {
	if r, err := filepath.Rel(root, file); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return file
}

// kindOf is the Kind of a declared object.
func kindOf(obj types.Object) Kind {
	switch o := obj.(type) {
	case *types.Func:
		if o.Signature().Recv() != nil {
			return KindMethod
		}
		return KindFunc
	case *types.TypeName:
		switch o.Type().Underlying().(type) {
		case *types.Struct:
			return KindStruct
		case *types.Interface:
			return KindInterface
		}
		return KindType
	case *types.Var:
		switch o.Kind() {
		case types.FieldVar:
			return KindField
		case types.ParamVar, types.ResultVar, types.RecvVar:
			return KindParam
		}
		return KindVar
	case *types.Const:
		return KindConst
	case *types.PkgName:
		return KindImport
	}
	return KindAny
}

// sameFile reports whether a file a request names (a workspace-relative
// path, a path's tail, or a base name) is rel.
func sameFile(named, rel string) bool {
	named = strings.TrimPrefix(filepath.ToSlash(named), "./")
	return named == rel || strings.HasSuffix(rel, "/"+named)
}

// disagrees says how obj differs from what the request says about it, or
// "" when it agrees with all of it.
func disagrees(fset *token.FileSet, pkgs []*packages.Package, root string, obj types.Object, sym Symbol) string {
	if k := kindOf(obj); !sym.Kind.Matches(k) {
		return fmt.Sprintf("is a %s, not a %s", k, sym.Kind)
	}
	pos := fset.Position(obj.Pos())
	rel := relTo(root, filepath.Clean(pos.Filename))
	if sym.File != "" && !sameFile(sym.File, rel) {
		return "is in " + rel + ", not " + sym.File
	}
	if sym.Line > 0 && !sym.Pos() && pos.Line != sym.Line {
		return fmt.Sprintf("is declared on line %d, not %d", pos.Line, sym.Line)
	}
	if sym.Pkg != "" && obj.Pkg() != nil {
		dir := relTo(root, filepath.Dir(filepath.Clean(pos.Filename)))
		if obj.Pkg().Name() != sym.Pkg && obj.Pkg().Path() != sym.Pkg && dir != sym.Pkg {
			return "is in package " + obj.Pkg().Path() + ", not " + sym.Pkg
		}
	}
	if sym.Func != "" {
		if fn := enclosingFunc(fset, pkgs, obj.Pos()); fn != sym.Func && !strings.HasSuffix(fn, "."+sym.Func) {
			if fn == "" {
				return "is not declared in a function"
			}
			return "is declared in " + fn + ", not " + sym.Func
		}
	}
	return ""
}

// enclosingFunc names the top-level function or method (T.M) whose
// declaration holds pos, "" outside one.
func enclosingFunc(fset *token.FileSet, pkgs []*packages.Package, pos token.Pos) string {
	for _, p := range pkgs {
		f := fileOf(p, pos)
		if f == nil {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || pos < fd.Pos() || pos > fd.End() {
				continue
			}
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				return recvTypeName(fd.Recv.List[0].Type) + "." + fd.Name.Name
			}
			return fd.Name.Name
		}
		return ""
	}
	return ""
}

// recvTypeName is T for a receiver type T, *T, T[P] or *T[P].
func recvTypeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func qualifies(obj types.Object, qual string) bool {
	if qual == "" {
		return true
	}
	if pkg, typ, ok := strings.Cut(qual, "."); ok && obj.Pkg() != nil && obj.Parent() != obj.Pkg().Scope() && !strings.Contains(typ, ".") {
		// pkg.Type.Member
		return (obj.Pkg().Name() == pkg || obj.Pkg().Path() == pkg) && qualifies(obj, typ)
	}
	if obj.Pkg() != nil && obj.Parent() == obj.Pkg().Scope() {
		return obj.Pkg().Name() == qual || obj.Pkg().Path() == qual
	}
	if v, ok := obj.(*types.Var); ok && v.IsField() && obj.Pkg() != nil {
		return fieldOf(obj.Pkg().Scope(), v) == qual
	}
	if f, ok := obj.(*types.Func); ok {
		if recv := f.Signature().Recv(); recv != nil {
			return typeName(recv.Type()) == qual
		}
	}
	return false
}

// fieldOf names the package-level type whose struct declares field v.
func fieldOf(scope *types.Scope, v *types.Var) string {
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := 0; i < st.NumFields(); i++ {
				if st.Field(i) == v {
					return name
				}
			}
		}
	}
	return ""
}

func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

func checkTarget(fset *token.FileSet, obj types.Object, target string) (*targetObj, error) {
	switch obj.(type) {
	case *types.Builtin, *types.Nil:
		return nil, fmt.Errorf("rename: %s is predeclared", target)
	}
	if obj.Pkg() == nil || !obj.Pos().IsValid() {
		return nil, fmt.Errorf("rename: %s is not declared in this module", target)
	}
	return &targetObj{obj: obj, key: keyOf(fset, obj.Pos())}, nil
}

// checkImportName allows renaming an import's explicit name (import l
// "path"), which is declared in its file; the package's own name, which
// uses borrow from the import path, would need a name added first. A file's
// import name may not equal anything its package declares.
func checkImportName(pkgs []*packages.Package, pn *types.PkgName, to string) error {
	named := false
	for _, p := range pkgs {
		for _, obj := range p.TypesInfo.Defs {
			if obj == pn {
				named = true
			}
		}
	}
	if !named {
		return fmt.Errorf("rename: %s is the name package %s declares, not a name this import gives it; name the import first (import %s %q)", pn.Name(), pn.Imported().Path(), to, pn.Imported().Path())
	}
	if prev := pn.Pkg().Scope().Lookup(to); prev != nil {
		return fmt.Errorf("rename: %s is already declared in package %s, so no file of it can import under that name", to, pn.Pkg().Name())
	}
	return nil
}

// checkConflict refuses a rename that would change what some identifier
// means: a name already declared where obj is, a member that already
// exists, or a reference that the new name would capture or be captured by.
func checkConflict(p *packages.Package, id *ast.Ident, obj types.Object, to string) error {
	if v, ok := obj.(*types.Var); ok && v.IsField() {
		return nil // checked through the selections below
	}
	if f, ok := obj.(*types.Func); ok && f.Signature().Recv() != nil {
		recv := f.Signature().Recv().Type()
		if o, _, _ := types.LookupFieldOrMethod(recv, true, f.Pkg(), to); o != nil {
			return fmt.Errorf("rename: %s already has a member %s", typeName(recv), to)
		}
		return nil // interfaces: see coupled
	}
	if obj.Parent() == nil {
		return nil
	}
	if p.Types != obj.Pkg() {
		// A use in another package: the qualified selector cannot be captured.
		return nil
	}
	if prev := obj.Parent().Lookup(to); prev != nil {
		return fmt.Errorf("rename: %s is already declared in the scope of %s (at %s)", to, obj.Name(), p.Fset.Position(prev.Pos()))
	}
	inner := p.Types.Scope().Innermost(id.Pos())
	if inner == nil {
		return nil
	}
	if s, o := inner.LookupParent(to, id.Pos()); o != nil && s != types.Universe && scopeWithin(s, obj.Parent()) {
		return fmt.Errorf("rename: %s at %s would be shadowed by %s declared at %s", obj.Name(), p.Fset.Position(id.Pos()), to, p.Fset.Position(o.Pos()))
	}
	// References to an outer "to" inside obj's scope would be captured.
	for uid, uobj := range p.TypesInfo.Uses {
		if uid.Name != to || uobj == nil {
			continue
		}
		if obj.Parent().Contains(uid.Pos()) || (obj.Parent() == p.Types.Scope() && uobj.Parent() == types.Universe) {
			if s := uobj.Parent(); s != nil && s != obj.Parent() && !scopeWithin(s, obj.Parent()) {
				return fmt.Errorf("rename: %s at %s refers to an outer %s that the renamed %s would capture", to, p.Fset.Position(uid.Pos()), to, obj.Name())
			}
		}
	}
	return nil
}

// scopeWithin reports whether s is outer or its descendant.
func scopeWithin(s, outer *types.Scope) bool {
	for ; s != nil; s = s.Parent() {
		if s == outer {
			return true
		}
	}
	return false
}

func parsePos(s string) (file string, line, col int, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || !strings.HasSuffix(parts[0], ".go") {
		return "", 0, 0, false
	}
	l, err1 := strconv.Atoi(parts[1])
	c, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || l < 1 || c < 1 {
		return "", 0, 0, false
	}
	return parts[0], l, c, true
}
