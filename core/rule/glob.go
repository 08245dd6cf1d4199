package rule

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// segment is one '/'-separated part of a path pattern.
type segment struct {
	raw      string // as written, escapes kept
	globstar bool   // "**": zero or more whole path segments
	literal  bool   // no wildcards: the name must equal text
	text     string // the name with escapes removed, when literal
	toks     []tok  // the compiled pattern, when neither globstar nor literal
}

type tokKind uint8

const (
	tokRune  tokKind = iota // one given rune
	tokAny                  // ?: any one rune
	tokStar                 // *: any run of runes, possibly empty
	tokClass                // [...]: one rune in (or, negated, not in) ranges
)

type tok struct {
	kind   tokKind
	r      rune
	neg    bool
	ranges []runeRange
}

type runeRange struct{ lo, hi rune }

// parseSegment compiles one segment of a path pattern. The syntax is
// path.Match's plus "**" as a whole segment and "!" as an alternative to
// "^" for negating a class: '*' matches any run of characters but not '/',
// '?' one character, [a-z] and [^a-z] classes (']' and '-' inside a class,
// and any special character outside one, are escaped with a backslash).
func parseSegment(raw string) (segment, error) {
	seg := segment{raw: raw}
	switch raw {
	case "":
		return segment{}, fmt.Errorf("empty path segment")
	case ".", "..":
		return segment{}, fmt.Errorf("path segment %q is not allowed; write the path without it, or an absolute pattern", raw)
	case "**":
		seg.globstar = true
		return seg, nil
	}
	for i := 0; i < len(raw); {
		ch := raw[i]
		switch ch {
		case '\\':
			if i+1 == len(raw) {
				return segment{}, fmt.Errorf("trailing backslash in %q", raw)
			}
			r, size := utf8.DecodeRuneInString(raw[i+1:])
			seg.toks = append(seg.toks, tok{kind: tokRune, r: r})
			i += 1 + size
		case '*':
			if i+1 < len(raw) && raw[i+1] == '*' {
				return segment{}, fmt.Errorf("** must be a whole path segment, as in **/%s or dir/**, in %q", strings.ReplaceAll(raw, "**", "*"), raw)
			}
			seg.toks = append(seg.toks, tok{kind: tokStar})
			i++
		case '?':
			seg.toks = append(seg.toks, tok{kind: tokAny})
			i++
		case '[':
			t, n, err := parseClass(raw[i:])
			if err != nil {
				return segment{}, err
			}
			seg.toks = append(seg.toks, t)
			i += n
		case '{', '}':
			return segment{}, fmt.Errorf("brace expansion is not supported in %q; write one rule per alternative (or escape the brace)", raw)
		default:
			r, size := utf8.DecodeRuneInString(raw[i:])
			seg.toks = append(seg.toks, tok{kind: tokRune, r: r})
			i += size
		}
	}
	var text strings.Builder
	for _, t := range seg.toks {
		if t.kind != tokRune {
			return seg, nil
		}
		text.WriteRune(t.r)
	}
	if t := text.String(); t == "." || t == ".." {
		return segment{}, fmt.Errorf("path segment %q is not allowed; write the path without it, or an absolute pattern", raw)
	}
	seg.literal, seg.text, seg.toks = true, text.String(), nil
	return seg, nil
}

// parseClass parses a [...] class at the start of s and returns it with the
// number of bytes it took.
func parseClass(s string) (tok, int, error) {
	t := tok{kind: tokClass}
	i := 1
	if i < len(s) && (s[i] == '^' || s[i] == '!') {
		t.neg = true
		i++
	}
	readChar := func() (rune, error) {
		if i >= len(s) {
			return 0, fmt.Errorf("unclosed character class in %q", s)
		}
		switch s[i] {
		case '\\':
			i++
			if i >= len(s) {
				return 0, fmt.Errorf("unclosed character class in %q", s)
			}
		case '-', ']':
			return 0, fmt.Errorf("unescaped %q in character class in %q", s[i], s)
		case '[':
			if i+1 < len(s) && s[i+1] == ':' {
				return 0, fmt.Errorf("named character classes like [:alpha:] are not supported, in %q", s)
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		return r, nil
	}
	for {
		if i < len(s) && s[i] == ']' && len(t.ranges) > 0 {
			return t, i + 1, nil
		}
		if i < len(s) && s[i] == ']' {
			return tok{}, 0, fmt.Errorf("empty character class in %q", s)
		}
		lo, err := readChar()
		if err != nil {
			return tok{}, 0, err
		}
		hi := lo
		if i < len(s) && s[i] == '-' {
			i++
			if hi, err = readChar(); err != nil {
				return tok{}, 0, err
			}
			if hi < lo {
				return tok{}, 0, fmt.Errorf("invalid range %q in character class in %q", string(lo)+"-"+string(hi), s)
			}
		}
		t.ranges = append(t.ranges, runeRange{lo, hi})
	}
}

// match reports whether the segment matches one name (which holds no '/').
// fold compares without regard to case.
func (seg *segment) match(name string, fold bool) bool {
	switch {
	case seg.globstar:
		return true
	case seg.literal:
		if fold {
			return strings.EqualFold(name, seg.text)
		}
		return name == seg.text
	}
	// Classic wildcard matching: on a mismatch, let the last '*' take one
	// more rune and retry. Every other token takes exactly one rune, so this
	// is exact and needs no deeper backtracking.
	toks := seg.toks
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(name) {
		if p < len(toks) && toks[p].kind == tokStar {
			starP, starN = p, n
			p++
			continue
		}
		r, size := utf8.DecodeRuneInString(name[n:])
		if r == utf8.RuneError && size == 1 {
			r = -1 // an invalid byte is not U+FFFD: only ? and * match it
		}
		if p < len(toks) && toks[p].matchRune(r, fold) {
			p++
			n += size
			continue
		}
		if starP < 0 {
			return false
		}
		_, size = utf8.DecodeRuneInString(name[starN:])
		starN += size
		p, n = starP+1, starN
	}
	for p < len(toks) && toks[p].kind == tokStar {
		p++
	}
	return p == len(toks)
}

// matchRune reports whether the token matches r or, when folding case, any
// case variant of r: so folding only ever adds matches, negated classes
// included.
func (t *tok) matchRune(r rune, fold bool) bool {
	if t.matchExact(r) {
		return true
	}
	if fold && r >= 0 {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if t.matchExact(f) {
				return true
			}
		}
	}
	return false
}

func (t *tok) matchExact(r rune) bool {
	switch t.kind {
	case tokAny:
		return true
	case tokRune:
		return r == t.r
	case tokClass:
		if r < 0 {
			return t.neg // an invalid byte is in no range
		}
		return t.inRanges(r) != t.neg
	}
	return false
}

func (t *tok) inRanges(r rune) bool {
	for _, rg := range t.ranges {
		if rg.lo <= r && r <= rg.hi {
			return true
		}
	}
	return false
}
