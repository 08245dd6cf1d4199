package main

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/joulehook/joule/core"
)

// Class is a kind of request in the workload.
type Class string

// The request classes. Define and Callers are lookups answered from the
// index; Rename and Format are deterministic edits; Negative requests
// genuinely need a model and no cheap tier may claim them.
const (
	Define   Class = "define"
	Callers  Class = "callers"
	Rename   Class = "rename"
	Format   Class = "format"
	Negative Class = "negative"
)

// Classes in the order reports list them.
var Classes = []Class{Define, Callers, Rename, Format, Negative}

// Span is a range of lines in one file of a workspace: a declaration, from
// its doc comment to its end. Line is the line that matters inside it (the
// declaring identifier, or the call).
type Span struct {
	Path     string // slash-separated, relative to the workspace root
	Lo, Hi   int    // 1-based, inclusive
	Line     int
	Col      int    // the declaring identifier's column, when known (renames)
	Function string // for a call site: the calling function
}

// Request is one workload item with its ground truth.
type Request struct {
	ID     int
	Class  Class
	Prompt string
	Root   string // the workspace it applies to

	Symbol string // Define, Callers: the symbol as the prompt names it
	Def    Span   // Define: the true declaration
	Calls  []Span // Callers: every call site in the declaring package

	Want core.Files // Rename, Format: the whole workspace after the edit
	To   string     // Rename: the new name

	// Phrased marks a request asked as people type it (see phrased.go).
	Phrased bool

	// ReadBytes is what an agent without an index would read to do the
	// request (the files holding the answer), and OutBytes what it would
	// write; the scripted tiers turn both into tokens.
	ReadBytes, OutBytes int
}

// Workload is the requests and the workspaces they apply to.
type Workload struct {
	Requests []*Request
	Src      string // GOROOT/src: lookups and negative controls
	Notes    []string
}

// Mix is how many requests of each class a workload of n holds.
func Mix(n int) map[Class]int {
	m := map[Class]int{
		Define:   n * 40 / 100,
		Callers:  n * 15 / 100,
		Rename:   n * 15 / 100,
		Format:   n * 15 / 100,
		Negative: n * 15 / 100,
	}
	sum := 0
	for _, c := range Classes {
		sum += m[c]
	}
	m[Define] += n - sum
	return m
}

// stdPkg is one package of `go list std`.
type stdPkg struct {
	Path, Name, Dir string
	Imports         []string
	GoFiles         []string
	Cgo, Embeds     int
}

func listStd(ctx context.Context, env []string) ([]stdPkg, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-f",
		"{{.ImportPath}}\t{{.Name}}\t{{.Dir}}\t{{join .Imports \" \"}}\t{{join .GoFiles \" \"}}\t{{len .CgoFiles}}\t{{len .EmbedFiles}}", "std")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list std: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []stdPkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			return nil, fmt.Errorf("go list std: unexpected line %q", line)
		}
		p := stdPkg{Path: f[0], Name: f[1], Dir: f[2], Imports: strings.Fields(f[3]), GoFiles: strings.Fields(f[4])}
		fmt.Sscan(f[5], &p.Cgo)
		fmt.Sscan(f[6], &p.Embeds)
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// packageDirs counts, for each package name, the directories under src
// holding a Go file of that package: testdata and cmd included, since the
// index covers them too.
func packageDirs(src string) (map[string]int, error) {
	dirs := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly)
		if err != nil {
			return nil // not Go, or broken on purpose (testdata): no package name
		}
		name := f.Name.Name
		if dirs[name] == nil {
			dirs[name] = map[string]bool{}
		}
		dirs[name][filepath.Dir(path)] = true
		return nil
	})
	counts := map[string]int{}
	for n, ds := range dirs {
		counts[n] = len(ds)
	}
	return counts, err
}

// lookupPool is the std packages whose name names them alone in the whole
// tree (dirs from packageDirs), so that "pkg.Name" in a prompt is
// unambiguous across GOROOT/src.
func lookupPool(all []stdPkg, dirs map[string]int) []stdPkg {
	var pool []stdPkg
	for _, p := range all {
		if dirs[p.Name] != 1 || p.Cgo > 0 || p.Name == "main" || len(p.GoFiles) == 0 ||
			strings.HasPrefix(p.Path, "vendor/") || p.Path == "unsafe" || p.Path == "builtin" {
			continue
		}
		pool = append(pool, p)
	}
	return pool
}

// renamePool is the std packages a module outside GOROOT can hold a copy
// of: no internal or vendored imports, no cgo, no embedded files, small.
func renamePool(all []stdPkg, dirs map[string]int) []stdPkg {
	var pool []stdPkg
	for _, p := range lookupPool(all, dirs) {
		if strings.Contains(p.Path, "internal") || p.Embeds > 0 || len(p.GoFiles) > 8 {
			continue
		}
		ok := true
		for _, imp := range p.Imports {
			if strings.Contains(imp, "internal") || strings.HasPrefix(imp, "vendor/") || imp == "C" {
				ok = false
				break
			}
		}
		if ok {
			pool = append(pool, p)
		}
	}
	return pool
}

// sample returns k items of pool in a seeded order (all of them if k ≥ len).
func sample[T any](rng *rand.Rand, pool []T, k int) []T {
	idx := rng.Perm(len(pool))
	if k > len(pool) {
		k = len(pool)
	}
	out := make([]T, k)
	for i := range out {
		out[i] = pool[idx[i]]
	}
	return out
}

// roundRobin takes up to n items, one from each group in turn, so that a
// sample spreads over packages rather than draining the first.
func roundRobin[T any](groups [][]T, n int) []T {
	var out []T
	for i := 0; len(out) < n; i++ {
		took := false
		for _, g := range groups {
			if i < len(g) && len(out) < n {
				out = append(out, g[i])
				took = true
			}
		}
		if !took {
			break
		}
	}
	return out
}

const loadMode = packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
	packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo

// declSpan returns the span of the top-level declaration holding pos: from
// its doc comment (or the group's, for a grouped spec) to its end.
func declSpan(fset *token.FileSet, f *ast.File, pos token.Pos) (lo, hi int) {
	for _, d := range f.Decls {
		if pos < d.Pos() || pos > d.End() {
			continue
		}
		start := d.Pos()
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		}
		return fset.Position(start).Line, fset.Position(d.End()).Line
	}
	p := fset.Position(pos).Line
	return p, p
}

// topLevelCounts counts, over every non-test Go file of dir whatever its
// build constraints, the top-level declarations of each name ("Type.Method"
// for methods): a name declared once has one true answer.
func topLevelCounts(dir string) map[string]int {
	counts := map[string]int{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return counts
	}
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					name = recvName(d.Recv.List[0].Type) + "." + name
				}
				counts[name]++
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						counts[s.Name.Name]++
					case *ast.ValueSpec:
						for _, id := range s.Names {
							counts[id.Name]++
						}
					}
				}
			}
		}
	}
	return counts
}

func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// lookups builds the definition and caller requests over a seeded sample of
// std packages, with ground truth from go/types.
func lookups(ctx context.Context, rng *rand.Rand, env []string, src string, pool []stdPkg, nDef, nCall, nPkgs int) ([]*Request, []*Request, []string, error) {
	chosen := sample(rng, pool, nPkgs)
	paths := make([]string, len(chosen))
	for i, p := range chosen {
		paths[i] = p.Path
	}
	sort.Strings(paths)
	cfg := &packages.Config{Context: ctx, Mode: loadMode, Dir: src, Env: env, Fset: token.NewFileSet()}
	pkgs, err := packages.Load(cfg, paths...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("loading std packages: %w", err)
	}
	var defGroups, callGroups [][]*Request
	var notes []string
	for _, p := range pkgs {
		if len(p.Errors) > 0 || p.Types == nil {
			notes = append(notes, fmt.Sprintf("package %s skipped: %v", p.PkgPath, p.Errors))
			continue
		}
		defs, calls := pkgLookups(cfg.Fset, src, p)
		rng.Shuffle(len(defs), func(i, j int) { defs[i], defs[j] = defs[j], defs[i] })
		rng.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
		defGroups = append(defGroups, defs)
		callGroups = append(callGroups, calls)
	}
	return roundRobin(defGroups, nDef), roundRobin(callGroups, nCall), notes, nil
}

// pkgLookups lists every definition and caller request p supports, in
// source order.
func pkgLookups(fset *token.FileSet, src string, p *packages.Package) (defs, calls []*Request) {
	counts := topLevelCounts(filepath.Dir(p.CompiledGoFiles[0]))
	files := map[string]*ast.File{}
	for _, f := range p.Syntax {
		files[fset.Position(f.Package).Filename] = f
	}
	rel := func(pos token.Pos) (string, *ast.File) {
		fn := fset.Position(pos).Filename
		r, err := filepath.Rel(src, fn)
		if err != nil || strings.HasPrefix(r, "..") {
			return "", nil
		}
		return filepath.ToSlash(r), files[fn]
	}
	def := func(obj types.Object, symbol, key string) {
		if counts[key] != 1 || obj.Name() == "_" || obj.Name() == "init" {
			return
		}
		path, f := rel(obj.Pos())
		if f == nil || strings.HasSuffix(path, "_test.go") {
			return
		}
		lo, hi := declSpan(fset, f, obj.Pos())
		line := fset.Position(obj.Pos()).Line
		defs = append(defs, &Request{
			Class:  Define,
			Prompt: "where is " + symbol + " defined",
			Symbol: symbol,
			Def:    Span{Path: path, Lo: lo, Hi: hi, Line: line},
		})
	}
	scope := p.Types.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		def(obj, p.Name+"."+name, name)
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		for i := 0; i < named.NumMethods(); i++ {
			m := named.Method(i)
			def(m, p.Name+"."+name+"."+m.Name(), name+"."+m.Name())
		}
	}

	// Who calls an unexported function: every use must be a call, so the
	// call sites in this package are the whole answer.
	sites := map[*types.Func][]Span{}
	nonCall := map[*types.Func]bool{}
	for _, f := range p.Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
					if fn, ok := p.TypesInfo.Uses[id].(*types.Func); ok && fn.Pkg() == p.Types {
						path, _ := rel(id.Pos())
						lo, hi := declSpan(fset, f, id.Pos())
						sites[fn] = append(sites[fn], Span{Path: path, Lo: lo, Hi: hi, Line: fset.Position(id.Pos()).Line, Function: enclosing(f, id.Pos())})
					}
				}
			}
			return true
		})
	}
	calledIDs := map[*ast.Ident]bool{}
	for _, f := range p.Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
					calledIDs[id] = true
				}
			}
			return true
		})
	}
	for id, obj := range p.TypesInfo.Uses {
		if fn, ok := obj.(*types.Func); ok && !calledIDs[id] {
			nonCall[fn] = true
		}
	}
	for _, name := range scope.Names() {
		fn, ok := scope.Lookup(name).(*types.Func)
		if !ok || fn.Exported() || counts[name] != 1 || nonCall[fn] {
			continue
		}
		s := sites[fn]
		if len(s) == 0 || len(s) > 8 {
			continue
		}
		path, f := rel(fn.Pos())
		if f == nil || strings.HasSuffix(path, "_test.go") {
			continue
		}
		lo, hi := declSpan(fset, f, fn.Pos())
		symbol := p.Name + "." + name
		calls = append(calls, &Request{
			Class:  Callers,
			Prompt: "who calls " + symbol,
			Symbol: symbol,
			Def:    Span{Path: path, Lo: lo, Hi: hi, Line: fset.Position(fn.Pos()).Line},
			Calls:  s,
		})
	}
	return defs, calls
}

// enclosing names the top-level function holding pos, "" outside one.
func enclosing(f *ast.File, pos token.Pos) string {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= pos && pos <= fd.End() {
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				return recvName(fd.Recv.List[0].Type) + "." + fd.Name.Name
			}
			return fd.Name.Name
		}
	}
	return ""
}

// fileBytes is the size of the named files of root, for the token model.
func fileBytes(root string, paths ...string) int {
	n := 0
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil {
			n += int(fi.Size())
		}
	}
	return n
}
