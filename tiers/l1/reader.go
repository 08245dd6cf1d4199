package l1

import (
	"fmt"
	"go/token"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/joulehook/joule/tiers/l1/lsp"
)

// The request reader turns a request as people type it in an editor's
// agent panel ("Rename the method `Hello` of `Greeter` in greet/greet.go to
// `Greet`.", "Run gofmt on main.go.", "where is (*Server).Serve defined")
// into a Command, deterministically: every word of the request must be
// understood, or the reader declines with a one-line reason. Nothing is
// guessed: a request naming a symbol's kind, file or line is only closed
// when the symbol found has that kind, file and line (see Symbol).

// Kind is the kind of symbol a request names. The kinds are language
// neutral: a resolver for another language maps its own declarations onto
// them.
type Kind string

// The symbol kinds a request can name.
const (
	KindAny       Kind = ""
	KindFunc      Kind = "function" // a package-level function (not a method)
	KindMethod    Kind = "method"   // a method, of a concrete type or an interface
	KindType      Kind = "type"     // any named type
	KindStruct    Kind = "struct"   // a type whose underlying type is a struct
	KindInterface Kind = "interface"
	KindField     Kind = "field"
	KindVar       Kind = "variable" // a package-level or local variable
	KindConst     Kind = "constant"
	KindParam     Kind = "parameter" // a parameter, result or receiver
	KindPackage   Kind = "package"
	KindImport    Kind = "import" // the name an import gives a package
	KindClass     Kind = "class"  // a class (TypeScript, JavaScript, Python): a type
)

// Matches reports whether a declaration of kind got satisfies a request
// naming kind k: a struct or an interface is a type; a function's
// parameter is not a variable.
func (k Kind) Matches(got Kind) bool {
	switch k {
	case KindAny:
		return true
	case KindType:
		return got == KindType || got == KindStruct || got == KindInterface || got == KindClass
	}
	return k == got
}

// Symbol is what a request says about the symbol it names. Name is as the
// request spells it: X, pkg.X, T.M or pkg.T.M (a package's name or path
// when Kind is KindPackage); it may be empty when a position names it.
// Every other field is what the request added, empty when unsaid, and each
// must agree with the declaration found.
type Symbol struct {
	Name string
	Kind Kind
	File string // the file it is declared in (or, with Col, where it occurs): a path or a base name
	Line int    // the line of its declaration (with Col: of any occurrence)
	Col  int    // byte column, 1-based; only with File and Line
	Pkg  string // the package declaring it: a name, an import path or a directory
	Func string // the function declaring it, for a parameter or a local
}

// Lang is the language a request is about, from the file it names ("go"
// when it names none: the resolvers today are Go's).
func (s Symbol) Lang() string {
	switch path.Ext(s.File) {
	case ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs":
		return "typescript"
	case ".py", ".pyi":
		return "python"
	case "", ".go":
		return "go"
	}
	return strings.TrimPrefix(path.Ext(s.File), ".")
}

// Pos reports whether the symbol is named by a position.
func (s Symbol) Pos() bool { return s.File != "" && s.Line > 0 && s.Col > 0 }

// String renders the symbol as a person would read it.
func (s Symbol) String() string {
	var b strings.Builder
	if s.Kind != KindAny {
		b.WriteString(string(s.Kind) + " ")
	}
	b.WriteString(s.Name)
	if s.Func != "" {
		b.WriteString(" in func " + s.Func)
	}
	if s.Pkg != "" {
		b.WriteString(" in package " + s.Pkg)
	}
	switch {
	case s.Pos():
		fmt.Fprintf(&b, " at %s:%d:%d", s.File, s.Line, s.Col)
	case s.File != "" && s.Line > 0:
		fmt.Fprintf(&b, " at %s:%d", s.File, s.Line)
	case s.File != "":
		b.WriteString(" in " + s.File)
	case s.Line > 0:
		fmt.Fprintf(&b, " on line %d", s.Line)
	}
	return strings.TrimSpace(b.String())
}

// Want is what a look-up asks for.
type Want int

const (
	// Definition: where the symbol is declared.
	Definition Want = iota
	// Uses: its declaration, then every use.
	Uses
	// Callers: every call of a function or method.
	Callers
)

// Lookup answers where a symbol is declared, used or called; it changes
// nothing. OrText lets a bare word that no declaration has be answered as
// a text search (a "find TODO").
type Lookup struct {
	Target Symbol
	Want   Want
	OrText bool
	// Builds are the target's other declarations, one per build
	// (roundtrip_js.go beside roundtrip.go), as FILE:LINE:COL: text.
	Builds []string
}

func (Lookup) verb() string { return "lookup" }

// Declined is the reader's one-line reason for not closing a request that
// it recognised as meant for L1 (it begins with an L1 verb), or nil.
type Declined struct{ Reason string }

func (d *Declined) Error() string { return "L1 did not understand the request: " + d.Reason }

// word is one word of a request; q marks a quoted one.
type word struct {
	s   string
	low string
	q   bool
}

var quotePairs = map[rune]rune{'"': '"', '\'': '\'', '`': '`', '“': '”', '‘': '’', '«': '»'}

// words splits a request into words, a quoted stretch being one word.
// An apostrophe inside a word ("Greeter's") is not a quote.
func words(s string) ([]word, error) {
	var out []word
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		if unicode.IsSpace(r) {
			i++
			continue
		}
		if end, ok := quotePairs[r]; ok && (r != '\'' || i == 0 || unicode.IsSpace(rs[i-1]) || rs[i-1] == '(') {
			j := i + 1
			for j < len(rs) && rs[j] != end {
				j++
			}
			if j == len(rs) {
				return nil, fmt.Errorf("unterminated quote %c", r)
			}
			w := string(rs[i+1 : j])
			out = append(out, word{s: w, low: strings.ToLower(w), q: true})
			i = j + 1
			// Trailing punctuation after a quote ("`Bar`.") is dropped.
			for i < len(rs) && strings.ContainsRune(".,;:!?)", rs[i]) && (i+1 == len(rs) || unicode.IsSpace(rs[i+1]) || strings.ContainsRune(".,;:!?)", rs[i+1])) {
				i++
			}
			continue
		}
		j := i
		for j < len(rs) && !unicode.IsSpace(rs[j]) {
			if _, ok := quotePairs[rs[j]]; ok && rs[j] != '\'' {
				break
			}
			j++
		}
		w := string(rs[i:j])
		i = j
		if !strings.HasPrefix(w, "(*") {
			w = strings.TrimLeft(w, "(")
		}
		if !strings.Contains(w, "(*") {
			w = strings.TrimRight(w, ",;!?)")
		} else {
			w = strings.TrimRight(w, ",;!?")
		}
		for strings.HasSuffix(w, ".") || strings.HasSuffix(w, ":") {
			w = w[:len(w)-1]
		}
		if strings.HasSuffix(w, "'s") || strings.HasSuffix(w, "’s") {
			// "Greeter's Hello method": the possessive names an owner.
			out = append(out, word{s: strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s"), low: strings.ToLower(w[:len(w)-2]), q: false}, word{s: "'s", low: "'s"})
			continue
		}
		if w != "" {
			out = append(out, word{s: w, low: strings.ToLower(w)})
		}
	}
	return out, nil
}

// reader walks the words of one request.
type reader struct {
	w []word
	i int
}

func (r *reader) done() bool { return r.i >= len(r.w) }

func (r *reader) peek(k int) string {
	if r.i+k < len(r.w) && !r.w[r.i+k].q {
		return r.w[r.i+k].low
	}
	return ""
}

// accept consumes the unquoted words seq if they come next.
func (r *reader) accept(seq ...string) bool {
	for k, s := range seq {
		if r.peek(k) != s {
			return false
		}
	}
	r.i += len(seq)
	return true
}

// acceptAny consumes one unquoted word out of set.
func (r *reader) acceptAny(set ...string) (string, bool) {
	for _, s := range set {
		if r.peek(0) == s {
			r.i++
			return s, true
		}
	}
	return "", false
}

func (r *reader) next() (word, bool) {
	if r.done() {
		return word{}, false
	}
	r.i++
	return r.w[r.i-1], true
}

func (r *reader) rest() string {
	var parts []string
	for _, w := range r.w[r.i:] {
		parts = append(parts, w.s)
	}
	return strings.Join(parts, " ")
}

// politeness is what may open or close a request without changing it.
var (
	openers = [][]string{{"please"}, {"pls"}, {"kindly"}, {"can", "you"}, {"could", "you"}, {"would", "you"}, {"will", "you"},
		{"i", "want", "to"}, {"i'd", "like", "to"}, {"i", "need", "to"}, {"let's"}, {"lets"}, {"go", "ahead", "and"}, {"now"}, {"just"}, {"hey,"}, {"also"}}
	closers = [][]string{{"please"}, {"thanks"}, {"thank", "you"}, {"for", "me"}, {"pls"}}
)

func trimPoliteness(ws []word) []word {
	for changed := true; changed; {
		changed = false
		for _, o := range openers {
			if hasWords(ws, 0, o) {
				ws, changed = ws[len(o):], true
			}
		}
		for _, c := range closers {
			if len(ws) >= len(c) && hasWords(ws, len(ws)-len(c), c) {
				ws, changed = ws[:len(ws)-len(c)], true
			}
		}
	}
	return ws
}

func hasWords(ws []word, at int, seq []string) bool {
	if at+len(seq) > len(ws) {
		return false
	}
	for k, s := range seq {
		if ws[at+k].q || ws[at+k].low != s {
			return false
		}
	}
	return true
}

// Read reads one request: a Command when every word is understood; else
// nil and, when the request begins like one meant for L1, a *Declined
// saying why.
func Read(prompt string) (Command, error) {
	p := strings.TrimSpace(prompt)
	if strings.Contains(p, "\n") || p == "" || !utf8.ValidString(p) {
		return nil, nil
	}
	ws, err := words(p)
	if err != nil {
		if first := strings.ToLower(strings.Fields(p)[0]); l1Verb(first) {
			return nil, &Declined{err.Error()}
		}
		return nil, nil
	}
	ws = trimPoliteness(ws)
	if len(ws) == 0 {
		return nil, nil
	}
	r := &reader{w: ws}
	var cmd Command
	switch {
	case r.accept("rename") || r.accept("change", "the", "name", "of") || r.accept("refactor", "rename"):
		cmd, err = r.rename()
	case r.peek(0) == "format" || r.peek(0) == "reformat" || r.peek(0) == "gofmt" || r.peek(0) == "goimports" ||
		r.peek(0) == "run" || r.peek(0) == "apply" || r.peek(0) == "organize" || r.peek(0) == "organise" || r.peek(0) == "fix" ||
		r.peek(0) == "sort" || r.peek(0) == "tidy" || r.peek(0) == "clean":
		cmd, err = r.format()
	case r.peek(0) == "extract":
		cmd, err = r.extract()
	case r.peek(0) == "inline":
		cmd, err = r.inline()
	case r.peek(0) == "replace" || r.peek(0) == "substitute" || (len(ws) > 0 && !ws[0].q && strings.HasPrefix(ws[0].s, "s/")):
		cmd, err = r.replace()
	default:
		cmd, err = r.lookup()
	}
	if cmd == nil && err == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return cmd, nil
}

func l1Verb(w string) bool {
	switch w {
	case "rename", "format", "reformat", "gofmt", "goimports", "replace", "find", "where", "who", "extract", "inline":
		return true
	}
	return false
}

func decline(format string, args ...any) error { return &Declined{fmt.Sprintf(format, args...)} }

// kindWords maps what people call a kind of symbol to the Kind.
var kindWords = map[string]Kind{
	"function": KindFunc, "func": KindFunc, "fn": KindFunc,
	"method": KindMethod,
	"type":   KindType, "struct": KindStruct, "interface": KindInterface, "class": KindClass,
	"field":    KindField,
	"variable": KindVar, "var": KindVar, "local": KindVar,
	"constant": KindConst, "const": KindConst,
	"parameter": KindParam, "param": KindParam, "argument": KindParam, "arg": KindParam, "receiver": KindParam,
	"package": KindPackage, "pkg": KindPackage,
	"import": KindImport, "alias": KindImport,
}

// notCode are things people rename or format that are not code symbols:
// a request about them is not L1's.
var notCode = map[string]bool{
	"branch": true, "file": true, "files": true, "directory": true, "folder": true, "dir": true, "repo": true, "repository": true,
	"project": true, "module": true, "tab": true, "commit": true, "tag": true, "remote": true, "window": true, "column": true,
	"table": true, "it": true, "this": true, "that": true, "them": true, "these": true, "those": true, "output": true,
	"everything": true, "all": true, "stuff": true, "thing": true, "things": true, "binary": true, "test": true, "tests": true,
}

// symbolWord reports whether s can name a symbol: an identifier, a dotted
// chain of them (pkg.X, T.M, pkg.T.M), or (*T).M.
func symbolWord(s string) (string, bool) {
	if strings.HasPrefix(s, "(*") {
		if i := strings.Index(s, ")."); i > 2 {
			s = s[2:i] + s[i+1:]
		}
	}
	s = strings.TrimSuffix(s, "()")
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return "", false
	}
	for _, p := range parts {
		if !token.IsIdentifier(p) {
			return "", false
		}
	}
	return s, true
}

// pathWord reports whether s names a file or a directory of a workspace.
func pathWord(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t") || strings.Contains(s, "..") && !strings.HasPrefix(s, "../") && strings.Contains(s, "/../") {
		return false
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "../") || strings.Contains(s, "/../") {
		return false // outside the workspace
	}
	ext := path.Ext(s)
	return strings.Contains(s, "/") || (len(ext) > 1 && len(ext) <= 6 && !strings.ContainsAny(s, "()"))
}

// fileLoc parses FILE:LINE or FILE:LINE:COL.
func fileLoc(s string) (file string, line, col int, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || !pathWord(parts[0]) {
		return "", 0, 0, false
	}
	l, err := strconv.Atoi(parts[1])
	if err != nil || l < 1 {
		return "", 0, 0, false
	}
	if len(parts) == 3 {
		c, err := strconv.Atoi(parts[2])
		if err != nil || c < 1 {
			return "", 0, 0, false
		}
		col = c
	}
	return strings.TrimPrefix(parts[0], "./"), l, col, true
}

// setKind records a kind the request names; two different kinds decline.
func setKind(s *Symbol, k Kind) error {
	if s.Kind != KindAny && s.Kind != k && !(s.Kind.Matches(k) || k.Matches(s.Kind)) {
		return decline("the request calls %s both a %s and a %s", s.Name, s.Kind, k)
	}
	if s.Kind == KindAny || s.Kind == KindType {
		s.Kind = k
	}
	return nil
}

// symbol reads a symbol and what the request says about it, up to a word
// in stop: [the] [KIND] NAME [KIND] [of|on [the] [KIND] OWNER], and any
// qualifiers (in FILE, on line N, at FILE:LINE[:COL], in package P, in
// func F, defined in FILE).
func (r *reader) symbol(stop map[string]bool) (Symbol, error) {
	var s Symbol
	r.acceptAny("the", "a", "an", "our", "my")
	r.accept("go") // "the Go function"
	if (r.peek(0) == "symbol" || r.peek(0) == "identifier") && r.i+1 < len(r.w) && !stop[r.peek(1)] {
		r.i++ // "the symbol X": any kind
	}
	if k, ok := kindWords[r.peek(0)]; ok && r.i+1 < len(r.w) && !stop[r.peek(1)] {
		r.i++
		s.Kind = k
		if k == KindType {
			if k2, ok := kindWords[r.peek(0)]; ok && (k2 == KindStruct || k2 == KindInterface) {
				r.i++
				s.Kind = k2
			}
		}
		if k == KindImport || k == KindPackage {
			r.acceptAny("name", "alias")
		}
		if k == KindVar {
			r.accept("variable") // "local variable"
		}
	}
	w, ok := r.next()
	if !ok {
		return s, decline("no symbol named")
	}
	if !w.q && notCode[w.low] && s.Kind == KindAny {
		return s, errNotCode
	}
	if f, l, c, ok := fileLoc(w.s); ok && c > 0 {
		s.File, s.Line, s.Col = f, l, c
	} else if s.Kind == KindPackage {
		if w.s == "" || strings.ContainsAny(w.s, " \t") {
			return s, decline("%q is not a package", w.s)
		}
		s.Name = strings.TrimSuffix(w.s, "/")
	} else if name, ok := symbolWord(w.s); ok {
		s.Name = name
	} else {
		return s, decline("%q is not a symbol name, pkg.Name, Type.Member or file:line:col", w.s)
	}
	// OWNER's MEMBER KIND ("Greeter's Hello method").
	if r.peek(0) == "'s" && s.Name != "" && !strings.Contains(s.Name, ".") {
		r.i++
		m, ok := r.next()
		if !ok || !token.IsIdentifier(m.s) {
			return s, decline("%q is not a member name", m.s)
		}
		k, ok := kindWords[r.peek(0)]
		if !ok || (k != KindMethod && k != KindField) {
			return s, decline("say whether %s is a method or a field of %s", m.s, s.Name)
		}
		r.i++
		if err := setKind(&s, k); err != nil {
			return s, err
		}
		s.Name += "." + m.s
		return s, r.qualifiers(&s, stop)
	}
	// NAME KIND ("the Hello method"), NAME KIND of|on OWNER.
	if k, ok := kindWords[r.peek(0)]; ok && k != KindPackage && k != KindImport {
		r.i++
		if err := setKind(&s, k); err != nil {
			return s, err
		}
	}
	if s.Name != "" && !strings.Contains(s.Name, ".") && (s.Kind == KindMethod || s.Kind == KindField || s.Kind == KindAny) {
		if _, ok := r.acceptAny("of", "on"); ok {
			r.acceptAny("the", "a")
			if k, ok := kindWords[r.peek(0)]; ok && (k == KindType || k == KindStruct || k == KindInterface || k == KindClass) {
				r.i++
				r.acceptAny("struct", "interface", "class")
			}
			o, ok := r.next()
			name, ok2 := symbolWord(o.s)
			if !ok || !ok2 || strings.Count(name, ".") > 1 {
				return s, decline("%q is not a type", o.s)
			}
			r.acceptAny("type", "struct", "interface", "class")
			if s.Kind == KindAny {
				return s, decline("say whether %s is a method or a field of %s", s.Name, name)
			}
			s.Name = name + "." + s.Name
		}
	}
	return s, r.qualifiers(&s, stop)
}

var errNotCode = &Declined{"that names no code symbol"}

// noise are words a request may add that change nothing.
var noise = [][]string{{"everywhere"}, {"throughout", "the", "codebase"}, {"throughout", "the", "repo"}, {"throughout"},
	{"across", "the", "codebase"}, {"across", "the", "repo"}, {"across", "the", "project"}, {"across", "the", "module"},
	{"in", "all", "files"}, {"in", "every", "file"}, {"and", "all", "its", "uses"}, {"and", "all", "references"},
	{"and", "update", "all", "references"}, {"and", "update", "all", "call", "sites"}, {"and", "its", "references"},
	{"in", "the", "codebase"}, {"in", "the", "repo"}, {"in", "this", "repo"}, {"in", "the", "project"}, {"in", "go"}}

// qualifiers reads what a request says about where a symbol is.
func (r *reader) qualifiers(s *Symbol, stop map[string]bool) error {
	for !r.done() && !stop[r.peek(0)] {
		matched := false
		for _, n := range noise {
			if r.accept(n...) {
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		start := r.i
		w := r.w[r.i]
		switch {
		case !w.q && (w.low == "only" || w.low == "just"):
			return decline("a rename or look-up covers the whole module; it cannot be limited")
		case !w.q && (w.low == "in" || w.low == "from" || w.low == "inside" || w.low == "within" || w.low == "at" ||
			w.low == "defined" || w.low == "declared"):
			r.i++
			if w.low == "defined" || w.low == "declared" {
				if _, ok := r.acceptAny("in", "at", "on"); !ok {
					return decline("%q after %q is not understood", r.rest(), w.s)
				}
			}
			r.acceptAny("the", "file")
			if r.accept("line") || r.accept("l") {
				if err := r.line(s); err != nil {
					return err
				}
				continue
			}
			if k, ok := r.acceptAny("package", "pkg", "func", "function", "method"); ok {
				v, ok := r.next()
				if !ok {
					return decline("no %s named after %q", k, w.s)
				}
				if err := r.scope(s, k, v.s); err != nil {
					return err
				}
				continue
			}
			v, ok := r.next()
			if !ok {
				return decline("nothing after %q", w.s)
			}
			if f, l, c, ok := fileLoc(v.s); ok {
				if err := setFile(s, f); err != nil {
					return err
				}
				if s.Line != 0 && s.Line != l {
					return decline("the request names two lines, %d and %d", s.Line, l)
				}
				s.Line, s.Col = l, c
				continue
			}
			if k, ok := r.acceptAny("package", "pkg", "func", "function", "method"); ok { // "in the util package"
				if err := r.scope(s, k, v.s); err != nil {
					return err
				}
				continue
			}
			if pathWord(v.s) {
				if err := setFile(s, strings.TrimPrefix(v.s, "./")); err != nil {
					return err
				}
				continue
			}
			if (s.Kind == KindVar || s.Kind == KindParam) && (w.low == "in" || w.low == "inside" || w.low == "within") {
				if err := r.scope(s, "func", v.s); err != nil { // "the variable n in Sum": a local's function
					return err
				}
				continue
			}
			r.i = start
			return decline("%q: say whether it is a file (with its extension), a package or a function", strings.TrimSpace(w.s+" "+v.s))
		case !w.q && (w.low == "on" || w.low == "line"):
			r.i++
			if w.low == "on" {
				if !r.accept("line") && !r.accept("l") {
					return decline("%q is not understood", r.rest())
				}
			}
			if err := r.line(s); err != nil {
				return err
			}
			if r.peek(0) == "of" && pathWord(r.peek(1)) { // "on line 6 of src/shapes.ts"
				r.i++
				f, _ := r.next()
				if err := setFile(s, strings.TrimPrefix(f.s, "./")); err != nil {
					return err
				}
			}
		default:
			if f, l, c, ok := fileLoc(w.s); ok { // a bare "greet.go:12"
				r.i++
				if err := setFile(s, f); err != nil {
					return err
				}
				s.Line, s.Col = l, c
				continue
			}
			return decline("%q is not understood", r.rest())
		}
	}
	if s.Col > 0 && (s.File == "" || s.Line == 0) {
		return decline("a column needs a file and a line")
	}
	return nil
}

func setFile(s *Symbol, f string) error {
	if s.File != "" && s.File != f {
		return decline("the request names two files, %s and %s", s.File, f)
	}
	s.File = f
	return nil
}

func (r *reader) line(s *Symbol) error {
	v, ok := r.next()
	n, err := strconv.Atoi(v.s)
	if !ok || err != nil || n < 1 {
		return decline("%q is not a line number", v.s)
	}
	if s.Line != 0 && s.Line != n {
		return decline("the request names two lines, %d and %d", s.Line, n)
	}
	s.Line = n
	return nil
}

func (r *reader) scope(s *Symbol, k, v string) error {
	switch k {
	case "package", "pkg":
		if strings.ContainsAny(v, " \t") || v == "" {
			return decline("%q is not a package", v)
		}
		s.Pkg = strings.TrimSuffix(strings.TrimPrefix(v, "./"), "/")
	default:
		name, ok := symbolWord(v)
		if !ok {
			return decline("%q is not a function", v)
		}
		s.Func = name
	}
	return nil
}

var renameTo = map[string]bool{"to": true, "into": true, "as": true, "→": true, "->": true, "=>": true}

func (r *reader) rename() (Command, error) {
	s, err := r.symbol(renameTo)
	if err == errNotCode {
		return nil, nil // "rename the branch to main": not code
	}
	if err != nil {
		return nil, err
	}
	if _, ok := r.acceptAny("to", "into", "as", "→", "->", "=>"); !ok {
		return nil, decline("no new name (rename X to Y)")
	}
	r.acceptAny("be", "the")
	r.accept("name")
	w, ok := r.next()
	if !ok {
		return nil, decline("no new name after 'to'")
	}
	to := w.s
	if s.Kind != KindPackage && !token.IsIdentifier(to) {
		return nil, decline("%q is not a valid Go identifier", to)
	}
	if s.Kind == KindPackage && to == "" {
		return nil, decline("no new package name")
	}
	if err := r.qualifiers(&s, nil); err != nil {
		return nil, err
	}
	if s.Kind == KindPackage && (s.File != "" || s.Line != 0 || s.Func != "" || s.Pkg != "") {
		return nil, decline("a package is named by its name, import path or directory alone")
	}
	if s.Name == "" && !s.Pos() {
		return nil, decline("no symbol named")
	}
	return Rename{Target: s, To: to}, nil
}

// formatTools are the formatters a request may name, by what they format.
var formatTools = map[string]bool{"gofmt": true, "goimports": true, "shfmt": true, "prettier": true, "black": true, "ruff": true, "rustfmt": true, "clang-format": true}

// wholeWords name the whole workspace.
var wholeWords = map[string]bool{"repo": true, "repository": true, "workspace": true, "project": true, "codebase": true, "code": true,
	"everything": true, "module": true, "tree": true, "./...": true, "...": true, ".": true, "all": true, "source": true, "sources": true}

// langGlobs are the file classes a request may name ("all Go files").
var langGlobs = map[string]string{"go": "*.go", "markdown": "*.md", "md": "*.md", "python": "*.py", "py": "*.py", "typescript": "*.ts",
	"ts": "*.ts", "javascript": "*.js", "js": "*.js", "json": "*.json", "yaml": "*.yaml", "yml": "*.yml", "shell": "*.sh", "text": "*.txt", "txt": "*.txt", "rust": "*.rs", "c": "*.c"}

func (r *reader) format() (Command, error) {
	var f Format
	tool := ""
	imports := false
	switch {
	case r.accept("run") || r.accept("apply"):
		r.acceptAny("the")
		if r.accept("formatter") || r.accept("formatters") {
			if !r.done() {
				if _, ok := r.acceptAny("on", "over", "for", "in"); !ok {
					return nil, decline("%q is not understood", r.rest())
				}
			}
			break
		}
		t, ok := r.next()
		if ok && t.low == "go" && r.accept("fmt") { // run go fmt
			t.low = "gofmt"
		}
		if !ok || !formatTools[t.low] {
			return nil, nil // "run the tests": not a format request
		}
		tool = t.low
		if r.done() {
			break
		}
		if _, ok := r.acceptAny("on", "over", "to", "against", "for", "in"); !ok {
			return nil, decline("%q after %s is not understood", r.rest(), tool)
		}
	case r.accept("gofmt") || r.accept("goimports"):
		tool = r.w[r.i-1].low
	case r.accept("format") || r.accept("reformat"):
	default: // organize imports, fix imports, sort imports, tidy imports, clean up imports
		r.i++
		r.accept("up")
		r.acceptAny("the", "my", "all", "our")
		r.accept("go")
		if !r.accept("imports") && !r.accept("import", "statements") && !r.accept("import", "block") && !r.accept("import", "blocks") {
			return nil, nil
		}
		imports = true
		if !r.done() {
			if _, ok := r.acceptAny("in", "of", "for", "across", "throughout"); !ok {
				return nil, decline("%q is not understood", r.rest())
			}
		}
	}
	// Target: the workspace, a file, a directory or a glob; "all Go files".
	if !r.done() && r.peek(0) != "with" && r.peek(0) != "using" {
		r.acceptAny("the", "all", "every", "each", "my", "our", "this")
		r.acceptAny("whole", "entire", "full", "of", "the")
		r.accept("the")
		w, ok := r.next()
		switch {
		case !ok:
			return nil, decline("nothing to format named")
		case !w.q && wholeWords[w.low]:
			if w.low == "all" {
				r.accept("files")
			}
		case !w.q && langGlobs[w.low] != "" && (r.accept("files") || r.accept("file") || r.accept("code") || r.accept("sources")):
			f.Glob = langGlobs[w.low]
		case !w.q && (w.low == "files" || w.low == "file"):
			if r.done() {
				f.Glob = ""
			} else if w.low == "file" && r.i < len(r.w) && pathWord(r.w[r.i].s) && !strings.ContainsAny(r.w[r.i].s, "*?[") {
				f.Glob = strings.TrimPrefix(r.w[r.i].s, "./") // format the file request.go
				r.i++
			} else if r.accept("in") || r.accept("under") {
				r.acceptAny("the")
				d, ok := r.next()
				if !ok || !pathWord(d.s+"/") || strings.ContainsAny(d.s, "*?[") {
					return nil, decline("%q is not a directory", d.s)
				}
				r.acceptAny("directory", "dir", "folder", "package")
				f.Glob = dirGlob(d.s)
			} else {
				return nil, decline("%q is not understood", r.rest())
			}
		case !w.q && (w.low == "directory" || w.low == "dir" || w.low == "folder" || w.low == "package"):
			d, ok := r.next()
			if !ok {
				return nil, decline("no directory named")
			}
			f.Glob = dirGlob(d.s)
		default:
			if _, ok := r.acceptAny("directory", "dir", "folder", "package", "tree", "subtree"); ok {
				f.Glob = dirGlob(w.s)
			} else if g, ok := globWord(w.s); ok {
				f.Glob = g
			} else {
				return nil, decline("%q is not a file, a directory or a glob", w.s)
			}
		}
	}
	if r.accept("with") || r.accept("using") || r.accept("through") || r.accept("via") {
		r.acceptAny("the")
		t, ok := r.next()
		if !ok || !formatTools[t.low] {
			return nil, decline("%q is not a formatter joule runs (gofmt, goimports, shfmt, prettier, black, ruff, rustfmt, clang-format)", t.s)
		}
		if tool != "" && tool != t.low {
			return nil, decline("the request names two formatters, %s and %s", tool, t.low)
		}
		tool = t.low
	}
	if r.accept("and", "fix", "imports") || r.accept("and", "fix", "the", "imports") || r.accept("and", "organize", "imports") || r.accept("and", "imports") {
		imports = true
	}
	if !r.done() {
		return nil, decline("%q is not understood", r.rest())
	}
	switch tool {
	case "gofmt":
		f.GoOnly = true
	case "goimports":
		f.GoOnly, f.Imports = true, true
	case "":
	default:
		f.Tool = tool
	}
	if imports {
		if f.Tool != "" {
			return nil, decline("imports are organised by goimports, not %s", f.Tool)
		}
		f.GoOnly, f.Imports = true, true
	}
	if _, served := lsp.For(f.Glob); served && f.Imports && f.Tool == "" && !strings.ContainsAny(f.Glob, "*?[") && tool != "goimports" {
		// one TypeScript, JavaScript or Python file: its language server organizes them
		f.GoOnly = false
		return f, nil
	}
	if f.Tool != "" && f.Glob == "*.go" || f.Tool == "" && f.GoOnly && f.Glob != "" && path.Ext(f.Glob) != "" && path.Ext(f.Glob) != ".go" && !strings.HasSuffix(f.Glob, "/**") {
		return nil, decline("%s does not format %s", orTool(f), f.Glob)
	}
	return f, nil
}

func orTool(f Format) string {
	switch {
	case f.Tool != "":
		return f.Tool
	case f.Imports:
		return "goimports"
	}
	return "gofmt"
}

// dirGlob is the glob of a directory's whole subtree.
func dirGlob(d string) string {
	d = strings.TrimSuffix(strings.TrimPrefix(d, "./"), "/")
	if d == "" || d == "." {
		return ""
	}
	return d + "/**"
}

// globWord reads a file, a directory or a glob: "main.go", "cmd/",
// "./cmd/...", "*.go", "internal/**".
func globWord(s string) (string, bool) {
	if s == "./..." || s == "..." || s == "." || s == "./" {
		return "", true
	}
	if strings.HasSuffix(s, "/...") {
		return dirGlob(strings.TrimSuffix(s, "/...")), true
	}
	s = strings.TrimPrefix(s, "./")
	if strings.HasPrefix(s, "/") || strings.Contains("/"+s+"/", "/../") {
		return "", false
	}
	if strings.ContainsAny(s, "*?[") {
		return s, validGlob(s) == nil
	}
	if strings.HasSuffix(s, "/") {
		return dirGlob(s), true
	}
	if !pathWord(s) {
		return "", false
	}
	if path.Ext(s) == "" {
		return dirGlob(s), true // "cmd/joule": a directory
	}
	return s, true
}

func (r *reader) replace() (Command, error) {
	if w := r.w[0]; !w.q && strings.HasPrefix(w.s, "s/") { // s/old/new/[g]
		r.i++
		parts := strings.Split(w.s, "/")
		if len(parts) != 4 || parts[1] == "" || (parts[3] != "" && parts[3] != "g") {
			return nil, decline("%q is not s/OLD/NEW/ or s/OLD/NEW/g (no / inside)", w.s)
		}
		c := Replace{Old: parts[1], New: parts[2], Regex: true}
		if err := r.replaceIn(&c); err != nil {
			return nil, err
		}
		return c, nil
	}
	r.i++ // replace, substitute
	r.acceptAny("all", "every", "each")
	r.acceptAny("occurrences", "occurrence", "instances", "instance", "uses")
	r.accept("of")
	r.acceptAny("the")
	var c Replace
	if _, ok := r.acceptAny("regex", "regexp", "pattern", "expression"); ok {
		c.Regex = true
	} else {
		r.acceptAny("text", "string", "literal", "word", "phrase")
	}
	old, ok := r.next()
	if !ok {
		return nil, decline("nothing to replace named")
	}
	switch {
	case !old.q && len(old.s) > 2 && strings.HasPrefix(old.s, "/") && strings.HasSuffix(old.s, "/"):
		c.Old, c.Regex = old.s[1:len(old.s)-1], true
	case old.q:
		c.Old = old.s
	default:
		return nil, decline("quote the text to replace (replace \"old\" with \"new\"): unquoted words are not certain enough")
	}
	if c.Old == "" {
		return nil, decline("the text to replace is empty")
	}
	if _, ok := r.acceptAny("with", "by", "→", "->", "=>", "to"); !ok {
		return nil, decline("no replacement (replace \"old\" with \"new\")")
	}
	nw, ok := r.next()
	if !ok || !nw.q {
		return nil, decline("quote the replacement text (replace \"old\" with \"new\")")
	}
	c.New = nw.s
	if err := r.replaceIn(&c); err != nil {
		return nil, err
	}
	return c, nil
}

// replaceIn reads where a replace applies: [in|across GLOB|the DIR directory|all LANG files] [everywhere].
func (r *reader) replaceIn(c *Replace) error {
	if _, ok := r.acceptAny("in", "across", "within", "throughout", "under"); ok {
		r.acceptAny("the", "all", "every", "each")
		w, ok := r.next()
		switch {
		case !ok:
			return decline("nothing after 'in'")
		case !w.q && wholeWords[w.low]:
			r.accept("files")
		case !w.q && langGlobs[w.low] != "" && (r.accept("files") || r.accept("file") || r.accept("sources")):
			c.Glob = langGlobs[w.low]
		default:
			if _, ok := r.acceptAny("directory", "dir", "folder", "tree"); ok {
				c.Glob = dirGlob(w.s)
			} else if g, ok := globWord(w.s); ok {
				c.Glob = g
			} else {
				return decline("%q is not a file, a directory or a glob", w.s)
			}
		}
	}
	r.acceptAny("everywhere", "globally")
	if !r.done() {
		return decline("%q is not understood", r.rest())
	}
	return nil
}

// lookupStop ends the symbol of a look-up.
var lookupStop = map[string]bool{"defined": true, "declared": true, "implemented": true, "used": true, "referenced": true, "called": true, "is": true}

// notSymbols are words people look for that are not symbols.
var notSymbols = map[string]bool{"bug": true, "bugs": true, "problem": true, "problems": true, "issue": true, "issues": true, "cause": true,
	"reason": true, "leak": true, "race": true, "regression": true, "way": true, "best": true, "place": true, "code": true,
	"tests": true, "test": true, "docs": true, "readme": true}

func (r *reader) lookup() (Command, error) {
	want, orText := Definition, false
	first := r.peek(0)
	switch {
	case r.accept("who", "calls") || r.accept("what", "calls") || r.accept("which", "functions", "call") || r.accept("who", "invokes"):
		want = Callers
	case r.accept("who", "uses") || r.accept("what", "uses") || r.accept("who", "references") || r.accept("what", "references"):
		want = Uses
	case r.accept("where", "is") || r.accept("where's") || r.accept("where", "'s") || r.accept("where", "are"):
		// decided by the word after the symbol
	case r.accept("which", "file", "defines") || r.accept("what", "file", "defines") || r.accept("which", "file", "declares"):
	case r.accept("go", "to") || r.accept("goto") || r.accept("jump", "to") || r.accept("show", "me") || r.accept("show") || r.accept("find") ||
		r.accept("list") || r.accept("search", "for") || r.accept("look", "up") || r.accept("lookup") || r.accept("locate") || r.accept("grep"):
		verb := first
		r.acceptAny("the", "all", "every")
		switch {
		case r.accept("definition", "of") || r.accept("declaration", "of") || r.accept("definition", "for") || r.accept("source", "of"):
			want = Definition
		case r.accept("callers", "of") || r.accept("call", "sites", "of") || r.accept("calls", "to") || r.accept("calls", "of") || r.accept("callsites", "of") || r.accept("invocations", "of"):
			want = Callers
		case r.accept("references", "to") || r.accept("references", "of") || r.accept("usages", "of") || r.accept("uses", "of") || r.accept("occurrences", "of") || r.accept("usages", "for"):
			want = Uses
		case r.accept("where"):
			if !r.accept("is") && !r.accept("are") {
				return nil, nil
			}
		default:
			if verb == "show" || verb == "list" || verb == "go" || verb == "goto" || verb == "jump" {
				if r.i < len(r.w) && r.w[r.i].q && r.w[r.i].s != "" {
					break
				}
				if _, ok := symbolWord(r.peek(0)); !ok {
					return nil, nil
				}
			}
			// find X: its definition then its uses; a quoted phrase or a
			// plain word no declaration has is a text search.
			want = Uses
			if r.i == len(r.w)-1 {
				w := r.w[r.i]
				if w.q && w.s != "" && !isIdentChain(w.s) {
					return Find{Text: w.s}, nil
				}
				if !w.q && verb != "find" && verb != "grep" && verb != "search" {
					break
				}
				if token.IsIdentifier(w.s) {
					orText = true
					if verb == "grep" {
						return Find{Text: w.s}, nil
					}
				} else if !isIdentChain(w.s) && !strings.HasPrefix(w.s, "(*") && !strings.ContainsAny(w.s, " \t") && w.s != "" {
					return Find{Text: w.s}, nil // find a-b, find foo(): text
				}
			}
		}
	case r.accept("definition", "of") || r.accept("callers", "of") || r.accept("references", "to") || r.accept("usages", "of"):
		switch r.w[r.i-2].low {
		case "callers":
			want = Callers
		case "references", "usages":
			want = Uses
		}
	default:
		return nil, nil
	}
	if r.done() {
		return nil, decline("no symbol named")
	}
	if w := r.w[r.i]; !w.q && notSymbols[w.low] || (r.peek(0) == "the" && notSymbols[r.peek(1)]) {
		return nil, nil
	}
	s, err := r.symbol(lookupStop)
	if err == errNotCode {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.Kind == KindPackage || s.Kind == KindImport {
		return nil, decline("look-ups of a %s are not supported", s.Kind)
	}
	switch {
	case r.accept("defined") || r.accept("declared") || r.accept("implemented") || r.accept("is", "defined") || r.accept("is", "declared"):
		if want != Definition {
			return nil, decline("the request asks both for the definition and the %s of %s", map[Want]string{Uses: "uses", Callers: "callers"}[want], s.Name)
		}
	case r.accept("used") || r.accept("referenced") || r.accept("is", "used"):
		want = Uses
	case r.accept("called") || r.accept("is", "called"):
		want = Callers
	}
	r.acceptAny("from")
	if err := r.qualifiers(&s, nil); err != nil {
		return nil, err
	}
	if s.Name == "" {
		return nil, decline("a look-up names a symbol, not only a position")
	}
	if orText && (s.Kind != KindAny || s.File != "" || s.Line != 0 || s.Pkg != "" || s.Func != "") {
		orText = false
	}
	return Lookup{Target: s, Want: want, OrText: orText}, nil
}

func isIdentChain(s string) bool {
	_, ok := symbolWord(s)
	return ok
}
