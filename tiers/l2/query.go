package l2

import (
	"regexp"
	"strings"
	"sync"
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

const (
	nameRE = "`?" + `((?:[\w.\-]+/)*(?:\(\*?[\p{L}_][\p{L}\p{N}_.]*\)\.)?[\p{L}_][\p{L}\p{N}_]*(?:\.[\p{L}_][\p{L}\p{N}_]*)*)(?:\(\))?` + "`?"
	kindRE = `(?:(?:the\s+)?(?:func(?:tion)?|method|type|struct|interface|class|const(?:ant)?|var(?:iable)?|symbol|identifier)\s+)?`
)

type queryForm struct {
	intent Intent
	re     *regexp.Regexp
}

// Compiled on first use, not at every joule process's start.
var queryForms = sync.OnceValue(func() []queryForm {
	return []queryForm{
		{DefinitionIntent, regexp.MustCompile(`(?i)^where(?:\s+is|\s+are|'s)\s+` + kindRE + nameRE + `(?:\s+(?:defined|declared))?$`)},
		{DefinitionIntent, regexp.MustCompile(`(?i)^(?:(?:show|find|give)\s+(?:me\s+)?)?(?:the\s+)?(?:definition|declaration)\s+(?:of|for)\s+` + kindRE + nameRE + `$`)},
		{DefinitionIntent, regexp.MustCompile(`(?i)^(?:go\s*to|jump\s+to)\s+(?:the\s+)?(?:definition\s+of\s+)?` + kindRE + nameRE + `$`)},
		{DefinitionIntent, regexp.MustCompile(`(?i)^(?:find|locate)\s+` + kindRE + nameRE + `$`)},
		{CallersIntent, regexp.MustCompile(`(?i)^(?:who|what)\s+(?:calls|uses|references)\s+` + kindRE + nameRE + `$`)},
		{CallersIntent, regexp.MustCompile(`(?i)^(?:(?:find|show|list|give)\s+(?:me\s+)?)?(?:all\s+)?(?:the\s+)?(?:callers|call\s+sites|calls|usages|uses|references|refs)\s+(?:of|to|for)\s+` + kindRE + nameRE + `$`)},
		{CallersIntent, regexp.MustCompile(`(?i)^where\s+(?:is|are)\s+` + kindRE + nameRE + `\s+(?:called|used|referenced)$`)},
		{SearchIntent, regexp.MustCompile(`(?i)^(?:find|show|locate|where\s+is|where's)\s+(?:me\s+)?(?:the\s+)?(?:code|function|place|logic|part|file)\s+(?:that|which|where|for|to|in\s+which|handling)\s+(.+)$`)},
		{SearchIntent, regexp.MustCompile(`(?i)^where\s+(?:do|does|did)\s+(?:we|it|the\s+code|the\s+program)\s+(.+)$`)},
		{SearchIntent, regexp.MustCompile(`(?i)^where\s+(?:is|are)\s+(.+)\s+(?:handled|implemented|done|computed|parsed|checked|validated)$`)},
	}
})

// ParseQuery reads a prompt as a lookup. Anything it does not recognise
// whole is NoIntent: the cascade's later tiers handle it.
func ParseQuery(prompt string) Query {
	p := strings.TrimSpace(prompt)
	p = strings.TrimRight(p, "?.! \t")
	p = strings.Join(strings.Fields(p), " ")
	if p == "" || len(p) > 500 {
		return Query{}
	}
	for _, f := range queryForms() {
		m := f.re.FindStringSubmatch(p)
		if m == nil {
			continue
		}
		arg := m[1]
		if f.intent == SearchIntent {
			return Query{Intent: SearchIntent, Text: arg}
		}
		if _, err := ParseName(arg); err != nil {
			return Query{}
		}
		return Query{Intent: f.intent, Name: arg}
	}
	return Query{}
}
