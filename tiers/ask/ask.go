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
	// Refused says why the request is not read whole; empty when it is.
	Refused string
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
	rd.Symbol, rd.Refused = symbolOf(ctx, toks, syms, rd.Intent)
	if rd.Weak && rd.Refused == "" {
		// "where is body parsed": with no word of look-up vocabulary, any
		// other word may be what is asked; only "find X", "where is X",
		// "go to X" and the like are definitions.
		if w := unread(toks, rd.Symbol); w != "" {
			rd.Symbol, rd.Refused = "", fmt.Sprintf("%q: only where %s is declared can be answered, and the request does not say it asks that", w, rd.Symbol)
		}
	}
	for _, t := range toks {
		if t.called && rd.Symbol != "" && t.text == rd.Symbol {
			rd.Called = true
		}
	}
	return rd
}

// token is one word of a request. code marks a word written as code
// (backticks or quotes, a call, a selector, mixed case, _ or digits):
// never vocabulary.
type token struct {
	text   string // without quoting and trailing punctuation
	low    string // lower case, for vocabulary
	code   bool
	called bool // written X(): a function or a method
}

var contractions = map[string][]string{
	"where's": {"where", "is"}, "wheres": {"where", "is"}, "who's": {"who", "is"}, "whos": {"who", "is"},
	"what's": {"what", "is"}, "whats": {"what", "is"}, "it's": {"it", "is"}, "i'm": {"i", "am"}, "i'd": {"i", "would"},
	"can't": {"can", "not"}, "cant": {"can", "not"}, "don't": {"do", "not"}, "doesn't": {"does", "not"}, "isn't": {"is", "not"},
	"let's": {"let", "us"}, "where're": {"where", "are"}, "u": {"you"}, "pls": {"please"}, "plz": {"please"}, "thx": {"thanks"},
}

func tokens(p string) []token {
	p = strings.NewReplacer("’", "'", "‘", "'", "“", "\"", "”", "\"", "→", " -> ").Replace(p)
	var out []token
	for _, f := range strings.Fields(p) {
		out = append(out, split(f)...)
	}
	return out
}

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
	if strings.HasSuffix(low, "'s") && len(f) > 2 { // Server's
		f, low = f[:len(f)-2], low[:len(low)-2]
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
	if !code && !(strings.ToUpper(f) == f && known(low)) { // "WHERE IS X DEFINED"
		for i, r := range f {
			if r == '_' || r == '.' && i > 0 && i < len(f)-1 || unicode.IsDigit(r) || unicode.IsUpper(r) && i > 0 || r == '*' {
				code = true
				break
			}
		}
	}
	return []token{{text: f, low: low, code: code, called: called}}
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
		"jump": true, "open": true, "whereabouts": true, "search": true, "grep": true}
	// acts ask for code to be written, explained or run: not look-ups.
	acts = map[string]string{}
)

func init() {
	for i, ws := range map[Intent]string{
		Definition: "define defined defines defining definition definitions def defn declare declared declares declaring declaration declarations decl implemented",
		Callers:    "call calls called caller callers calling callsite callsites invoke invokes invoked invoking invocation invocations incoming",
		Uses:       "use uses used usage usages reference references referenced referencing refs",
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
	if len(w) < 6 {
		return None, false
	}
	var found []Intent
	for v, i := range vocab {
		if len(v) >= 6 && oneEdit(w, v) {
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
		point exact exactly being`) {
		stop[w] = true
	}
}

// unread is the first word of toks that is neither sym nor a word the
// reader knows, or "".
func unread(toks []token, sym string) string {
	for _, t := range toks {
		if t.text == sym || t.code && !known(t.low) {
			if t.text != sym {
				return t.text
			}
			continue
		}
		switch t.low {
		case "please", "hey", "hi", "quick", "question", "so", "ok", "okay", "thanks", "thank":
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

// symbolOf finds the one symbol the request names: the identifier-shaped
// words (code words first) that the symbol table declares.
func symbolOf(ctx context.Context, toks []token, syms Symbols, intent Intent) (string, string) {
	var code, plain []string
	seen := map[string]bool{}
	called := map[string]bool{} // written X()
	for k, t := range toks {
		name, ok := identShaped(t.text)
		if !ok || seen[name] {
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
		}
		seen[name] = true
		called[name] = t.called
		if t.code {
			code = append(code, name)
		} else {
			plain = append(plain, name)
		}
	}
	if len(code)+len(plain) == 0 {
		return "", "no symbol named"
	}
	if syms == nil {
		all := append(code, plain...)
		if len(code) == 1 {
			return code[0], ""
		}
		if len(all) == 1 {
			return all[0], ""
		}
		return "", "several words could be the symbol: " + strings.Join(all, ", ")
	}
	// Every candidate is resolved: one declared word is the symbol; two
	// are two symbols, however they were written. A word written as code
	// that the table does not declare is a refusal, not a reason to take a
	// plain word instead.
	var found, many, manyName, missing []string
	for ci, class := range [][]string{code, plain} {
		for _, name := range class {
			// Callers are of functions and methods; so are uses of a name
			// that is one, before any field or variable namesake.
			n, err := syms.Declarations(ctx, name, intent != Definition || called[name])
			if err == nil && n == 0 && intent == Uses && !called[name] {
				n, err = syms.Declarations(ctx, name, false)
			}
			if err != nil {
				return "", fmt.Sprintf("the symbol table cannot say what %s is: %v", name, err)
			}
			switch {
			case n == 1:
				found = append(found, name)
			case n > 1:
				many = append(many, fmt.Sprintf("%s (%d declarations)", name, n))
				manyName = append(manyName, name)
			case ci == 0:
				missing = append(missing, name)
			}
		}
	}
	switch {
	case len(missing) > 0:
		return "", "no declaration of " + strings.Join(missing, " or ") + " in the workspace"
	case len(found) == 1 && len(many) == 0:
		return found[0], ""
	case len(found)+len(many) > 1:
		return "", "several symbols named: " + strings.Join(append(found, many...), ", ")
	case len(many) == 1:
		return manyName[0], "ambiguous: " + many[0] + "; qualify it (pkg.Name, Type.Method)"
	}
	return "", "no word of the request names a declared symbol (" + strings.Join(plain, ", ") + ")"
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
