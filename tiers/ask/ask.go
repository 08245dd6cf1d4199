// Package ask reads a request typed in natural language into an intent
// (a definition or callers look-up, a rename, a format) and the one symbol
// it is about. It matches no sentence template: the intent comes from the
// request's vocabulary wherever it stands ("definition", "declared",
// "callers", "uses", "rename", "gofmt" …), and the symbol from the
// identifier-shaped words that the workspace's symbol table declares. When
// either is ambiguous (two intents, several symbols, none, a name declared
// many times) the request is refused with a reason and the cascade falls
// through.
package ask

import (
	"context"
	"fmt"
	gotoken "go/token"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Intent is what a request asks for.
type Intent string

// The intents the reader tells apart.
const (
	None       Intent = ""
	Definition Intent = "definition" // where a symbol is declared
	Callers    Intent = "callers"    // what calls a function or method
	Uses       Intent = "uses"       // every reference to a symbol (a callers look-up in the wide sense)
	Rename     Intent = "rename"
	Format     Intent = "format"
)

// LookUp reports whether the intent is answered by a look-up.
func (i Intent) LookUp() bool { return i == Definition || i == Callers || i == Uses }

// Symbols is the workspace's symbol table: how many declarations a name
// has ("X", "pkg.X", "T.M", "(*T).M", "dir/pkg.X"), package-level names and
// members only; with callable, functions and methods only (a callers
// look-up, or a name written as a call, X()). An error means the table
// cannot say.
type Symbols interface {
	Declarations(ctx context.Context, name string, callable bool) (int, error)
}

// Reading is what the reader made of a request.
type Reading struct {
	Intent Intent
	// Weak: the intent comes only from words that also open other
	// requests ("find", "where", "show"): "find TODO" may be a text search.
	Weak bool
	// Symbol is the one identifier-shaped word the table declares, spelt
	// as the request wrote it less its code formatting ("X", "pkg.X",
	// "T.M", "(*T).M"); empty when the intent needs none or no one word
	// is declared. A Symbol declared several times comes with Refused set:
	// a tier may show the declarations, never answer with one.
	Symbol string
	// Called: the symbol was written as a call, X(): a function or method.
	Called bool
	// Kind and File are what the request said of the symbol ("the Dir
	// type", "in fs.go") when the name alone is declared several times and
	// they single one out; empty otherwise, so a wrong hint never blocks
	// a name that is declared once.
	Kind, File string
	// Refused says why the request is not read whole; empty when it is.
	Refused string
}

// Narrower is a symbol table that can also count the declarations of a
// name of one kind ("type", "func", "method", "field", "var", "const";
// "" any) in one file ("" any): a request's "the Dir type" or "in fs.go"
// singles out one of several declarations.
type Narrower interface {
	DeclarationsOf(ctx context.Context, name, kind, file string, callable bool) (int, error)
}

// Speller is a symbol table that can also list the declared names a word
// is in lower case: "newservemux" is NewServeMux.
type Speller interface {
	Spellings(ctx context.Context, word string) ([]string, error)
}

// MaxDefinitionSites bounds how many distinct places a definition answer
// may cite. A declaration is one place; a name with build-tagged twins
// (foo_unix.go, foo_windows.go) or an interface method and its one
// implementation is two or three. An answer citing more is listing uses or
// every declaration of a common name: the request was not understood, and
// the answer is a miss (the held-out set's false closes cited 7 to 75).
const MaxDefinitionSites = 3

var siteRE = regexp.MustCompile(`(\bto )?([\w./-]+\.[A-Za-z]{1,5}):(\d+)`)

// Sites counts the distinct FILE:LINE places an answer cites; the end of a
// shown snippet ("… more lines, to f.go:90)") is not a place.
func Sites(answer string) int {
	seen := map[string]bool{}
	for _, m := range siteRE.FindAllStringSubmatch(answer, -1) {
		if m[1] == "" {
			seen[m[2]+":"+m[3]] = true
		}
	}
	return len(seen)
}

// maxPrompt bounds what is read: a look-up is a sentence, not a document.
const maxPrompt = 500

// Read reads prompt against the workspace's symbols. With syms nil no word
// is resolved: the symbol is the one candidate word there is, else refused.
func Read(ctx context.Context, prompt string, syms Symbols) Reading {
	p := strings.TrimSpace(prompt)
	if p == "" || len(p) > maxPrompt || strings.Contains(p, "\n") || !utf8.ValidString(p) {
		return Reading{Refused: "not a one-line request"}
	}
	toks := tokens(p)
	rd := intentOf(toks)
	if rd.Refused != "" || !rd.Intent.LookUp() {
		return rd
	}
	if why := behaviour(toks); why != "" {
		return Reading{Refused: why}
	}
	var sym symbolReading
	sym, rd.Refused = symbolOf(ctx, toks, syms, rd.Intent)
	rd.Symbol, rd.Kind, rd.File = sym.name, sym.kind, sym.file
	if rd.Refused == "" && rd.Intent.LookUp() && yesNo(toks) {
		// "is X safe to use from many goroutines?": a yes/no question is a
		// look-up only when every word of it is look-up vocabulary.
		if w := unread(toks, sym.used); w != "" {
			return Reading{Refused: fmt.Sprintf("a question about %s (%q), not where it is declared or used", rd.Symbol, w)}
		}
	}
	if rd.Weak && rd.Refused == "" {
		// "where is body parsed": with no word of look-up vocabulary, any
		// other word may be what is asked; only "find X", "where is X",
		// "go to X" and the like are definitions.
		if w := unread(toks, sym.used); w != "" {
			rd.Symbol, rd.Kind, rd.File, rd.Refused = "", "", "", fmt.Sprintf("%q: only where %s is declared can be answered, and the request does not say it asks that", w, rd.Symbol)
		}
	}
	for _, t := range toks {
		if t.called && rd.Symbol != "" && t.text == rd.Symbol {
			rd.Called = true
		}
	}
	return rd
}

// auxiliaries open a yes/no question.
var auxiliaries = map[string]bool{"is": true, "are": true, "can": true, "should": true, "does": true, "do": true, "will": true,
	"would": true, "could": true, "did": true, "was": true, "were": true, "must": true, "may": true, "might": true, "shall": true}

// yesNo reports whether the request opens, after any filler, with an
// auxiliary: "is X thread-safe?", "does anything call X?".
func yesNo(toks []token) bool {
	for _, t := range toks {
		if fillers[t.low] && !t.code {
			continue
		}
		return !t.code && auxiliaries[t.low]
	}
	return false
}

// behaviour refuses a look-up word used as an infinitive of purpose ("safe
// to use", "how to call", "ok to call from a handler"): the request asks
// how something may be used, not where it is.
func behaviour(toks []token) string {
	for k := 1; k+1 < len(toks); k++ {
		t, v := toks[k], toks[k+1]
		if t.code || t.low != "to" || v.code {
			continue
		}
		if i, ok := vocabOf(v.low); !ok || family(i) != Callers {
			continue
		}
		switch toks[k-1].low {
		case "references", "reference", "refs", "calls", "call", "invocations", "go", "jump", "navigate", "take", "point", "points", "pointers", "refer", "refers", "usages", "uses":
			continue
		}
		return fmt.Sprintf("asks how something may be %s (%q), not where it is", v.low, toks[k-1].text+" to "+v.text)
	}
	return ""
}

var fillers = map[string]bool{"please": true, "hey": true, "hi": true, "quick": true, "question": true, "so": true, "ok": true,
	"okay": true, "thanks": true, "thank": true, "um": true, "uh": true, "hmm": true}

// token is one word of a request. code marks a word written as code
// (backticks or quotes, a call, a selector, mixed case, _ or digits):
// never vocabulary.
type token struct {
	text   string // without quoting and trailing punctuation
	low    string // lower case, for vocabulary
	code   bool
	called bool // written X(): a function or a method
	poss   bool // written X's: the owner of what follows ("ServeMux's findHandler")
	file   bool // a file name (server.go): where the symbol is, never the symbol
	pkg    bool // an import path (net/http): the package the symbol is in
	// clause numbers the parts of a request set apart by ";", ",", "but"
	// or brackets: "I know X, but where is Y defined" asks about Y.
	clause int
	// aside: the word follows "not", "besides", "except", "unlike":
	// named to be set aside ("who calls X besides Y").
	aside bool
}

var contractions = map[string][]string{
	"where's": {"where", "is"}, "wheres": {"where", "is"}, "who's": {"who", "is"}, "whos": {"who", "is"},
	"what's": {"what", "is"}, "whats": {"what", "is"}, "it's": {"it", "is"}, "i'm": {"i", "am"}, "i'd": {"i", "would"},
	"can't": {"can", "not"}, "cant": {"can", "not"}, "don't": {"do", "not"}, "doesn't": {"does", "not"}, "isn't": {"is", "not"},
	"let's": {"let", "us"}, "where're": {"where", "are"}, "u": {"you"}, "pls": {"please"}, "plz": {"please"}, "thx": {"thanks"},
}

// receiverRE is a method written as Go declares it, "(t *Transport) Clone"
// or "func (h Header) Values(...)": the symbol (*Transport).Clone.
var receiverRE = regexp.MustCompile(`(?:\bfunc\s+)?\(\s*[A-Za-z_]\w*\s+(\*?)\s*([A-Za-z_]\w*)\s*\)\s*([A-Za-z_]\w*)`)

// signatureRE is a code span holding a signature, "`F(s string) string`":
// the function F, written as a call.
var signatureRE = regexp.MustCompile("`(?:func\\s+)?([A-Za-z_][\\w.]*|\\(\\*?[A-Za-z_]\\w*\\)\\.[A-Za-z_]\\w*)\\([^`]*`")

func tokens(p string) []token {
	p = receiverRE.ReplaceAllStringFunc(p, func(m string) string {
		g := receiverRE.FindStringSubmatch(m)
		if g[1] == "" {
			return "(" + g[2] + ")." + g[3]
		}
		return "(*" + g[2] + ")." + g[3]
	})
	p = signatureRE.ReplaceAllString(p, "`$1()`")
	p = strings.NewReplacer("’", "'", "‘", "'", "“", "\"", "”", "\"", "→", " -> ", "—", " ", "–", " ", " - ", " ").Replace(p)
	var out []token
	clause := 0
	for _, f := range strings.Fields(p) {
		if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
			if f != "-" {
				clause++ // "X -- where is it": a break
			}
			continue // "--", "??": punctuation, no word
		}
		if strings.HasPrefix(f, "(") && !strings.HasPrefix(f, "(*") && !strings.Contains(f, ").") || strings.EqualFold(f, "but") {
			clause++
		}
		for _, t := range split(f) {
			t.clause = clause
			if n := len(out); n > 0 && !out[n-1].code {
				switch out[n-1].low {
				case "not", "besides", "except", "unlike", "than":
					t.aside = true
				}
			}
			if t.text == "2" && len(out) > 0 && moves[out[len(out)-1].low] {
				t = token{text: "to", low: "to"} // jump 2 X
			}
			out = append(out, t)
		}
		if e := strings.TrimRight(f, "?!.`'\""); strings.HasSuffix(e, ";") || strings.HasSuffix(e, ",") ||
			strings.HasSuffix(e, ")") && !strings.HasSuffix(e, "()") && !strings.Contains(f, ").") {
			clause++
		}
	}
	return out
}

// moves are the verbs an editor user says "go to" with.
var moves = map[string]bool{"go": true, "jump": true, "navigate": true, "take": true, "me": true, "skip": true, "head": true}

// split reads one blank-separated field: "`http.Get()`," is the code word
// http.Get; "X's" is X; "(*T).M" stays as written; "where's" is two words.
func split(f string) []token {
	quoted := false
	for {
		before := f
		if strings.HasPrefix(f, "`") || strings.HasPrefix(f, "\"") || (strings.HasPrefix(f, "'") && len(f) > 1) {
			f, quoted = f[1:], true
		}
		f = strings.TrimRight(f, ".,;:!?")
		if strings.HasSuffix(f, "`") || strings.HasSuffix(f, "\"") {
			f, quoted = f[:len(f)-1], true
		}
		if strings.HasSuffix(f, "'") && !strings.HasSuffix(f, "s'") {
			f = f[:len(f)-1]
		}
		if len(f) > 2 && (f[0] == '(' && f[len(f)-1] == ')' || f[0] == '[' && f[len(f)-1] == ']') && !strings.ContainsAny(f[1:len(f)-1], "()[]") {
			f = f[1 : len(f)-1] // "(client.go?)", "[Server]": an aside, or a doc link
		}
		if f == before {
			break
		}
	}
	low := strings.ToLower(f)
	if ws, ok := contractions[low]; ok && !quoted {
		var out []token
		for _, w := range ws {
			out = append(out, token{text: w, low: w})
		}
		return out
	}
	if base, ok := strings.CutSuffix(low, "'s"); ok && !quoted && base == f[:len(base)] {
		for _, w := range []string{"where", "what", "who", "there"} {
			if oneEdit(base, w) { // whree's
				return []token{{text: w, low: w}, {text: "is", low: "is"}}
			}
		}
	}
	poss := false
	if strings.HasSuffix(low, "'s") && len(f) > 2 { // Server's
		f, low, poss = f[:len(f)-2], low[:len(low)-2], true
		if t := strings.TrimRight(f, "`\""); t != f { // `X()`'s
			f, low, quoted = t, strings.ToLower(t), true
		}
	}
	if strings.HasPrefix(f, "*") && len(f) > 1 && f[1] != '(' { // *http.Request: the type
		f, low = f[1:], low[1:]
	}
	code, called := quoted, false
	if strings.HasSuffix(f, "()") {
		f, low, code, called = f[:len(f)-2], low[:len(low)-2], true, true
	}
	if strings.HasPrefix(f, "(") && !strings.HasPrefix(f, "(*") && !strings.Contains(f, ").") {
		f, low = strings.TrimPrefix(f, "("), strings.TrimPrefix(low, "(")
	}
	if strings.HasSuffix(f, ")") && !strings.Contains(f, "(") {
		f, low = strings.TrimSuffix(f, ")"), strings.TrimSuffix(low, ")")
	}
	if f == "" {
		return nil
	}
	if isFile(f) {
		return []token{{text: f, low: low, code: true, file: true}}
	}
	if isPkgPath(f) {
		return []token{{text: f, low: low, code: true, pkg: true}}
	}
	if !code && !(strings.ToUpper(f) == f && known(low)) { // "WHERE IS X DEFINED"
		for i, r := range f {
			if r == '_' || r == '.' && i > 0 && i < len(f)-1 || unicode.IsDigit(r) || unicode.IsUpper(r) && i > 0 || r == '*' {
				code = true
				break
			}
		}
	}
	return []token{{text: f, low: low, code: code, called: called, poss: poss}}
}

// isFile reports whether a word names a source file: server.go, fs/fs.go.
func isFile(f string) bool {
	i := strings.LastIndex(f, ".")
	if i <= 0 || strings.Contains(f, "(") {
		return false
	}
	switch f[i+1:] {
	case "go", "ts", "tsx", "js", "py", "rs", "c", "h", "s":
	default:
		return false
	}
	base := f[strings.LastIndex(f, "/")+1 : i]
	return base != "" && gotoken.IsIdentifier(strings.NewReplacer("-", "_", "+", "_").Replace(base)) || strings.HasSuffix(base, "_test")
}

// isPkgPath reports whether a word is an import path: net/http, io/fs.
func isPkgPath(f string) bool {
	if !strings.Contains(f, "/") || strings.ContainsAny(f, "()*`") || strings.HasPrefix(f, "/") || strings.HasSuffix(f, "/") {
		return false
	}
	parts := strings.Split(f, "/")
	for _, part := range parts[:len(parts)-1] {
		if part == "" || strings.Trim(part, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != "" {
			return false
		}
	}
	return gotoken.IsIdentifier(parts[len(parts)-1])
}

// known reports whether a plain word is one the reader reads as English.
func known(w string) bool {
	_, v := vocabOf(w)
	_, a := acts[w]
	return v || a || stop[w] || weak[w]
}

// The vocabulary. Strong words name one intent; weak ones open a look-up
// but also other requests, so they count only when no strong word does.
var (
	vocab = map[string]Intent{}
	weak  = map[string]bool{"where": true, "find": true, "show": true, "locate": true, "lookup": true, "goto": true,
		"jump": true, "open": true, "whereabouts": true, "search": true, "grep": true, "navigate": true, "gd": true, "see": true,
		"source": true, "src": true, "peek": true, "ctrl-click": true, "ctrl+click": true, "cmd-click": true, "cmd+click": true,
		// "the implementation of X" is its declaration, but "does the
		// implementation of X handle nil" is a question: only when every
		// other word is read
		"implementation": true, "implementations": true, "impl": true, "impls": true}
	// acts ask for code to be written, explained or run: not look-ups.
	acts = map[string]string{}
)

func init() {
	for i, ws := range map[Intent]string{
		Definition: "define defined defines defining definition definitions def defn declare declared declares declaring declaration declarations decl implemented",
		Callers:    "call calls called caller callers calling callsite callsites invoke invokes invoked invoking invocation invocations incoming",
		Uses:       "use uses used using usage usages reference references referenced referencing refs",
		Rename:     "rename renamed renaming",
		Format:     "format reformat formatting gofmt goimports fmt prettier rustfmt shfmt",
	} {
		for _, w := range strings.Fields(ws) {
			vocab[w] = i
		}
	}
	for _, w := range strings.Fields("write add fix refactor explain implement delete remove create make document translate optimize optimise " +
		"summarize summarise commit generate modify improve debug test tests why how run insert move extract inline replace") {
		acts[w] = w
	}
}

// vocabOf is the intent a plain word names, allowing one typo in a long
// word ("defintion", "decalred", "calers").
func vocabOf(w string) (Intent, bool) {
	if i, ok := vocab[w]; ok {
		return i, true
	}
	if len(w) < 4 {
		return None, false
	}
	var found []Intent
	for v, i := range vocab {
		// one typo in a long word; a short one may miss a letter (cals, caled)
		if len(v) >= 6 && len(w) >= 6 && oneEdit(w, v) || len(v) >= 5 && len(v) == len(w)+1 && oneEdit(w, v) {
			found = append(found, i)
		}
	}
	if len(found) == 0 {
		return None, false
	}
	for _, i := range found[1:] {
		if family(i) != family(found[0]) {
			return None, false
		}
	}
	return found[0], true
}

// family merges callers and uses: both are answered by listing call sites.
func family(i Intent) Intent {
	if i == Uses {
		return Callers
	}
	return i
}

// oneEdit reports whether a and b differ by one insertion, deletion,
// substitution or transposition of adjacent letters.
func oneEdit(a, b string) bool {
	if a == b || len(a)-len(b) > 1 || len(b)-len(a) > 1 {
		return false
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	switch {
	case len(a) == len(b):
		return a[i+1:] == b[i+1:] || i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case len(a) > len(b):
		return a[i+1:] == b[i:]
	}
	return a[i:] == b[i+1:]
}

// formatNear reports whether a formatter is named within the next three words.
func formatNear(toks []token) bool {
	for k := 0; k < len(toks) && k < 3; k++ {
		if vocab[toks[k].low] == Format {
			return true
		}
	}
	return false
}

// intentOf reads the intent from the words, wherever they stand.
func intentOf(toks []token) Reading {
	strong := map[Intent]bool{}
	var strongWords []string
	isWeak, firstWord := false, true
	for k, t := range toks {
		if t.code {
			firstWord = false
			continue
		}
		w := t.low
		next := ""
		if k+1 < len(toks) && !toks[k+1].code {
			next = toks[k+1].low
		}
		switch {
		case w == "please" || w == "hey" || w == "hi" || w == "quick" || w == "question" || w == "so" || w == "ok" || w == "okay":
			continue // filler before the request proper
		case w == "change" && next == "the" && k+2 < len(toks) && toks[k+2].low == "name" || w == "change" && next == "name":
			strong[Rename] = true
			strongWords = append(strongWords, "change the name")
		case w == "go" && (next == "to" || next == "fmt"):
			if next == "fmt" {
				strong[Format] = true
				strongWords = append(strongWords, "go fmt")
			} else {
				isWeak = true
			}
		case w == "take" && next == "me":
			isWeak = true
		case (w == "which" || w == "what") && (next == "file" || next == "files"):
			isWeak = true
		case w == "look" && next == "up":
			isWeak = true
		case (w == "what" || w == "how") && (next == "does" || next == "do" || next == "is" && w == "how"):
			return Reading{Refused: "asks what something does, not where it is"}
		case (w == "call" || w == "use" || w == "define" || w == "declare") && firstWord && next != "sites" && next != "site" && next != "of":
			return Reading{Refused: fmt.Sprintf("%q opens a request to write code, not a look-up", w)}
		case w == "run" && strong[Format]:
		case w == "run" && formatNear(toks[k+1:]): // run gofmt, run go fmt on x.go
		default:
			if a, ok := acts[w]; ok {
				return Reading{Refused: fmt.Sprintf("asks to %s, not a look-up, rename or format", a)}
			}
			if i, ok := vocabOf(w); ok {
				if !strong[i] {
					strongWords = append(strongWords, w)
				}
				strong[i] = true
			} else if weak[w] {
				isWeak = true
			}
		}
		firstWord = false
	}
	if strong[Callers] && strong[Uses] {
		delete(strong, Uses) // "who uses X, find its callers": one list
	}
	switch len(strong) {
	case 0:
		if isWeak {
			return Reading{Intent: Definition, Weak: true}
		}
		return Reading{Refused: "no look-up, rename or format asked for"}
	case 1:
		for i := range strong {
			return Reading{Intent: i}
		}
	}
	sort.Strings(strongWords)
	return Reading{Refused: "two requests in one (" + strings.Join(strongWords, ", ") + "): ask one at a time"}
}

// stop are plain words that are never a symbol, however a workspace names
// things: looking them up would only find a local variable's namesake.
var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the this that these those it its it's i me my we our us you your they them
		is are was were be been am do does did done has have had can could would will should may might must shall
		where what which who whom whose when how why here there whats wheres
		of in on at to from for by with within inside into onto out up down over under about as and or but not no nor then than
		please thanks thank hey hi ok okay so just quick question exactly actually really also again now
		show find locate lookup look search grep open jump go goto take tell give list see need want like looking
		get gets got getting every everywhere all any each some one places place spots spot site sites file files line lines
		function func method type struct interface class constant const variable var field symbol identifier package pkg
		repo repository codebase code project module source workspace tree this
		point exact exactly being come comes coming came live lives living resides reside located location written kept sits
		think guess believe know wonder everything everyone maybe probably somewhere anywhere anything anyone anybody something constructor helper body`) {
		stop[w] = true
	}
}

// unread is the first word of toks that is neither the symbol (the tokens
// in used), a file or package it is said to be in, nor a word the reader
// knows, or "".
func unread(toks []token, used map[int]bool) string {
	for k, t := range toks {
		if used[k] || t.file || t.pkg {
			continue
		}
		if t.code && !known(t.low) {
			return t.text
		}
		if fillers[t.low] {
			continue
		}
		if !known(t.low) && !determiners[t.low] {
			return t.text
		}
	}
	return ""
}

// determiners make the plain word after them a noun.
var determiners = map[string]bool{"the": true, "a": true, "an": true, "this": true, "that": true, "my": true, "our": true,
	"your": true, "its": true, "their": true, "some": true, "every": true, "each": true, "any": true}

// symbolReading is the symbol a request names and what it said of it.
type symbolReading struct {
	name, kind, file string
	used             map[int]bool // the tokens that spell it
}

// candidate is one way of reading some words as a symbol.
type candidate struct {
	name   string
	alt    string // the member alone, when the qualifier is a receiver variable (r.PathValue)
	code   bool
	called bool
	kind   string
	idx    []int
	// plain: an English-shaped word (all lower case, not code): "read",
	// "handler". It names the symbol only when no code word does.
	plain bool
}

// kinds are the words that say what a symbol is.
var kinds = map[string]string{"type": "type", "struct": "type", "interface": "type", "func": "func", "function": "func",
	"helper": "func", "constructor": "func", "method": "method", "field": "field", "var": "var", "variable": "var",
	"const": "const", "constant": "const"}

// symbolOf finds the one symbol the request names: the identifier-shaped
// words (code words first) that the symbol table declares. "M on T", "the
// M method of T", "T's M", "M (the T method)" are the one symbol T.M.
func symbolOf(ctx context.Context, toks []token, syms Symbols, intent Intent) (symbolReading, string) {
	var cands []candidate
	seen := map[string]bool{}
	used := map[int]bool{}
	described := map[int]bool{}
	var files, pkgs []string
	for _, t := range toks {
		switch {
		case t.file && !contains(files, t.text):
			files = append(files, t.text)
		case t.pkg && !contains(pkgs, t.text):
			pkgs = append(pkgs, t.text)
		}
	}
	member := func(k int) bool { // can toks[k] be a name, not a word?
		if k >= len(toks) || toks[k].file || toks[k].pkg {
			return false
		}
		t := toks[k]
		if _, ok := identShaped(t.text); !ok {
			return false
		}
		if t.code {
			return true
		}
		if t.text == t.low || stop[t.low] || kinds[t.low] != "" {
			return false
		}
		_, v := vocabOf(t.low)
		_, a := acts[t.low]
		return !v && !a
	}
	for k, t := range toks {
		if used[k] || t.file || t.pkg {
			continue
		}
		name, ok := identShaped(t.text)
		if !ok {
			continue
		}
		if !t.code && t.text == t.low && k > 0 && determiners[toks[k-1].low] {
			continue // "where is the server defined": a noun, not a symbol
		}
		if !t.code {
			// A capital inside a sentence may be a name ("the Get method
			// of Store"); the table says whether it is.
			if stop[t.low] && (k == 0 || t.text == t.low || t.text == strings.ToUpper(t.text)) {
				continue
			}
			if _, v := vocabOf(t.low); v {
				continue
			}
			if _, a := acts[t.low]; a {
				continue
			}
			if weak[t.low] {
				continue
			}
		}
		if !t.code && t.text == t.low && k > 0 && k+1 < len(toks) && kinds[toks[k+1].low] != "" && !toks[k+1].code &&
			(toks[k-1].code || toks[k-1].text != toks[k-1].low) {
			used[k], described[k] = true, true // "the Profile handler func": what Profile is, not a second name
			continue
		}
		c := candidate{name: name, code: t.code, called: t.called, idx: []int{k}, plain: !t.code && t.text == t.low}
		if k > 0 && kinds[toks[k-1].low] != "" && !toks[k-1].code {
			c.kind = kinds[toks[k-1].low]
		}
		j := k + 1
		if j < len(toks) && kinds[toks[j].low] != "" && !toks[j].code {
			c.kind = kinds[toks[j].low]
			j++
		}
		memberName := name[strings.LastIndex(name, ".")+1:]
		switch {
		case t.poss && !strings.HasPrefix(name, "("):
			// T's M
			m := k + 1
			if m < len(toks) && toks[m].low == "the" {
				m++
			}
			if member(m) && !strings.Contains(toks[m].text, ".") {
				c.name, c.idx, c.called = name+"."+toks[m].text, append(c.idx, m), toks[m].called
				c.kind = ""
				if m+1 < len(toks) && (kinds[toks[m+1].low] == "method" || kinds[toks[m+1].low] == "field") {
					c.idx = append(c.idx, m+1)
				}
			}
		case j < len(toks) && !strings.HasPrefix(name, "("):
			// M on T, M method of T, M (the T method)
			o := j
			if toks[o].low == "on" || toks[o].low == "of" || toks[o].low == "for" || toks[o].low == "in" {
				o++
				if o < len(toks) && toks[o].low == "the" {
					o++
				}
				if o < len(toks) && (toks[o].low == "type" || toks[o].low == "struct") {
					o++
				}
			} else if (toks[o].low == "the" || toks[o].low == "a" || toks[o].low == "an") && !c.plain {
				o++
				if !(o+1 < len(toks) && kinds[toks[o+1].low] == "method") {
					break
				}
			} else {
				break
			}
			lowOwner := false
			if o < len(toks) && !toks[o].code && !toks[o].file && !toks[o].pkg && toks[o].text == toks[o].low && syms != nil && !stop[toks[o].low] && gotoken.IsIdentifier(toks[o].text) {
				// readRequest on conn: an unexported type, when it declares that member
				m, err := syms.Declarations(ctx, toks[o].text+"."+memberName, intent != Definition || c.called)
				lowOwner = err == nil && m == 1
			}
			if (lowOwner || member(o) && (toks[o].code || unicode.IsUpper(rune(toks[o].text[0])))) && (c.kind == "" || c.kind == "method" || c.kind == "field" || c.kind == "func") {
				owner := strings.TrimPrefix(toks[o].text, "*")
				c.name, c.idx, c.kind = owner+"."+memberName, append(c.idx, o), ""
				if o+1 < len(toks) && (toks[o+1].low == "type" || toks[o+1].low == "struct" || kinds[toks[o+1].low] == "method") {
					c.idx = append(c.idx, o+1)
				}
			}
		}
		if parts := strings.Split(c.name, "."); len(parts) == 2 && len(c.idx) == 1 && parts[0] != "" &&
			strings.ToLower(parts[0]) == parts[0] && len(parts[0]) <= 4 && !strings.HasPrefix(c.name, "(") {
			c.alt = parts[1] // srv.newConn: a receiver variable, unless a package is so named
		}
		if seen[c.name] {
			continue
		}
		seen[c.name] = true
		for _, i := range c.idx {
			used[i] = true
		}
		cands = append(cands, c)
	}
	if syms != nil {
		cands = joinPairs(ctx, cands, syms, intent)
	}
	// Code words first: they are what the request points at.
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].code && !cands[j].code })
	if len(cands) == 0 {
		return symbolReading{}, "no symbol named"
	}
	if syms == nil {
		var code, all []string
		for _, c := range cands {
			all = append(all, c.name)
			if c.code {
				code = append(code, c.name)
			}
		}
		chosen := func(name string) symbolReading {
			sr := symbolReading{name: name, used: map[int]bool{}}
			for _, c := range cands {
				if c.name == name {
					for _, i := range c.idx {
						sr.used[i] = true
					}
				}
			}
			return sr
		}
		if len(code) == 1 {
			return chosen(code[0]), ""
		}
		if len(all) == 1 {
			return chosen(all[0]), ""
		}
		return symbolReading{}, "several words could be the symbol: " + strings.Join(all, ", ")
	}
	file := ""
	if len(files) == 1 {
		file = files[0]
	}
	pkg := ""
	if len(pkgs) == 1 {
		pkg = pkgs[0][strings.LastIndex(pkgs[0], "/")+1:]
	}
	narrow, _ := syms.(Narrower)
	// Every candidate is resolved: one declared word is the symbol; two
	// are two symbols, however they were written. A word written as code
	// that the table does not declare is a refusal, not a reason to take a
	// plain word instead.
	// "the Jar type in cookiejar": a plain word after in/from, or before
	// "package", that declares nothing may be the package of the name.
	pkgWord, pkgIdx := "", -1
	for i, c := range cands {
		k := c.idx[0]
		if !c.plain || len(c.idx) != 1 || pkgWord != "" || pkg != "" ||
			!(k > 0 && (toks[k-1].low == "in" || toks[k-1].low == "from" || toks[k-1].low == "inside") ||
				k+1 < len(toks) && (toks[k+1].low == "package" || toks[k+1].low == "pkg")) {
			continue
		}
		if n, err := syms.Declarations(ctx, c.name, false); err == nil && n == 0 {
			pkgWord, pkgIdx = c.name, k
			cands = append(cands[:i:i], cands[i+1:]...)
			break
		}
	}
	var found []symbolReading
	var many, manyName, missing, plain []string
	var foundPlain, manyPlain []bool
	var manyUsed []map[int]bool
	for _, c := range cands {
		// Callers are of functions and methods; so are uses of a name
		// that is one, before any field or variable namesake.
		callable := intent != Definition || c.called
		count := func(name string) (int, error) {
			n, err := syms.Declarations(ctx, name, callable)
			if err == nil && n == 0 && intent == Uses && !c.called {
				n, err = syms.Declarations(ctx, name, false)
			}
			return n, err
		}
		name := c.name
		n, err := count(name)
		if err == nil && n == 0 && c.alt != "" {
			// srv.newConn: the method of a receiver variable, when one
			// method has that name; a field (r.Body) is too often what a
			// question about behaviour names
			if m, err2 := syms.Declarations(ctx, c.alt, true); err2 == nil && m == 1 {
				name, n = c.alt, 1
			}
		}
		if sp, ok := syms.(Speller); ok && err == nil && n == 0 && c.plain && !strings.Contains(name, ".") {
			// newservemux: a name written in lower case, when one name
			// so spelt is declared and is a compound (a lower-case letter
			// then a capital), never a word ("request" is not Request,
			// "sku" not SKU)
			if names, err2 := sp.Spellings(ctx, name); err2 == nil && len(names) == 1 && compound(names[0]) {
				if m, err3 := count(names[0]); err3 == nil && m == 1 {
					name, n = names[0], 1
				}
			}
		}
		if err != nil {
			return symbolReading{}, fmt.Sprintf("the symbol table cannot say what %s is: %v", name, err)
		}
		sr := symbolReading{name: name, used: map[int]bool{}}
		for _, i := range c.idx {
			sr.used[i] = true
		}
		if n > 1 && pkg != "" && !strings.Contains(name, ".") {
			// net/http NewRequest: the package qualifies the name
			if m, err := count(pkg + "." + name); err == nil && m == 1 {
				n, sr.name = 1, pkg+"."+name
			}
		}
		if n >= 1 && pkgWord != "" && !strings.Contains(name, ".") {
			// the Jar type in cookiejar: the word is its package when the
			// package declares it
			if m, err := count(pkgWord + "." + name); err == nil && m >= 1 {
				sr.used[pkgIdx] = true
				if m == 1 {
					n, sr.name = 1, pkgWord+"."+name
				}
			}
		}
		if n > 1 && narrow != nil && (c.kind != "" || file != "") {
			// the Dir type, cleanPath in server.go: what the request says
			// of the name singles one declaration out
			for _, try := range [][2]string{{c.kind, ""}, {"", file}, {c.kind, file}} {
				if try == [2]string{} || try[0] == "" && c.kind != "" && try[1] == "" {
					continue
				}
				if m, err := narrow.DeclarationsOf(ctx, name, try[0], try[1], callable); err == nil && m == 1 {
					n, sr.kind, sr.file = 1, try[0], try[1]
					break
				}
			}
		}
		if n > 1 && n <= MaxDefinitionSites && narrow != nil && intent == Definition && c.kind == "" && !strings.Contains(name, ".") {
			// ConnState: the type, not Server's field of that name, which
			// a request would write Server.ConnState
			if m, err := narrow.DeclarationsOf(ctx, name, "package", "", callable); err == nil && m == 1 {
				n, sr.kind = 1, "package"
			}
		}
		switch {
		case n == 1:
			found = append(found, sr)
			foundPlain = append(foundPlain, c.plain)
		case n > 1:
			many = append(many, fmt.Sprintf("%s (%d declarations)", name, n))
			manyName = append(manyName, name)
			manyPlain = append(manyPlain, c.plain)
			manyUsed = append(manyUsed, sr.used)
		case c.code:
			missing = append(missing, name)
		default:
			plain = append(plain, name)
		}
	}
	if one, ok := inClause(toks, intent, found, manyUsed); ok {
		found, foundPlain, many, manyName, manyPlain = []symbolReading{one}, []bool{false}, nil, nil, nil
	}
	found, many, manyName = dropPlain(found, foundPlain, many, manyName, manyPlain)
	switch {
	case len(missing) > 0:
		return symbolReading{}, "no declaration of " + strings.Join(missing, " or ") + " in the workspace"
	case len(found) == 1 && len(many) == 0:
		for k := range described {
			found[0].used[k] = true
		}
		return found[0], ""
	case len(found)+len(many) > 1:
		var names []string
		for _, f := range found {
			names = append(names, f.name)
		}
		return symbolReading{}, "several symbols named: " + strings.Join(append(names, many...), ", ")
	case len(many) == 1:
		return symbolReading{name: manyName[0]}, "ambiguous: " + many[0] + "; qualify it (pkg.Name, Type.Method)"
	}
	return symbolReading{}, "no word of the request names a declared symbol (" + strings.Join(plain, ", ") + ")"
}

// inClause picks, of several symbols named, the one in the clause that
// asks, when every other is in another clause or set aside: "I know X, but
// where is Y defined", "who calls Y (not X)", "who calls Y besides X".
// A clause that adds ("…, and X") asks about both: no pick.
func inClause(toks []token, intent Intent, found []symbolReading, many []map[int]bool) (symbolReading, bool) {
	if len(found)+len(many) < 2 {
		return symbolReading{}, false
	}
	ask := -1
	for _, t := range toks {
		if t.code {
			continue
		}
		if i, ok := vocabOf(t.low); ok && family(i) == family(intent) || ask < 0 && weak[t.low] {
			ask = t.clause
			if ok {
				break
			}
		}
	}
	if ask < 0 {
		return symbolReading{}, false
	}
	in := func(used map[int]bool) bool {
		for k := range used {
			if toks[k].clause != ask || toks[k].aside {
				return false
			}
		}
		return true
	}
	for k, t := range toks {
		if (t.low == "and" || t.low == "or" || t.low == "also") && !t.code && k+1 < len(toks) && toks[k+1].clause != ask {
			return symbolReading{}, false
		}
	}
	var pick []symbolReading
	for _, f := range found {
		if in(f.used) {
			pick = append(pick, f)
		}
	}
	for _, m := range many {
		if in(m) {
			return symbolReading{}, false
		}
	}
	if len(pick) != 1 {
		return symbolReading{}, false
	}
	return pick[0], true
}

// compound reports whether a name joins words by case: NewServeMux,
// refererForURL; not SKU or Request.
func compound(name string) bool {
	for i := 1; i < len(name); i++ {
		if unicode.IsUpper(rune(name[i])) && unicode.IsLower(rune(name[i-1])) {
			return true
		}
	}
	return false
}

// dropPlain keeps only the declared names written as names when one of
// them is declared once: "need to read ServeContent" is about ServeContent, whatever the
// workspace calls read.
func dropPlain(found []symbolReading, foundPlain []bool, many, manyName []string, manyPlain []bool) ([]symbolReading, []string, []string) {
	named := false // a name written as one is declared once
	for _, p := range foundPlain {
		named = named || !p
	}
	if !named {
		return found, many, manyName
	}
	var f []symbolReading
	var m, mn []string
	for i, sr := range found {
		if !foundPlain[i] {
			f = append(f, sr)
		}
	}
	for i := range many {
		if !manyPlain[i] {
			m, mn = append(m, many[i]), append(mn, manyName[i])
		}
	}
	return f, m, mn
}

// joinPairs reads two adjacent names as one member when the table declares
// it once: "the http2ClientConn healthCheck method" is
// http2ClientConn.healthCheck, not two symbols.
func joinPairs(ctx context.Context, cands []candidate, syms Symbols, intent Intent) []candidate {
	for i := 0; i+1 < len(cands); i++ {
		a, b := cands[i], cands[i+1]
		if len(a.idx) != 1 || len(b.idx) != 1 || b.idx[0] != a.idx[0]+1 || a.plain || b.plain ||
			strings.ContainsAny(a.name+b.name, ".()") {
			continue
		}
		joined := a.name + "." + b.name
		if n, err := syms.Declarations(ctx, joined, intent != Definition || b.called); err == nil && n == 1 {
			c := candidate{name: joined, code: true, called: b.called, kind: b.kind, idx: []int{a.idx[0], b.idx[0]}}
			cands = append(append(cands[:i:i], c), cands[i+2:]...)
		}
	}
	return cands
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// identShaped reports whether s can name a symbol: X, a.X, a.b.X, (*T).M,
// (T).M, dir/pkg.X; it returns s as the table takes it.
func identShaped(s string) (string, bool) {
	if s == "" || len(s) > 200 {
		return "", false
	}
	t := s
	if i := strings.LastIndex(t, "/"); i >= 0 {
		if strings.Contains(t[:i], "..") || strings.HasPrefix(t, "/") {
			return "", false
		}
		t = t[i+1:]
		if !strings.Contains(t, ".") {
			return "", false // a path, not a symbol
		}
		for _, part := range strings.Split(s[:i], "/") {
			if part == "" || strings.ContainsAny(part, "()*`") {
				return "", false
			}
		}
	}
	if strings.HasPrefix(t, "(") {
		j := strings.Index(t, ").")
		if j < 0 {
			return "", false
		}
		t = strings.TrimPrefix(t[1:j], "*") + t[j+1:]
	}
	parts := strings.Split(t, ".")
	if len(parts) > 3 {
		return "", false
	}
	for _, p := range parts {
		if !gotoken.IsIdentifier(p) {
			return "", false
		}
	}
	if len(parts) > 1 && len(parts[len(parts)-1]) <= 3 && strings.ToLower(parts[len(parts)-1]) == parts[len(parts)-1] && !strings.HasPrefix(s, "(") {
		switch parts[len(parts)-1] {
		case "go", "ts", "js", "py", "md", "txt", "sh", "rs", "c", "h":
			return "", false // server.go: a file
		}
	}
	return s, true
}

// Refusal is a tier's fall-through for a look-up it did not read whole:
// the cascade records the reason and consults the next tier.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return "the request was not read: " + r.Reason }
