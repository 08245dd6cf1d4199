//go:build ignore

// gen resolves nethttp.src (hand-written requests) against this Go's
// GOROOT/src/net/http with go/packages and writes nethttp.jsonl: the
// declaration site(s) of each definition symbol, every use of each callers
// symbol (non-test and test files, with the enclosing function), and checks
// that the "none" cases' missing symbols are really missing and the
// ambiguous names really are declared more than three times.
//
//	go run gen.go [set]   (from this directory; set is nethttp unless named:
//	                       styles.src -> styles.jsonl)
//
// In a .src file, "#!author: TEXT" replaces the author line of the records'
// comment, and "#!style NAME" tags the records that follow with a style.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

type loc struct {
	File string `json:"file"` // relative to GOROOT/src
	Line int    `json:"line"`
	In   string `json:"in,omitempty"`    // callers: the enclosing function
	InAt int    `json:"in_at,omitempty"` // callers: the line declaring it
	Test bool   `json:"test,omitempty"`  // callers: the use is in a _test.go file
}

type record struct {
	ID       string `json:"id"`
	Request  string `json:"request"`
	Kind     string `json:"kind"` // definition | callers | none
	Symbol   string `json:"symbol,omitempty"`
	Expected []loc  `json:"expected,omitempty"` // definition: declaration site(s); callers: every use
	Declared []loc  `json:"declared,omitempty"` // callers: where the symbol itself is declared
	Outcome  string `json:"outcome,omitempty"`  // none: what should happen instead
	Go       string `json:"go"`
	Style    string `json:"style,omitempty"` // the phrasing style (#!style), when the set tags one
	Comment  string `json:"comment"`
}

var author = "held-out set, hand-written for issue #36 by a helper session that never opened the reader (tiers/ask, tiers/l2) or tiers/testdata/phrasings; "

var src = filepath.Join(runtime.GOROOT(), "src")

func rel(p string) string {
	r, err := filepath.Rel(src, p)
	if err != nil {
		log.Fatal(err)
	}
	return filepath.ToSlash(r)
}

func main() {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Dir: filepath.Join(src, "net/http"), Tests: true}
	pkgs, err := packages.Load(cfg, "net/http/...")
	if err != nil {
		log.Fatal(err)
	}
	// Test variants type-check a package again, so objects are keyed by
	// their declaration position, not identity.
	key := func(fset *token.FileSet, o types.Object) string {
		return fset.Position(o.Pos()).String()
	}
	base := map[string]*packages.Package{}
	declNames := map[string]int{} // name -> declarations outside _test.go files
	seenDecl := map[string]bool{}
	uses := map[string][]loc{}
	seenUse := map[string]bool{}
	for _, p := range pkgs {
		if p.ID == p.PkgPath {
			base[p.PkgPath] = p
		}
		for id, o := range p.TypesInfo.Defs {
			if o == nil || strings.HasSuffix(p.Fset.Position(id.Pos()).Filename, "_test.go") {
				continue
			}
			if _, isField := o.(*types.Var); isField && o.Parent() != o.Pkg().Scope() {
				continue
			}
			if _, isLabel := o.(*types.Label); isLabel {
				continue
			}
			if _, isPkg := o.(*types.PkgName); isPkg {
				continue
			}
			if o.Parent() != nil && o.Parent() != o.Pkg().Scope() {
				continue // locals
			}
			k := key(p.Fset, o)
			if !seenDecl[k] {
				seenDecl[k] = true
				declNames[o.Name()]++
			}
		}
		for _, f := range p.Syntax {
			funcs := enclosing(p.Fset, f)
			ast.Inspect(f, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				o := p.TypesInfo.Uses[id]
				if o == nil || o.Pkg() == nil {
					return true
				}
				pos := p.Fset.Position(id.Pos())
				k := key(p.Fset, o)
				in, at := funcs(id.Pos())
				u := loc{File: rel(pos.Filename), Line: pos.Line, In: in, InAt: at, Test: strings.HasSuffix(pos.Filename, "_test.go")}
				uk := k + "|" + u.File + fmt.Sprint(u.Line)
				if !seenUse[uk] {
					seenUse[uk] = true
					uses[k] = append(uses[k], u)
				}
				return true
			})
		}
	}

	set := "nethttp"
	if len(os.Args) > 1 {
		set = os.Args[1]
	}
	in, err := os.Open(set + ".src")
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(set + ".jsonl")
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	nth := map[string]int{}
	count := map[string]int{}
	sc := bufio.NewScanner(in)
	style := ""
	for sc.Scan() {
		line := sc.Text()
		if a, ok := strings.CutPrefix(line, "#!author: "); ok {
			author = a
			continue
		}
		if st, ok := strings.CutPrefix(line, "#!style "); ok {
			style = st
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "|")
		r := record{Go: runtime.Version(), Style: style}
		switch f[0] {
		case "D", "C":
			r.Symbol, r.Request = f[1], f[2]
			p, o := resolve(base, r.Symbol)
			nth[f[0]+r.Symbol]++
			phr := nth[f[0]+r.Symbol]
			if f[0] == "D" {
				r.Kind = "definition"
				r.Expected = declarations(p, o)
			} else {
				r.Kind = "callers"
				r.Expected = uses[key(p.Fset, o)]
				r.Declared = declarations(p, o)
				if len(r.Expected) == 0 {
					log.Fatalf("%s: no uses", r.Symbol)
				}
			}
			sort.Slice(r.Expected, func(i, j int) bool {
				a, b := r.Expected[i], r.Expected[j]
				if a.File != b.File {
					return a.File < b.File
				}
				return a.Line < b.Line
			})
			r.Comment = author + fmt.Sprintf("phrasing %d; locations from go/packages (go/types)", phr)
			if set == "nethttp" {
				r.Comment = author + fmt.Sprintf("phrasing %d of 2; locations from go/packages (go/types), cross-checked with gopls v0.23.0 on 2026-12-07 (workspace/symbol and definition for declarations, call_hierarchy for callers: all agree)", phr)
			}
		case "N":
			r.Kind, r.Symbol, r.Outcome, r.Request = "none", f[1], f[2], f[3]
			r.Comment = author + "must not close at L2"
			switch {
			case strings.HasPrefix(r.Outcome, "refuse: ambiguous"):
				n := declNames[r.Symbol]
				if n <= 3 {
					log.Fatalf("%s: declared %d times, not ambiguous", r.Symbol, n)
				}
				r.Outcome = fmt.Sprintf("%s: %s is declared %d times under net/http (outside tests)", r.Outcome, r.Symbol, n)
			case strings.HasPrefix(r.Outcome, "refuse:"):
				name := r.Symbol[strings.LastIndex(r.Symbol, ".")+1:]
				if declNames[name] > 0 {
					log.Fatalf("%s: %s is declared under net/http", r.Symbol, name)
				}
			}
			if r.Symbol == "-" {
				r.Symbol = ""
			}
		default:
			log.Fatalf("bad line %q", line)
		}
		count[r.Kind]++
		r.ID = fmt.Sprintf("%c%03d", r.Kind[0], count[r.Kind])
		if err := enc.Encode(r); err != nil {
			log.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %v", count)
}

// resolve finds "import/path.Name" or "import/path.(*T).M" / "(T).M".
func resolve(base map[string]*packages.Package, sym string) (*packages.Package, types.Object) {
	slash := strings.LastIndex(sym, "/")
	dot := slash + strings.Index(sym[slash:], ".")
	path, name := sym[:dot], sym[dot+1:]
	p := base[path]
	if p == nil {
		log.Fatalf("%s: no package %s", sym, path)
	}
	if !strings.HasPrefix(name, "(") {
		o := p.Types.Scope().Lookup(name)
		if o == nil {
			log.Fatalf("%s: not found", sym)
		}
		return p, o
	}
	close := strings.Index(name, ")")
	recv := strings.TrimPrefix(name[1:close], "*")
	meth := name[close+2:]
	tn, ok := p.Types.Scope().Lookup(recv).(*types.TypeName)
	if !ok {
		log.Fatalf("%s: no type %s", sym, recv)
	}
	o, _, _ := types.LookupFieldOrMethod(types.NewPointer(tn.Type()), true, p.Types, meth)
	if o == nil || o.Pkg() != p.Types {
		log.Fatalf("%s: no method %s", sym, meth)
	}
	return p, o
}

// declarations is the object's own declaration plus any declaration of the
// same name in the same directory under other build constraints
// (roundtrip.go and roundtrip_js.go both declare (*Transport).RoundTrip).
func declarations(p *packages.Package, o types.Object) []loc {
	pos := p.Fset.Position(o.Pos())
	locs := []loc{{File: rel(pos.Filename), Line: pos.Line}}
	recv := ""
	if f, ok := o.(*types.Func); ok && f.Type().(*types.Signature).Recv() != nil {
		t := f.Type().(*types.Signature).Recv().Type()
		if pt, ok := t.(*types.Pointer); ok {
			t = pt.Elem()
		}
		recv = t.(*types.Named).Obj().Name()
	}
	dir := filepath.Dir(pos.Filename)
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	fset := token.NewFileSet()
	for _, fn := range names {
		if fn == pos.Filename || strings.HasSuffix(fn, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, fn, nil, parser.SkipObjectResolution)
		if err != nil || f.Name.Name != o.Pkg().Name() {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name != o.Name() || (d.Recv == nil) != (recv == "") {
					continue
				}
				if recv != "" && recvName(d.Recv.List[0].Type) != recv {
					continue
				}
				locs = append(locs, loc{File: rel(fn), Line: fset.Position(d.Name.Pos()).Line})
			case *ast.GenDecl:
				if recv != "" {
					continue
				}
				for _, s := range d.Specs {
					var ids []*ast.Ident
					switch s := s.(type) {
					case *ast.TypeSpec:
						ids = []*ast.Ident{s.Name}
					case *ast.ValueSpec:
						ids = s.Names
					}
					for _, id := range ids {
						if id.Name == o.Name() {
							locs = append(locs, loc{File: rel(fn), Line: fset.Position(id.Pos()).Line})
						}
					}
				}
			}
		}
	}
	return locs
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// enclosing names the top-level function around a position, "F" or
// "(*T).M", and the line of its name.
func enclosing(fset *token.FileSet, f *ast.File) func(token.Pos) (string, int) {
	return func(pos token.Pos) (string, int) {
		for _, d := range f.Decls {
			if d.Pos() <= pos && pos < d.End() {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					return "", 0
				}
				at := fset.Position(fd.Name.Pos()).Line
				if fd.Recv == nil {
					return fd.Name.Name, at
				}
				star := ""
				if _, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
					star = "*"
				}
				return "(" + star + recvName(fd.Recv.List[0].Type) + ")." + fd.Name.Name, at
			}
		}
		return "", 0
	}
}
