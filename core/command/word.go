package command

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// word is a Word plus what the analysis needs to know about its shape.
type word struct {
	Word
	// split is true when the word may expand to zero or several fields
	// (unquoted expansions, globs, braces, "$@"), so it cannot stand for
	// exactly one argument.
	split bool
	// lead is the first character when it is literal, '/' for a leading
	// tilde, and 0 when the word starts with an expansion or is empty.
	lead byte
	// prefix is the literal text before the first expansion.
	prefix string
	// procSubst is true when the word contains <(…) or >(…).
	procSubst bool
	// ifs is true when an unquoted expansion makes the shell split the
	// word on blanks: one of its words may then start with anything.
	ifs bool
	// input is true for a word another program fills in when it runs
	// (xargs' input, find's {}): any path it names is known only then.
	input bool
	// expands is true when the word has a parameter, command, arithmetic
	// or process expansion, or quoting whose result is not certain; decoded
	// is then empty. Otherwise decoded is the text after quote removal,
	// before tilde, brace and glob expansion.
	expands bool
	decoded string
}

func literalWord(s string) word {
	w := word{Word: Word{Text: s, Literal: true}, prefix: s, decoded: s}
	if s != "" {
		w.lead = s[0]
	}
	return w
}

// opaqueWord is a word known only by its source text.
func opaqueWord(src string) word {
	return word{Word: Word{Text: src}, split: true, expands: true}
}

// after returns the part of w after its first n bytes of literal prefix
// (the value in --name=$X or if=~/x): literal when w is, otherwise known
// by its source text, which the gate expands as far as it can. When the
// source spells the prefix otherwise (with quotes), the value starts with
// what the gate cannot see.
func (w word) after(n int) word {
	if w.Literal {
		return literalWord(w.Text[n:])
	}
	v := word{Word: Word{Text: w.Text}, expands: true, ifs: w.ifs, split: w.split, procSubst: w.procSubst}
	if !strings.HasPrefix(w.Text, w.prefix[:n]) {
		return v // lead 0: a value the gate cannot see
	}
	src := w.Text[n:]
	v.Text, v.prefix = src, w.prefix[n:]
	switch {
	case src == "":
	case src[0] == '~' || src[0] == '/':
		v.lead = '/'
	case strings.IndexByte("$`\\'\"", src[0]) >= 0:
		v.lead = 0
	default:
		v.lead = src[0]
	}
	return v
}

// optionLike reports whether the word may expand to something starting
// with '-' or to several fields, so it could be an option or shift the
// words after it.
func (w word) optionLike() bool {
	if w.Literal {
		return strings.HasPrefix(w.Text, "-")
	}
	return w.split || w.lead == 0 || w.lead == '-'
}

// segment is a run of literal text, quoted or not.
type segment struct {
	text   string
	quoted bool
}

// wordBuilder accumulates one word's decoded text and shape.
type wordBuilder struct {
	segs      []segment
	literal   bool
	split     bool
	expanded  bool // an expansion has been seen: prefix is complete
	prefix    strings.Builder
	leadKnown bool
	lead      byte
	procSubst bool
	ifs       bool
	last      bool // the part being added is the word's last
}

func (b *wordBuilder) lit(text string, quoted bool) {
	if text == "" {
		return
	}
	if !b.leadKnown {
		b.leadKnown, b.lead = true, text[0]
	}
	if !b.expanded {
		b.prefix.WriteString(text)
	}
	b.segs = append(b.segs, segment{text, quoted})
}

// expansion records a part whose value is only known when the line runs.
func (b *wordBuilder) expansion(splits bool) {
	b.literal = false
	b.split = b.split || splits
	b.expanded = true
	b.leadKnown = true
}

// word converts a parsed word, listing the commands it runs.
func (a *analyzer) word(w *syntax.Word, fr frame) word {
	if w == nil || !a.enter(&fr) {
		return word{}
	}
	b := &wordBuilder{literal: true}
	for i, part := range w.Parts {
		b.last = i == len(w.Parts)-1
		a.wordPart(part, b, false, fr)
	}
	text := strings.Builder{}
	for _, s := range b.segs {
		text.WriteString(s.text)
	}
	res := word{lead: b.lead, prefix: b.prefix.String(), procSubst: b.procSubst, expands: !b.literal, ifs: b.ifs}
	if !b.leadKnown {
		res.lead = 0
	}
	if b.literal {
		res.decoded = text.String()
	}
	if tildeAt(b.segs) {
		b.literal = false
		if len(b.segs) > 0 && !b.segs[0].quoted && strings.HasPrefix(b.segs[0].text, "~") {
			res.lead = '/'
		}
	}
	if globIn(b.segs) || braces(w) {
		b.literal = false
		b.split = true
		if n := braceWords(w); n > maxBraceWords {
			a.fail(CodeResourceBomb, "the brace expansion %s makes more than %d words, which bash builds in memory", quote(fr.src.slice(w)), maxBraceWords)
		}
	}
	res.split = b.split
	res.Literal = b.literal
	if b.literal {
		res.Text = text.String()
	} else {
		res.Text = fr.src.slice(w)
	}
	return res
}

func (a *analyzer) wordPart(part syntax.WordPart, b *wordBuilder, quoted bool, fr frame) {
	switch p := part.(type) {
	case *syntax.Lit:
		if quoted {
			b.lit(unescapeDouble(p.Value), true)
			return
		}
		unescapeBare(p.Value, b, b.last)
	case *syntax.SglQuoted:
		if !p.Dollar {
			b.lit(p.Value, true)
			return
		}
		s, ok := decodeANSIC(p.Value)
		if !ok {
			b.expansion(false)
			return
		}
		b.lit(s, true)
	case *syntax.DblQuoted:
		if p.Dollar {
			// $"…" is translated through the locale's message catalog.
			b.expansion(false)
		}
		for _, q := range p.Parts {
			a.wordPart(q, b, true, fr)
		}
	case *syntax.ParamExp:
		if !b.leadKnown && isHomeOrPWD(p) {
			b.leadKnown, b.lead = true, '/' // an absolute path
		}
		b.expansion(!quoted || multiField(p))
		// $HOME and $PWD hold paths the gate knows; it judges a line that
		// assigns PWD by itself.
		b.ifs = b.ifs || !quoted && !isHomeOrPWD(p) || multiField(p)
		a.param(p, fr)
	case *syntax.CmdSubst:
		b.expansion(!quoted)
		b.ifs = b.ifs || !quoted
		a.stmts(p.Stmts, fr.subshell())
	case *syntax.ArithmExp:
		b.expansion(!quoted)
		b.ifs = b.ifs || !quoted
		a.arith(p.X, fr)
	case *syntax.ProcSubst:
		if !b.leadKnown {
			b.leadKnown, b.lead = true, '/' // it becomes /dev/fd/N
		}
		b.expansion(false)
		b.procSubst = true
		inner := fr.subshell()
		if p.Op == syntax.CmdOut {
			inner.fed = true // >(cmd) reads what the command writes
		}
		a.stmts(p.Stmts, inner)
	case *syntax.ExtGlob:
		a.fail(CodeExtGlob, "the extended glob %q is not analyzed: zsh reads it as a glob qualifier, which can run code", fr.src.slice(p))
		b.expansion(true)
	default:
		a.fail(CodeUnsupported, "the word part %q is not supported", fr.src.slice(part))
		b.expansion(true)
	}
}

// isHomeOrPWD reports $HOME and $PWD, which hold absolute paths: the line
// cannot set HOME, and cd keeps PWD absolute.
func isHomeOrPWD(p *syntax.ParamExp) bool {
	return p.Param != nil && (p.Param.Value == "HOME" || p.Param.Value == "PWD") &&
		!p.Excl && !p.Length && p.Index == nil && p.Slice == nil && p.Repl == nil && p.Exp == nil
}

// multiField reports "$@" and "${a[@]}", which expand to several words
// even when quoted.
func multiField(p *syntax.ParamExp) bool {
	if p.Param != nil && p.Param.Value == "@" && p.Index == nil {
		return !p.Length
	}
	if w, ok := p.Index.(*syntax.Word); ok && (w.Lit() == "@") {
		return !p.Length
	}
	return p.Names != 0
}

// unescapeBare removes backslash quoting from an unquoted literal; an
// escaped character becomes a quoted segment, so it is never a glob. A
// leftover '$' is something bash reads literally but another shell (zsh:
// $~x, $=x) may expand, so it makes the word non-literal, unless it ends
// the word (-run=^$), where no shell expands it.
func unescapeBare(s string, b *wordBuilder, last bool) {
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			b.lit(s[start:i], false)
			if i+1 >= len(s) {
				b.lit(`\`, true)
				start = len(s)
				break
			}
			_, size := utf8.DecodeRuneInString(s[i+1:])
			b.lit(s[i+1:i+1+size], true)
			i += size
			start = i + 1
		case '$':
			if !(last && i == len(s)-1) {
				b.literal = false
			}
		}
	}
	b.lit(s[start:], false)
}

// unescapeDouble removes the backslashes bash removes inside double
// quotes: before $, `, ", \ and newline.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				out.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}

// tildeAt reports an unquoted ~ that bash expands: at the start of the
// word, or after an unquoted = or : (bash expands a=~ and PATH=a:~ even in
// arguments).
func tildeAt(segs []segment) bool {
	prev := byte(0)
	for i, s := range segs {
		if s.quoted {
			prev = 'q'
			continue
		}
		for j := 0; j < len(s.text); j++ {
			c := s.text[j]
			if c == '~' && ((i == 0 && j == 0) || prev == '=' || prev == ':') {
				return true
			}
			prev = c
		}
	}
	return false
}

// globIn reports an unquoted *, ? or a [ that a later ] may close.
func globIn(segs []segment) bool {
	for i, s := range segs {
		if s.quoted {
			continue
		}
		for j := 0; j < len(s.text); j++ {
			switch s.text[j] {
			case '*', '?':
				return true
			case '[':
				if strings.Contains(s.text[j+1:], "]") {
					return true
				}
				for _, later := range segs[i+1:] {
					if strings.Contains(later.text, "]") {
						return true
					}
				}
			}
		}
	}
	return false
}

// braces reports a brace expansion such as {a,b} or {1..3}.
func braces(w *syntax.Word) bool {
	if !slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		l, ok := p.(*syntax.Lit)
		return ok && strings.Contains(l.Value, "{")
	}) {
		return false
	}
	// SplitBraces reports any '{', so look for an expansion it made.
	split := &syntax.Word{Parts: slices.Clone(w.Parts)}
	syntax.SplitBraces(split)
	return slices.ContainsFunc(split.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.BraceExp)
		return ok
	})
}

// decodeANSIC decodes the body of $'…' as bash does. It reports false for
// escapes whose result it cannot be sure of, and for NUL, which ends the
// word early in bash.
func decodeANSIC(s string) (string, bool) {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", false
		}
		switch e := s[i]; e {
		case 'a':
			out.WriteByte('\a')
		case 'b':
			out.WriteByte('\b')
		case 'e', 'E':
			out.WriteByte(0x1b)
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'v':
			out.WriteByte('\v')
		case '\\', '\'', '"', '?':
			out.WriteByte(e)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			if n == 0 || n >= utf8.RuneSelf {
				return "", false
			}
			out.WriteByte(byte(n))
			i = j - 1
		case 'x', 'u', 'U':
			maxDigits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j < i+1+maxDigits && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				return "", false
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			switch {
			case n == 0:
				return "", false
			case n >= utf8.RuneSelf:
				// bash encodes \u through the locale, and a high \x byte
				// is not text.
				return "", false
			default:
				out.WriteByte(byte(n))
			}
			i = j - 1
		case 'c':
			if i+1 >= len(s) {
				return "", false
			}
			i++
			l := s[i] | 0x20
			if l < 'a' || l > 'z' {
				return "", false // bash maps \c? to DEL and others oddly
			}
			out.WriteByte(s[i] & 0x1f)
		default:
			out.WriteByte('\\')
			out.WriteByte(e)
		}
	}
	return out.String(), true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
