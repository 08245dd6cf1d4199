//go:build ignore

// gen writes nethttp.jsonl: look-up requests about GOROOT's net/http,
// phrased many ways, with the answer go/types gives. It was written before
// (and without reading) the reader in tiers/l1, so the phrasings are not
// shaped by the reader's vocabulary.
//
//	go run gen.go > nethttp.jsonl
//
// Expected definitions are types.Object positions from type-checking
// net/http's own files (importer "source"); paths are relative to the
// workspace, $GOROOT/src/net/http. Call-site counts come from the syntax of
// every file under that directory, tests included.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Case is one request and what a correct reader does with it.
type Case struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`             // definition, callers, rename, format, other, ambiguous
	Prompt string `json:"prompt"`           // what the person typed
	Intent string `json:"intent,omitempty"` // definition, callers, rename, format; empty when nothing may close
	Symbol string `json:"symbol,omitempty"` // bare name, or Recv.Method
	// For definitions: where go/types says the symbol is declared.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// For callers: call sites found in the syntax (tests included).
	CallSites int    `json:"call_sites,omitempty"`
	NewName   string `json:"new_name,omitempty"`
	Close     bool   `json:"close"` // must some tier close it with a look-up/edit answer?
	Why       string `json:"why,omitempty"`
	GoVersion string `json:"go"`
}

var root = filepath.Join(runtime.GOROOT(), "src", "net", "http")

type sym struct {
	name, display string // display is Recv.Method for methods
	kind          string // func, method, type, var, const
	file          string
	line          int
	bareUnique    bool // the bare name is declared once in the whole tree
}

func main() {
	fset := token.NewFileSet()
	count := map[string]int{} // bare name -> declarations in the tree
	calls := map[string]int{} // bare callee name -> call sites in the tree
	var pkgFiles []*ast.File  // net/http itself, no tests
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil
		}
		for _, dd := range f.Decls {
			switch x := dd.(type) {
			case *ast.FuncDecl:
				count[x.Name.Name]++
			case *ast.GenDecl:
				for _, s := range x.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						count[s.Name.Name]++
					case *ast.ValueSpec:
						for _, n := range s.Names {
							count[n.Name]++
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				switch fn := c.Fun.(type) {
				case *ast.Ident:
					calls[fn.Name]++
				case *ast.SelectorExpr:
					calls[fn.Sel.Name]++
				}
			}
			return true
		})
		if filepath.Dir(p) == root && !strings.HasSuffix(p, "_test.go") && f.Name.Name == "http" {
			pkgFiles = append(pkgFiles, f)
		}
		return nil
	})
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
	pkg, _ := conf.Check("net/http", fset, pkgFiles, nil)

	var syms []sym
	pos := func(o types.Object) (string, int) {
		p := fset.Position(o.Pos())
		rel, _ := filepath.Rel(root, p.Filename)
		return rel, p.Line
	}
	sc := pkg.Scope()
	for _, n := range sc.Names() {
		o := sc.Lookup(n)
		if len(n) < 4 || n == "_" || strings.HasPrefix(n, "http2") || strings.HasPrefix(n, "_") {
			continue // short names read as words; the bundled http2 copy is vendored code
		}
		f, l := pos(o)
		if strings.HasPrefix(f, "h2_") {
			continue
		}
		k := ""
		switch o.(type) {
		case *types.Func:
			k = "func"
		case *types.TypeName:
			k = "type"
		case *types.Var:
			k = "var"
		case *types.Const:
			k = "const"
		}
		syms = append(syms, sym{n, n, k, f, l, count[n] == 1})
		if tn, ok := o.(*types.TypeName); ok {
			if nt, ok := tn.Type().(*types.Named); ok {
				for i := 0; i < nt.NumMethods(); i++ {
					m := nt.Method(i)
					f, l := pos(m)
					if strings.HasPrefix(f, "h2_") || len(m.Name()) < 4 {
						continue
					}
					syms = append(syms, sym{m.Name(), n + "." + m.Name(), "method", f, l, count[m.Name()] == 1})
				}
			}
		}
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].display < syms[j].display })
	rng := rand.New(rand.NewSource(36))
	rng.Shuffle(len(syms), func(i, j int) { syms[i], syms[j] = syms[j], syms[i] })

	var out []Case
	add := func(c Case) {
		c.GoVersion = runtime.Version()
		c.ID = fmt.Sprintf("%s-%03d", c.Kind, len(out)+1)
		out = append(out, c)
	}

	// Definitions: 60 symbols unique by bare name, 10 methods named with their receiver.
	var defs, methodDefs []sym
	for _, s := range syms {
		if s.kind == "method" {
			if len(methodDefs) < 12 && !s.bareUnique && count[s.name] <= 6 {
				methodDefs = append(methodDefs, s)
			}
			if s.bareUnique && len(defs) < 70 && countKind(defs, "method") < 15 {
				defs = append(defs, s)
			}
			continue
		}
		if s.bareUnique && len(defs) < 70 {
			defs = append(defs, s)
		}
	}
	t := 0
	for _, s := range defs {
		for k := 0; k < 3; k++ {
			tpl := defTemplates[t%len(defTemplates)]
			t++
			add(Case{Kind: "definition", Prompt: render(tpl, s.display, s.kind, rng), Intent: "definition", Symbol: s.display, File: s.file, Line: s.line, Close: true})
		}
	}
	for _, s := range methodDefs {
		for k := 0; k < 2; k++ {
			tpl := defTemplates[t%len(defTemplates)]
			t++
			add(Case{Kind: "definition", Prompt: render(tpl, s.display, "method", rng), Intent: "definition", Symbol: s.display, File: s.file, Line: s.line, Close: true,
				Why: "the bare method name is declared more than once; the receiver picks one"})
		}
	}

	// Callers: 30 functions and methods called at least twice, unique by bare name.
	var callees []sym
	for _, s := range syms {
		if (s.kind == "func" || s.kind == "method") && s.bareUnique && calls[s.name] >= 2 && len(callees) < 32 && !contains(defs, s) {
			callees = append(callees, s)
		}
	}
	t = 0
	for _, s := range callees {
		for k := 0; k < 3; k++ {
			tpl := callTemplates[t%len(callTemplates)]
			t++
			add(Case{Kind: "callers", Prompt: render(tpl, s.display, s.kind, rng), Intent: "callers", Symbol: s.display, CallSites: calls[s.name], Close: true})
		}
	}

	for i, s := range pick(syms, 15, func(s sym) bool { return s.bareUnique && s.kind != "method" && s.kind != "const" }) {
		nn := s.name + "V2"
		tpl := renameTemplates[i%len(renameTemplates)]
		add(Case{Kind: "rename", Prompt: strings.NewReplacer("{X}", s.display, "{Y}", nn).Replace(tpl), Intent: "rename", Symbol: s.display, NewName: nn, Close: true})
	}
	for _, p := range formatPrompts {
		add(Case{Kind: "format", Prompt: p, Intent: "format", Close: true})
	}
	for _, p := range otherPrompts {
		add(Case{Kind: "other", Prompt: p, Close: false, Why: "not a look-up, rename or format"})
	}
	for _, a := range ambiguousPrompts {
		add(Case{Kind: "ambiguous", Prompt: a[0], Close: false, Why: a[1]})
	}

	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, c := range out {
		enc.Encode(c)
	}
}

func countKind(s []sym, k string) int {
	n := 0
	for _, x := range s {
		if x.kind == k {
			n++
		}
	}
	return n
}

func contains(s []sym, x sym) bool {
	for _, y := range s {
		if y.display == x.display {
			return true
		}
	}
	return false
}

func pick(s []sym, n int, ok func(sym) bool) []sym {
	var r []sym
	for i := len(s) - 1; i >= 0 && len(r) < n; i-- { // from the end: other symbols than defs
		if ok(s[i]) {
			r = append(r, s[i])
		}
	}
	return r
}

// render fills a template with the name written one of the ways people
// write names: bare, in backticks, called, package-qualified, receiver-qualified.
func render(tpl, display, kind string, rng *rand.Rand) string {
	name := display
	switch rng.Intn(6) {
	case 1:
		name = "`" + display + "`"
	case 2:
		if kind == "func" || kind == "method" {
			name = display + "()"
		}
	case 3:
		if kind == "method" {
			recv, m, _ := strings.Cut(display, ".")
			name = "(*" + recv + ")." + m
		} else {
			name = "http." + display
		}
	case 4:
		if kind == "method" || kind == "func" {
			name = "`" + display + "()`"
		} else {
			name = "`http." + display + "`"
		}
	}
	kw := map[string]string{"func": "function", "method": "method", "type": "type", "var": "variable", "const": "constant"}[kind]
	return strings.NewReplacer("{X}", name, "{K}", kw).Replace(tpl)
}

var defTemplates = []string{
	"Where is {X} defined?",
	"Where's the definition of {X}?",
	"where's {X} defined",
	"Show me where {X} is declared.",
	"show me the declaration of {X}",
	"find the definition of {X}",
	"Find {X}",
	"go to definition: {X}",
	"jump to the definition of {X}",
	"Where is {X} implemented?",
	"Which file declares {X}?",
	"In which file is the {K} {X} defined?",
	"definition of {X} please",
	"{X} definition",
	"def of {X}?",
	"where's {X} declared at",
	"Could you please tell me where {X} is defined?",
	"I'm looking for the definition of {X}.",
	"Can you locate where {X} gets defined?",
	"where is {X} declared",
	"WHERE IS {X} DEFINED",
	"wheres the defintion of {X}",
	"were is {X} decalred?",
	"pls find where {X} is defined thx",
	"Hey, quick question: where's {X} defined?",
	"{X}: where is it declared?",
	"Where do we define {X}?",
	"where did we declare {X}",
	"Where can I find the definition for {X}?",
	"I need to see where {X} is defined.",
	"Point me to the definition of {X}.",
	"definition: {X}",
	"Where is the {K} {X} defined?",
	"where's the {K} {X} declared?",
	"find where {X} is implemented",
	"Show the definition of {X}",
	"where is {X} defined?? can't find it",
	"Where exactly is {X} declared in this repo?",
	"what file defines {X}",
	"Where's {X} declared?",
	"can u show me where {X} is defined",
	"Tell me where the {K} {X} is declared, please.",
}

var callTemplates = []string{
	"Who calls {X}?",
	"who's calling {X}",
	"What calls {X}?",
	"Find all callers of {X}.",
	"find callers of {X}",
	"show me the callers of {X}",
	"List every caller of {X}",
	"Where is {X} called?",
	"where is {X} called from",
	"where's {X} used?",
	"who uses {X}",
	"find usages of {X}",
	"show all usages of {X}",
	"find references to {X}",
	"show references of {X}",
	"which functions call {X}?",
	"call sites of {X}",
	"{X} callers",
	"callers: {X}",
	"who invokes {X}?",
	"where do we call {X}?",
	"Can you find everywhere {X} gets called?",
	"I'd like to see all the places that call {X}, please.",
	"who calles {X}",
	"find all calers of {X}",
	"what uses {X}?",
	"Where is {X} being used?",
	"list the call sites for {X}",
	"Show me who calls {X}",
	"WHO CALLS {X}",
	"Where's {X} referenced?",
}

var renameTemplates = []string{
	"rename {X} to {Y}",
	"Rename `{X}` to `{Y}`.",
	"please change the name of {X} to {Y}",
	"Can you rename {X} -> {Y}?",
	"rename the symbol {X} as {Y}",
}

var formatPrompts = []string{
	"format server.go",
	"gofmt client.go",
	"run gofmt on cookie.go",
	"please format the file request.go",
	"Can you gofmt transport.go?",
	"reformat header.go",
	"format `fs.go` please",
	"run go fmt on status.go",
}

var otherPrompts = []string{
	"write a unit test for Server.Shutdown",
	"explain how the HTTP/2 transport negotiates ALPN",
	"add a timeout to the default client",
	"fix the data race in Transport",
	"what's the weather like today?",
	"summarize this repository",
	"delete cookie.go",
	"refactor ServeMux to use generics",
	"why is ListenAndServe slow?",
	"hello",
	"",
	"???",
	"thanks!",
	"how do I set a cookie in a handler?",
	"write a README for net/http",
	"implement HTTP/3",
	"make Client retry on 503",
	"what does Hijacker do?",
	"document the Cookie type",
	"translate the comments in server.go to French",
	"run the tests",
	"commit my changes",
	"optimize readRequest",
	"is FileServer safe against path traversal?",
	"add logging to every handler",
}

var ambiguousPrompts = [][2]string{
	{"rename NewRequest to NewRequest2 and show me who calls it", "two intents: rename and callers"},
	{"where is ServeMux defined and who calls NewRequest?", "two intents and two symbols"},
	{"where are Cookie and Header defined?", "two symbols that resolve"},
	{"who calls Redirect or NotFound?", "two symbols that resolve"},
	{"find the definition of ParseHTTPVersion, StatusText and DetectContentType", "three symbols"},
	{"where is FrobnicateWidget defined?", "no such symbol"},
	{"who calls doesNotExistAnywhere?", "no such symbol"},
	{"where's the definition of flubberHandlerX?", "no such symbol"},
	{"where is ServeHTTP defined?", "declared by many types"},
	{"where is String defined?", "declared by many types"},
	{"where's Close declared?", "declared by many types"},
	{"Where's the definition of Write?", "declared by many types"},
	{"show me where Read is declared", "declared by many types"},
	{"where is Header defined?", "declared as a type and as methods on several types"},
	{"where is it defined?", "no symbol"},
	{"who calls this?", "no symbol"},
	{"where is the definition?", "no symbol"},
	{"find callers", "no symbol"},
	{"rename it", "no symbol"},
	{"where is ServeHTTP called?", "many methods of that name"},
	{"who calls Close?", "many methods of that name"},
	{"rename Server to Srv and format server.go", "two intents"},
	{"find the definition of Server and then rename it to Srv", "two intents"},
	{"who calls ListenAndServe and where is Serve defined?", "two intents"},
	{"show me where the handler is declared", "a word, not a symbol"},
	{"where is the server defined", "a word, not a symbol"},
	{"who calls the client?", "a word, not a symbol"},
	{"define a new type called Widget", "a request to write code, not to look up"},
	{"declare a variable named maxRetries in client.go", "a request to write code"},
	{"call NewRequest with a nil body", "a request to write code"},
}
