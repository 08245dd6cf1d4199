package l2

import (
	"context"
	"regexp"
	"strings"
	"sync"

	"github.com/joulehook/joule/tiers/ask"
)

// Intent is what kind of lookup a prompt asks for.
type Intent int

const (
	// NoIntent: the prompt is not a lookup L2 knows (fix, write, explain…).
	NoIntent Intent = iota
	// DefinitionIntent: "where is X defined", "definition of X", "find X".
	DefinitionIntent
	// CallersIntent: "who calls X", "callers of X", "references to X".
	CallersIntent
	// SearchIntent: "find the code that …", "where do we …".
	SearchIntent
)

func (i Intent) String() string {
	switch i {
	case DefinitionIntent:
		return "definition"
	case CallersIntent:
		return "callers"
	case SearchIntent:
		return "search"
	}
	return "none"
}

// Query is a prompt parsed as a lookup.
type Query struct {
	Intent Intent
	Name   string // the symbol, for definition and callers lookups
	Text   string // what to search for, for search lookups
}

type queryForm struct {
	intent Intent
	re     *regexp.Regexp
}

// searchFirst is the one free-text form read before any look-up: "find the
// code that …" asks for code, whatever symbols it names. The other search
// forms are read only when no look-up is ("where do we reserve stock").
// Compiled on first use, not at every joule process's start.
var (
	searchFirst = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(?:find|show|locate|where\s+is|where's)\s+(?:me\s+)?(?:the\s+)?(?:code|function|place|logic|part|file)\s+(?:that|which|where|for|to|in\s+which|handling)\s+(.+)$`)
	})
	searchForms = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?i)^where\s+(?:do|does|did)\s+(?:we|it|the\s+code|the\s+program)\s+(.+)$`),
			regexp.MustCompile(`(?i)^where\s+(?:is|are)\s+(.+)\s+(?:handled|implemented|done|computed|parsed|checked|validated)$`),
		}
	})
)

// ParseQuery reads a prompt as a lookup without a symbol table: the
// intent from its vocabulary (ask.Read), the symbol the one word that
// can be one. The stage reads with the index's symbol table instead
// (readQuery). Anything not read whole is NoIntent: later tiers handle it.
func ParseQuery(prompt string) Query {
	q, _ := readQuery(context.Background(), prompt, nil)
	return q
}

// readQuery reads a prompt against syms (nil: unresolved). why is the
// reader's reason when the prompt asks for a look-up it cannot read whole.
func readQuery(ctx context.Context, prompt string, syms ask.Symbols) (q Query, why string) {
	p := strings.TrimSpace(prompt)
	p = strings.TrimRight(p, "?.! \t")
	p = strings.Join(strings.Fields(p), " ")
	if p == "" || len(p) > 500 {
		return Query{}, ""
	}
	if m := searchFirst().FindStringSubmatch(p); m != nil {
		return Query{Intent: SearchIntent, Text: m[1]}, ""
	}
	rd := ask.Read(ctx, p, syms)
	switch {
	case rd.Refused == "" && rd.Intent == ask.Definition:
		return Query{Intent: DefinitionIntent, Name: rd.Symbol}, ""
	case rd.Refused == "" && rd.Intent.LookUp():
		return Query{Intent: CallersIntent, Name: rd.Symbol}, ""
	case rd.Symbol != "" && rd.Intent.LookUp():
		// declared several times: the stage hands the declarations on
		if rd.Intent == ask.Definition {
			return Query{Intent: DefinitionIntent, Name: rd.Symbol}, ""
		}
		return Query{Intent: CallersIntent, Name: rd.Symbol}, ""
	case rd.Intent.LookUp() && !rd.Weak:
		return Query{}, rd.Refused
	}
	for _, re := range searchForms() {
		if m := re.FindStringSubmatch(p); m != nil {
			return Query{Intent: SearchIntent, Text: m[1]}, ""
		}
	}
	if rd.Intent.LookUp() {
		return Query{}, rd.Refused
	}
	return Query{}, ""
}

// symbols is the index's symbol table as the reader asks it.
type symbols struct{ ix *Index }

func (s symbols) Declarations(ctx context.Context, name string, callable bool) (int, error) {
	n, err := ParseName(name)
	if err != nil {
		return 0, nil // not a name the table holds
	}
	defs, err := s.ix.lookup(ctx, n)
	count := 0
	for _, d := range defs {
		if !callable || d.kind == "func" || strings.HasSuffix(d.kind, "method") {
			count++
		}
	}
	return count, err
}
