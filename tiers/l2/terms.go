package l2

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTermLen drops longer runs (hashes, base64) from the lexical index:
// nobody searches for them by word and they bloat it.
const maxTermLen = 64

// Terms returns the lexical terms of s: every identifier-like run, lowered
// and kept whole, followed by its parts when it is compound, split at
// underscores, case changes (camelCase, PascalCase, acronyms as in
// HTTPServer) and letter/digit boundaries. "ServeHTTP" gives servehttp,
// serve, http; "parse_config" gives parse_config, parse, config.
func Terms(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWordRune)
		if i < 0 {
			break
		}
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return !isWordRune(r) })
		if j < 0 {
			j = len(s)
		}
		w := s[:j]
		s = s[j:]
		if len(w) > maxTermLen {
			continue
		}
		whole := strings.ToLower(w)
		if strings.Trim(whole, "_") == "" {
			continue
		}
		out = append(out, whole)
		parts := splitIdent(w)
		if len(parts) > 1 || (len(parts) == 1 && parts[0] != whole) {
			out = append(out, parts...)
		}
	}
	return out
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

type runeClass int

const (
	classOther runeClass = iota
	classLower
	classUpper
	classDigit
)

func classOf(r rune) runeClass {
	switch {
	case unicode.IsUpper(r):
		return classUpper
	case unicode.IsLower(r), unicode.IsLetter(r):
		return classLower
	case unicode.IsDigit(r):
		return classDigit
	}
	return classOther
}

// splitIdent splits one identifier into lowered parts (see Terms).
func splitIdent(w string) []string {
	var parts []string
	for _, seg := range strings.Split(w, "_") {
		if seg == "" {
			continue
		}
		rs := []rune(seg)
		start := 0
		for i := 1; i < len(rs); i++ {
			prev, cur := classOf(rs[i-1]), classOf(rs[i])
			brk := false
			switch {
			case prev == classLower && cur == classUpper:
				brk = true // serveH
			case prev == classUpper && cur == classUpper && i+1 < len(rs) && classOf(rs[i+1]) == classLower:
				brk = true // HTTPServer: break before S
			case (prev == classDigit) != (cur == classDigit):
				brk = true // utf8, v2Client
			}
			if brk {
				parts = append(parts, strings.ToLower(string(rs[start:i])))
				start = i
			}
		}
		parts = append(parts, strings.ToLower(string(rs[start:])))
	}
	return parts
}

// termText is the lexical form of s stored in the full-text index.
func termText(s string) string { return strings.Join(Terms(s), " ") }

// stopwords are dropped from free-text queries: they carry no signal about
// which code is meant.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by code do does for from how i in is it its of on or that the this to what when where which who why with find show me my we our function func method file files implementation implements implemented logic part there any all can you please`) {
		stopwords[w] = true
	}
}

// queryTerms are the distinct terms of a free-text query, stopwords out.
func queryTerms(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Terms(q) {
		if stopwords[t] || seen[t] || !utf8.ValidString(t) {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}
