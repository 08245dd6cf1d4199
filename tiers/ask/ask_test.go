package ask

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// table is a symbol table for tests: name -> declarations.
type table map[string]int

func (t table) Declarations(_ context.Context, name string, callable bool) (int, error) {
	if callable && name == "Cookie" {
		return 1, nil // the method Request.Cookie, not the type
	}
	if name == "Broken" {
		return 0, errors.New("index unreadable")
	}
	return t[name], nil
}

var shop = table{"NewServer": 1, "Server.Shutdown": 1, "(*Server).Shutdown": 1, "http.NewServer": 1, "Close": 9, "Cookie": 2,
	"disjoint": 1, "Header": 1, "Get": 3, "Store": 1, "Store.Get": 1, "net/http.Get": 1}

func TestRead(t *testing.T) {
	for _, tt := range []struct {
		prompt string
		intent Intent
		symbol string
		refuse string // substring of the reason; "" = read whole
	}{
		// One intent, whatever the word order, contraction or typo.
		{"Where's the definition of NewServer?", Definition, "NewServer", ""},
		{"where is NewServer defined", Definition, "NewServer", ""},
		{"NewServer: where is it declared?", Definition, "NewServer", ""},
		{"def of `NewServer()`?", Definition, "NewServer", ""},
		{"wheres the defintion of NewServer", Definition, "NewServer", ""},
		{"were is NewServer decalred?", Definition, "NewServer", ""},
		{"WHERE IS NewServer DEFINED", Definition, "NewServer", ""},
		{"Find `http.NewServer`", Definition, "http.NewServer", ""},
		{"show me where (*Server).Shutdown is declared.", Definition, "(*Server).Shutdown", ""},
		{"Hey, quick question: where's Server.Shutdown() defined?", Definition, "Server.Shutdown", ""},
		{"go to definition of net/http.Get", Definition, "net/http.Get", ""},
		{"pls find where disjoint is defined thx", Definition, "disjoint", ""},
		{"find disjoint", Definition, "disjoint", ""},
		{"where is `NewServer`?", Definition, "NewServer", ""},
		{"where is disjoint parsed", Definition, "", "does not say it asks that"},
		{"show me NewServer failing", Definition, "", "does not say it asks that"},
		{"where is the Get method of Store defined", Definition, "Store.Get", ""},
		{"Who calls NewServer?", Callers, "NewServer", ""},
		{"find all calers of `NewServer`", Callers, "NewServer", ""},
		{"call sites of NewServer", Callers, "NewServer", ""},
		{"Where is NewServer called from", Callers, "NewServer", ""},
		{"NewServer callers", Callers, "NewServer", ""},
		{"I'd like to see all the places that call NewServer, please.", Callers, "NewServer", ""},
		{"who uses NewServer", Uses, "NewServer", ""},
		{"where's NewServer referenced?", Uses, "NewServer", ""},
		{"who uses NewServer and who calls it", Callers, "NewServer", ""},
		{"rename NewServer to Open", Rename, "", ""},
		{"please change the name of NewServer to Open", Rename, "", ""},
		{"Can you gofmt server.go?", Format, "", ""},
		{"run go fmt on status.go", Format, "", ""},
		// Ambiguous intents.
		{"rename NewServer to Open and show me who calls it", None, "", "two requests"},
		{"where is NewServer defined and who calls it?", None, "", "two requests"},
		{"rename Server to Srv and format server.go", None, "", "two requests"},
		// Ambiguous or missing symbols.
		{"where are Cookie and NewServer defined?", Definition, "", "several symbols"},
		{"where is Cookie() defined?", Definition, "Cookie", ""},
		{"who calls Cookie", Callers, "Cookie", ""},
		{"where is Close defined?", Definition, "Close", "ambiguous: Close (9 declarations)"},
		{"where is FrobnicateWidget defined?", Definition, "", "no declaration of FrobnicateWidget"},
		{"where is it defined?", Definition, "", "no symbol"},
		{"who calls the client?", Callers, "", "no symbol"},
		{"where is the disjoint defined", Definition, "", "no symbol"},
		{"where is Broken defined", Definition, "", "cannot say"},
		// A word written as code that is not declared is not replaced by a plain one.
		{"where is `Nope` defined in disjoint", Definition, "", "no declaration of Nope"},
		// Not look-ups.
		{"write a unit test for Server.Shutdown", None, "", "asks to write"},
		{"what does NewServer do?", None, "", "what something does"},
		{"define a new type called Widget", None, "", "write code"},
		{"call NewServer with a nil body", None, "", "write code"},
		{"run the tests", None, "", "asks to run"},
		{"hello", None, "", "no look-up"},
		{"", None, "", "one-line"},
		{"where is\nNewServer defined", None, "", "one-line"},
	} {
		rd := Read(context.Background(), tt.prompt, shop)
		if rd.Intent != tt.intent || rd.Symbol != tt.symbol || (tt.refuse == "") != (rd.Refused == "") || !strings.Contains(rd.Refused, tt.refuse) {
			t.Errorf("Read(%q) = %+v, want intent %q symbol %q refusal %q", tt.prompt, rd, tt.intent, tt.symbol, tt.refuse)
		}
	}
}

// narrowing is shop with kinds and files: Widget is a type in widget.go
// and a field in form.go; Render is a func in widget.go and in page.go.
type narrowing struct{ table }

func (n narrowing) DeclarationsOf(_ context.Context, name, kind, file string, _ bool) (int, error) {
	type decl struct{ kind, file string }
	ds := map[string][]decl{
		"Widget": {{"type", "widget.go"}, {"field", "form.go"}},
		"Render": {{"func", "widget.go"}, {"func", "page.go"}},
	}[name]
	c := 0
	for _, d := range ds {
		pkgLevel := kind == "package" && d.kind != "method" && d.kind != "field"
		if (kind == "" || kind == d.kind || pkgLevel) && (file == "" || file == d.file) {
			c++
		}
	}
	return c, nil
}

func (n narrowing) Spellings(_ context.Context, word string) ([]string, error) {
	var out []string
	for name := range n.table {
		if name != word && strings.ToLower(name) == word {
			out = append(out, name)
		}
	}
	return out, nil
}

var shelf = narrowing{table{"Widget": 2, "Render": 2, "Store": 1, "Store.Get": 1, "Get": 3, "Pool.Acquire": 1, "Acquire": 2,
	"Pool": 1, "NewPool": 1, "Lease.Renew": 1, "Renew": 1, "Lease": 1, "store.Get": 0, "shop.Render": 1, "DefaultPool": 1, "read": 6, "(*Pool).Acquire": 1, "pool.Acquire": 1, "TCP": 1}}

// TestReadPeople are the classes of requests the held-out set's author
// reported misread, on symbols of their own.
func TestReadPeople(t *testing.T) {
	for _, tt := range []struct {
		prompt     string
		intent     Intent
		symbol     string
		kind, file string
		refuse     string
	}{
		// Questions about behaviour are not look-ups.
		{"is DefaultPool safe to use from several goroutines?", None, "", "", "", "how something may be"},
		{"is it ok to call NewPool from an init func?", None, "", "", "", "how something may be"},
		{"can Pool.Acquire block forever?", None, "", "", "", "no look-up"},
		{"is Pool.Acquire declared with a context, or does it block forever?", None, "", "", "", "question about"},
		{"does NewPool panic on a zero size?", None, "", "", "", ""},
		{"is NewPool used anywhere?", Uses, "NewPool", "", "", ""},
		{"does anything call NewPool?", Callers, "NewPool", "", "", ""},
		{"are there references to NewPool", Uses, "NewPool", "", "", ""},
		// Vocabulary: implementation, come from, lives, source, editor jargon.
		{"show me the implementation of Lease.Renew", Definition, "Lease.Renew", "", "", ""},
		{"where's the impl of Pool.Acquire", Definition, "Pool.Acquire", "", "", ""},
		{"where does NewPool come from?", Definition, "NewPool", "", "", ""},
		{"where does NewPool live", Definition, "NewPool", "", "", ""},
		{"where is NewPool written", Definition, "NewPool", "", "", ""},
		{"i need to see NewPool's source", Definition, "NewPool", "", "", ""},
		{"gd on NewPool", Definition, "NewPool", "", "", ""},
		{"ctrl-click NewPool", Definition, "NewPool", "", "", ""},
		{"navigate to the NewPool constructor", Definition, "NewPool", "", "", ""},
		{"where's the NewPool helper", Definition, "NewPool", "", "", ""},
		// Punctuation and shorthand.
		{"Lease struct — where?", Definition, "Lease", "", "", ""},
		{"jump 2 NewPool", Definition, "NewPool", "", "", ""},
		{"Lease – where is it declared", Definition, "Lease", "", "", ""},
		// Members written as people write them.
		{"where is Pool's Acquire", Definition, "Pool.Acquire", "", "", ""},
		{"the Acquire method on Pool: where is it?", Definition, "Pool.Acquire", "", "", ""},
		{"where is Acquire on Pool defined", Definition, "Pool.Acquire", "", "", ""},
		{"go to Renew (the Lease method)", Definition, "Lease.Renew", "", "", ""},
		{"find p.Acquire (the Pool method)", Definition, "Pool.Acquire", "", "", ""},
		{"where's l.Renew defined", Definition, "Renew", "", "", ""},
		{"who calls p.Acquire on Pool", Callers, "Pool.Acquire", "", "", ""},
		{"where is *Store defined", Definition, "Store", "", "", ""},
		// What the request says of the symbol singles one out, or is
		// confirmed; it never blocks a name declared once.
		{"go to the Widget type", Definition, "Widget", "type", "", ""},
		{"where is the type Widget", Definition, "Widget", "type", "", ""},
		{"jump to Render in page.go", Definition, "Render", "", "page.go", ""},
		{"find Render (widget.go)", Definition, "Render", "", "widget.go", ""},
		{"where's NewPool, in pool.go I think", Definition, "NewPool", "", "", ""},
		{"where is Render defined", Definition, "Render", "", "", "ambiguous"},
		// A bare name is its one package-level declaration, not a member
		// namesake (a field is written T.Widget).
		{"where is the Widget defined", Definition, "Widget", "package", "", ""},
		{"who calls Render", Callers, "Render", "", "", "ambiguous"},
		// A package named in the prose qualifies the name.
		{"where is example/shop Render defined", Definition, "shop.Render", "", "", ""},
		{"Render in example.com/shop: where is it", Definition, "shop.Render", "", "", ""},
		// The held-out set's last misses, by class (reader3).
		// A plain word the workspace happens to declare is not a second symbol.
		{"where is Lease defined? need to read it", Definition, "Lease", "", "", ""},
		{"i want to read the Renew method of Lease, where's it defined", Definition, "Lease.Renew", "", "", ""},
		// An aside in brackets, a dash: not words of the request.
		{"find the Lease interface (lease.go?)", Definition, "Lease", "", "", ""},
		{"NewPool -- where is it?", Definition, "NewPool", "", "", ""},
		// Two names side by side that are one member.
		{"find the Pool Acquire method", Definition, "Pool.Acquire", "", "", ""},
		// A package named by its bare name.
		{"go to the Render func in shop", Definition, "shop.Render", "", "", ""},
		{"go to the Render func in storage", Definition, "Render", "", "", "ambiguous"},
		// "the X factory func": what X is.
		{"go to the NewPool factory func", Definition, "NewPool", "", "", ""},
		// Styles the sets did not have (reader3): Go's receiver syntax, a
		// signature in a code span, "(a T method)", short typos, one
		// symbol asked about beside another.
		{"where is func (p *Pool) Acquire defined", Definition, "(*Pool).Acquire", "", "", ""},
		{"go to `NewPool(size int) *Pool`'s definition", Definition, "NewPool", "", "", ""},
		{"find `p.Acquire` (a Pool method)", Definition, "Pool.Acquire", "", "", ""},
		{"who cals NewPool?", Callers, "NewPool", "", "", ""},
		{"whree's NewPool defined", Definition, "NewPool", "", "", ""},
		{"I know NewPool, but where is Lease defined?", Definition, "Lease", "", "", ""},
		{"who calls NewPool (not DefaultPool)", Callers, "NewPool", "", "", ""},
		{"who calls NewPool besides DefaultPool?", Callers, "NewPool", "", "", ""},
		{"DefaultPool is in pool.go; where is Lease defined?", Definition, "Lease", "", "", ""},
		{"where is NewPool defined, and Lease?", Definition, "", "", "", "several symbols"},
		{"where are NewPool and Lease defined", Definition, "", "", "", "several symbols"},
		{"who calls Acquire on pool", Callers, "pool.Acquire", "", "", ""},
		// A compound name written in lower case; a word is not a name.
		{"where is newpool defined", Definition, "NewPool", "", "", ""},
		{"who calls defaultpool", Callers, "DefaultPool", "", "", ""},
		{"where is lease defined", Definition, "", "", "", "names a declared symbol"},
		{"where is tcp defined", Definition, "", "", "", "names a declared symbol"},
		// Still refused: two symbols, a write, an explanation.
		{"where are NewPool and Lease defined", Definition, "", "", "", "several symbols"},
		{"explain the Acquire method on Pool", None, "", "", "", "asks to explain"},
		{"why does Pool's Acquire block", None, "", "", "", "asks to why"},
	} {
		rd := Read(context.Background(), tt.prompt, shelf)
		if rd.Intent != tt.intent && !(tt.intent == None && tt.refuse == "") || rd.Symbol != tt.symbol || rd.Kind != tt.kind || rd.File != tt.file ||
			(tt.refuse == "" && tt.intent != None) != (rd.Refused == "") || !strings.Contains(rd.Refused, tt.refuse) {
			t.Errorf("Read(%q) = %+v, want intent %q symbol %q kind %q file %q refusal %q", tt.prompt, rd, tt.intent, tt.symbol, tt.kind, tt.file, tt.refuse)
		}
	}
}

func TestSites(t *testing.T) {
	for _, tt := range []struct {
		answer string
		want   int
	}{
		{"X (func) is defined at a/b.go:12\n\n    12\tfunc X() {\n\t… (20 more lines, to a/b.go:40)\n", 1},
		{"X is declared at a.go:3:6:\na.go:3: func X()\n2 use(s):\nb.go:9:2: X()\nc.go:1:1: X()\n", 3},
		{"a.go:1 a.go:2 b.go:1 c.go:1", 4},
		{"no places", 0},
	} {
		if got := Sites(tt.answer); got != tt.want {
			t.Errorf("Sites(%q) = %d, want %d", tt.answer, got, tt.want)
		}
	}
}

func TestOneEdit(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"defintion", "definition", true}, {"decalred", "declared", true}, {"calers", "callers", true},
		{"calles", "called", true}, {"definition", "definition", false}, {"dfntn", "definition", false}, {"abc", "abd", true},
	} {
		if got := oneEdit(tt.a, tt.b); got != tt.want {
			t.Errorf("oneEdit(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

// FuzzRead: any prompt is read without a panic, the same way twice, and a
// reading is either whole or refused with a reason.
func FuzzRead(f *testing.F) {
	for _, s := range []string{"Where's the definition of NewServer?", "who calls `(*Server).Shutdown()`", "find all calers of x",
		"rename a to b and format c.go", "(*).", "``", "'s", "where's 's", "go to net/http.Get", "(*Server).", "a.b.c.d", "ⅫX", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := Read(context.Background(), s, shop)
		b := Read(context.Background(), s, shop)
		if a != b {
			t.Fatalf("Read(%q) not deterministic: %+v then %+v", s, a, b)
		}
		if a.Refused == "" && a.Intent.LookUp() && a.Symbol == "" {
			t.Fatalf("Read(%q) = %+v: a look-up read whole without a symbol", s, a)
		}
		if a.Refused == "" && a.Intent == None {
			t.Fatalf("Read(%q) = %+v: no intent and no reason", s, a)
		}
		_ = Read(context.Background(), s, nil)
	})
}
