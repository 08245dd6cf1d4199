package l1

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/joulehook/joule/core"
)

// Package renames, as gopls makes them less the directory move: the
// package clause of every file of the package (its in-package and external
// tests too: NAME_test follows), and in every file importing it without an
// explicit name, each qualified use. Where the new name is taken in an
// importing file, the import gets an explicit name NEW1, NEW2, …, as gopls
// does. The directory and the import path stay: gopls would also move the
// directory to match the new name, and a coding op cannot move files.

// pkgPrefix introduces a package target: "package NAME|PATH|DIR".
const pkgPrefix = "package "

// packageTarget finds the package a rename target names: "package X" (X an
// import path, a directory relative to the workspace, or a package name
// that is unique), or a position on a file's package clause.
func packageTarget(fset *token.FileSet, pkgs []*packages.Package, root, target string) (*packages.Package, bool, error) {
	var primary []*packages.Package // each package once, without test variants
	for _, p := range pkgs {
		if p.ID == p.PkgPath && !strings.HasSuffix(p.PkgPath, "_test") && !strings.HasSuffix(p.PkgPath, ".test") {
			primary = append(primary, p)
		}
	}
	dirOf := func(p *packages.Package) string {
		if len(p.GoFiles) == 0 {
			return ""
		}
		rel, err := filepath.Rel(root, filepath.Dir(p.GoFiles[0]))
		if err != nil {
			return ""
		}
		return filepath.ToSlash(rel)
	}
	if file, line, col, ok := parsePos(target); ok {
		abs := filepath.Clean(filepath.Join(root, filepath.FromSlash(file)))
		for _, p := range pkgs {
			for _, f := range p.Syntax {
				pos := fset.Position(f.Name.Pos())
				if filepath.Clean(pos.Filename) != abs || pos.Line != line || col < pos.Column || col >= pos.Column+len(f.Name.Name) {
					continue
				}
				if strings.HasSuffix(f.Name.Name, "_test") && strings.HasSuffix(p.PkgPath, "_test") {
					return nil, true, fmt.Errorf("rename: %s is an external test package; its name follows its package's: rename that one", target)
				}
				for _, q := range primary {
					if q.PkgPath == strings.TrimSuffix(p.PkgPath, "_test") {
						return q, true, nil
					}
				}
				return nil, true, fmt.Errorf("rename: the package at %s is not a package of the module", target)
			}
		}
		return nil, false, nil // not on a package clause: an identifier
	}
	if !strings.HasPrefix(target, pkgPrefix) {
		return nil, false, nil
	}
	want := strings.TrimSpace(strings.TrimPrefix(target, pkgPrefix))
	var found []*packages.Package
	for _, p := range primary {
		if p.PkgPath == want || dirOf(p) == strings.TrimPrefix(strings.TrimSuffix(want, "/"), "./") {
			return p, true, nil
		}
		if p.Name == want {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return nil, true, fmt.Errorf("rename: no package %s in the module", want)
	case 1:
		return found[0], true, nil
	}
	var paths []string
	for _, p := range found {
		paths = append(paths, p.PkgPath)
	}
	sort.Strings(paths)
	return nil, true, fmt.Errorf("rename: %d packages are named %s (%s); name one by its import path or directory", len(found), want, strings.Join(paths, ", "))
}

// textEdit replaces n bytes at off by text.
type textEdit struct {
	off, n int
	text   string
}

func renamePackage(fset *token.FileSet, pkgs []*packages.Package, root string, files core.Files, target *packages.Package, to string) (core.Files, string, error) {
	old := target.Name
	switch {
	case strings.ContainsAny(to, "/."):
		return nil, "", fmt.Errorf("rename: moving package %s to %s is not supported: a coding op cannot move files (name the package, not a path)", old, to)
	case !token.IsIdentifier(to) || to == "_":
		return nil, "", fmt.Errorf("rename: %q is not a valid package name", to)
	case old == "main":
		return nil, "", fmt.Errorf("rename: %s is a main package (a command); renaming it would make it a library", target.PkgPath)
	case to == "main" || to == "init":
		return nil, "", fmt.Errorf("rename: %q is not a name for an importable package", to)
	case to == old:
		return nil, "", fmt.Errorf("rename: package %s is already called %s", target.PkgPath, to)
	}
	edits := map[string][]textEdit{} // workspace-relative file → edits
	relOf := func(abs string) (string, error) {
		rel, err := filepath.Rel(root, filepath.Clean(abs))
		if err != nil || strings.HasPrefix(rel, "..") {
			return "", fmt.Errorf("rename: %s is outside the workspace", abs)
		}
		return filepath.ToSlash(rel), nil
	}
	// The package clauses: every Go file in the package's directory that
	// declares it or its external test, whatever its build constraints.
	dir, err := relOf(filepath.Dir(target.GoFiles[0]))
	if err != nil {
		return nil, "", err
	}
	clauses := 0
	for _, p := range files.Paths() {
		if !strings.HasSuffix(p, ".go") || path.Dir(p) != dir {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, files[p], parser.PackageClauseOnly)
		if err != nil {
			return nil, "", fmt.Errorf("rename: %s: %v", p, err)
		}
		off := int(f.Name.Pos()) - 1 // the only file of its FileSet: base 1
		switch f.Name.Name {
		case old:
			edits[p] = append(edits[p], textEdit{off, len(old), to})
		case old + "_test":
			edits[p] = append(edits[p], textEdit{off, len(old), to})
		default:
			continue
		}
		clauses++
	}
	// The importers: per file, across every variant type-checking it.
	type use struct {
		p   *packages.Package
		f   *ast.File
		imp *ast.ImportSpec
		pn  *types.PkgName
	}
	byFile := map[string][]use{}
	var order []string
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			for _, imp := range f.Imports {
				ipath, _ := strconv.Unquote(imp.Path.Value)
				if imp.Name != nil || ipath != target.PkgPath {
					continue
				}
				pn, ok := p.TypesInfo.Implicits[imp].(*types.PkgName)
				if !ok {
					return nil, "", fmt.Errorf("rename: no type information for the import of %s at %s", ipath, fset.Position(imp.Pos()))
				}
				rel, err := relOf(fset.Position(f.Pos()).Filename)
				if err != nil {
					return nil, "", err
				}
				if byFile[rel] == nil {
					order = append(order, rel)
				}
				byFile[rel] = append(byFile[rel], use{p, f, imp, pn})
			}
		}
	}
	sort.Strings(order)
	importers, explicit := 0, 0
	for _, rel := range order {
		us := byFile[rel]
		local := to
		taken := func(name string) bool {
			for _, u := range us {
				if u.p.TypesInfo.Scopes[u.f].Lookup(name) != nil || u.p.Types.Scope().Lookup(name) != nil {
					return true
				}
			}
			return false
		}
		for try := 1; taken(local); try++ {
			local = to + strconv.Itoa(try)
		}
		offs := map[int]bool{}
		for _, u := range us {
			for id, obj := range u.p.TypesInfo.Uses {
				if obj != u.pn {
					continue
				}
				scope := u.p.Types.Scope().Innermost(id.Pos())
				if scope == nil {
					continue
				}
				if s, o := scope.LookupParent(local, id.Pos()); o != nil {
					if s != types.Universe {
						return nil, "", fmt.Errorf("rename: in %s, the use of package %s at %s would refer to the %s %s declared at %s",
							rel, old, fset.Position(id.Pos()), objKind(o), local, fset.Position(o.Pos()))
					}
					if usesUniverse(u.p, u.f, local) {
						return nil, "", fmt.Errorf("rename: in %s, the import named %s would hide the predeclared %s the file uses", rel, local, local)
					}
				}
				offs[fset.Position(id.Pos()).Offset] = true
			}
		}
		for off := range offs {
			edits[rel] = append(edits[rel], textEdit{off, len(old), local})
		}
		if local != to {
			edits[rel] = append(edits[rel], textEdit{fset.Position(us[0].imp.Path.Pos()).Offset, 0, local + " "})
			explicit++
		}
		importers++
	}
	next := files.Clone()
	for rel, es := range edits {
		src, ok := files[rel]
		if !ok {
			return nil, "", fmt.Errorf("rename: %s is not in the workspace snapshot", rel)
		}
		out, err := applyEdits(src, es, old)
		if err != nil {
			return nil, "", fmt.Errorf("rename: %s: %v", rel, err)
		}
		next[rel] = out
	}
	sum := fmt.Sprintf("renamed package %s to %s: the package clause in %d file(s), its uses in %d importing file(s)", old, to, clauses, importers)
	if explicit > 0 {
		sum += fmt.Sprintf(" (%d import(s) named explicitly where %s is taken)", explicit, to)
	}
	return next, sum + fmt.Sprintf("; directory %s and import path %s unchanged", dir, target.PkgPath), nil
}

// applyEdits applies non-overlapping edits; each replacement must find the
// old name where it was computed.
func applyEdits(src []byte, es []textEdit, old string) ([]byte, error) {
	sort.Slice(es, func(i, j int) bool { return es[i].off < es[j].off || es[i].off == es[j].off && es[i].n < es[j].n })
	var out []byte
	last := 0
	for _, e := range es {
		if e.off < last || e.off+e.n > len(src) {
			return nil, fmt.Errorf("overlapping edits at byte %d", e.off)
		}
		if e.n > 0 && string(src[e.off:e.off+e.n]) != old {
			return nil, fmt.Errorf("byte %d does not hold %s (the file changed while it was analysed)", e.off, old)
		}
		out = append(out, src[last:e.off]...)
		out = append(out, e.text...)
		last = e.off + e.n
	}
	return append(out, src[last:]...), nil
}

// usesUniverse reports whether file f of p refers to the predeclared name.
func usesUniverse(p *packages.Package, f *ast.File, name string) bool {
	for id, obj := range p.TypesInfo.Uses {
		if id.Name == name && obj != nil && obj.Parent() == types.Universe && f.FileStart <= id.Pos() && id.Pos() <= f.FileEnd {
			return true
		}
	}
	return false
}

func objKind(o types.Object) string {
	switch o.(type) {
	case *types.Var:
		return "variable"
	case *types.Const:
		return "constant"
	case *types.TypeName:
		return "type"
	case *types.Func:
		return "function"
	case *types.PkgName:
		return "import"
	case *types.Label:
		return "label"
	}
	return "declaration"
}
