package l1

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/tools/go/ast/astutil"
	"golang.org/x/tools/go/packages"
)

// Comment updates follow gopls's rename exactly, so that an editor user sees
// the same result from either: in the doc comment of each renamed
// declaration, every whole-word occurrence of the old name; and in the doc
// comments of every file of the declaring and importing packages, every doc
// link ([Name], [pkg.Name], [Type.Method], [*Type]) to an exported renamed
// object.

// fileOf returns the syntax tree of p holding pos.
func fileOf(p *packages.Package, pos token.Pos) *ast.File {
	for _, f := range p.Syntax {
		if f.FileStart <= pos && pos <= f.FileEnd {
			return f
		}
	}
	return nil
}

// declDoc returns the doc comment of the declaration id declares.
func declDoc(f *ast.File, id *ast.Ident, tok *token.File) *ast.CommentGroup {
	path, _ := astutil.PathEnclosingInterval(f, id.Pos(), id.End())
	for _, n := range path {
		switch d := n.(type) {
		case *ast.Ident:
		case *ast.FuncDecl:
			return d.Doc
		case *ast.Field:
			return d.Doc
		case *ast.GenDecl:
			return d.Doc
		case *ast.TypeSpec:
			if d.Doc != nil {
				return d.Doc
			}
		case *ast.ValueSpec:
			if d.Doc != nil {
				return d.Doc
			}
		case *ast.AssignStmt:
			if d.Tok != token.DEFINE {
				return nil
			}
			line := tok.Line(id.Pos())
			for _, c := range f.Comments {
				if c.Pos() > id.Pos() {
					continue
				}
				if tok.Line(c.End())+1 == line {
					return c
				}
			}
		default:
			return nil
		}
	}
	return nil
}

// isDirective reports whether a comment is a directive (//go:…, //line …).
func isDirective(c string) bool {
	if len(c) < 3 || c[1] != '/' {
		return false
	}
	c = c[2:]
	if strings.HasPrefix(c, "line ") {
		return true
	}
	colon := strings.Index(c, ":")
	if colon <= 0 || colon+1 >= len(c) {
		return false
	}
	for i := 0; i <= colon+1; i++ {
		if i == colon {
			continue
		}
		if b := c[i]; !('a' <= b && b <= 'z' || '0' <= b && b <= '9') {
			return false
		}
	}
	return true
}

// docWordSites adds the whole-word occurrences of from in doc.
func docWordSites(doc *ast.CommentGroup, tok *token.File, from string, add func(file string, off int)) {
	re := regexp.MustCompile(`\b` + from + `\b`)
	for _, c := range doc.List {
		if isDirective(c.Text) {
			continue
		}
		first := tok.Line(c.Pos())
		for i, line := range strings.Split(c.Text, "\n") {
			start := tok.Offset(c.Pos())
			if i > 0 {
				start = tok.Offset(tok.LineStart(first + i))
			}
			for _, loc := range re.FindAllStringIndex(line, -1) {
				add(filepath.Clean(tok.Name()), start+loc[0])
			}
		}
	}
}

// docLinkPattern matches doc links to an object; its first group is the name.
func docLinkPattern(pkgName, recvName, objName string, isType bool) *regexp.Regexp {
	p := `\[\*?`
	if pkgName != "" {
		p += pkgName + `\.`
	}
	if recvName != "" {
		p += recvName + `\.`
	}
	p += `(` + objName + `)`
	if isType {
		p += `(?:\.\w+)*`
	}
	return regexp.MustCompile(p + `\](?:[^:]|$)`)
}

// docLinkSites adds the doc links to obj in every file of every package
// that declares or imports obj's package.
func docLinkSites(pkgs []*packages.Package, obj types.Object, add func(file string, off int)) {
	if !obj.Exported() || obj.Pkg() == nil {
		return
	}
	recvName := ""
	if obj.Parent() != obj.Pkg().Scope() {
		f, ok := obj.(*types.Func)
		if !ok || f.Signature().Recv() == nil {
			return
		}
		t := f.Signature().Recv().Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		named, ok := types.Unalias(t).(*types.Named)
		if !ok || types.IsInterface(named.Underlying()) {
			return
		}
		name := named.Origin().Obj()
		if !name.Exported() || name.Parent() != name.Pkg().Scope() {
			return
		}
		recvName = name.Name()
	}
	_, isType := obj.(*types.TypeName)
	path := obj.Pkg().Path()
	for _, p := range pkgs {
		own := p.Types.Path() == path
		if _, imports := p.Imports[path]; !own && !imports {
			continue
		}
		for _, f := range p.Syntax {
			pat := docLinkPattern("", recvName, obj.Name(), isType)
			if !own {
				name := obj.Pkg().Name()
				for _, spec := range f.Imports {
					if ip := strings.Trim(spec.Path.Value, "\""); ip == path && spec.Name != nil && spec.Name.Name != "_" && spec.Name.Name != "." {
						name = spec.Name.Name
						break
					}
				}
				pat = docLinkPattern(name, recvName, obj.Name(), isType)
			}
			tok := p.Fset.File(f.Pos())
			scan := func(doc *ast.CommentGroup) {
				if doc == nil {
					return
				}
				for _, c := range doc.List {
					for _, loc := range pat.FindAllStringSubmatchIndex(c.Text, -1) {
						add(filepath.Clean(tok.Name()), tok.Offset(c.Pos())+loc[2])
					}
				}
			}
			scan(f.Doc)
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					scan(d.Doc)
				case *ast.FuncDecl:
					scan(d.Doc)
				}
			}
		}
	}
}
