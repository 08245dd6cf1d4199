// Package gitignore decides which paths of a tree git ignores: the
// patterns of its .gitignore files (each applying below its own directory,
// a deeper file's match overriding a shallower one's) and of
// .git/info/exclude, as gitignore(5) describes them. It is the one engine
// behind the index's scan (tiers/l2), the MCP search tool and the
// sandbox's discovery of ignored code (core/sandbox), and its tests
// hold it to what git itself ignores (git ls-files --others
// --exclude-standard).
package gitignore

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// pattern is one line of a .gitignore file, compiled.
type pattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
	// The forms most lines take are matched without the expression
	// (the walks of core/sandbox match every entry of every directory
	// against every line): fast is fastBase (the path's last element is
	// lit), fastSuffix (it ends with lit: "*.log") or fastPath (the path
	// is lit: an anchored line without wildcards); 0 uses re.
	fast byte
	lit  string
}

const (
	fastBase = 1 + iota
	fastSuffix
	fastPath
)

// matches reports whether p's line matches rel.
func (p *pattern) matches(rel string) bool {
	switch p.fast {
	case fastBase:
		return rel == p.lit || strings.HasSuffix(rel, p.lit) && rel[len(rel)-len(p.lit)-1] == '/'
	case fastSuffix:
		return strings.HasSuffix(rel, p.lit) // lit holds no "/"
	case fastPath:
		return rel == p.lit
	}
	return p.re.MatchString(rel)
}

// File is the patterns of one ignore file, which apply to paths below its
// directory base ("" for the root).
type File struct {
	base     string
	patterns []pattern
}

// Parse compiles a .gitignore's lines (gitignore(5)): blank lines
// and # comments are skipped; trailing unescaped spaces are trimmed; "!"
// negates; a trailing "/" matches directories only; a "/" at the start or
// in the middle anchors the pattern to base, otherwise it matches at any
// depth; "*", "?", "[...]" do not cross "/"; "**" spans directories in
// the leading "**/", trailing "/**" and inner "/**/" forms. Lines that do
// not compile are ignored, as git ignores them.
func Parse(base string, data []byte) *File {
	f := &File{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if p, ok := compile(sc.Text()); ok {
			f.patterns = append(f.patterns, p)
		}
	}
	return f
}

func compile(line string) (pattern, bool) {
	expr, p, ok := translate(line)
	if !ok {
		return pattern{}, false
	}
	re, err := regexp.Compile(expr)
	if err != nil { // translate's bug: FuzzParse looks for one
		return pattern{}, false
	}
	p.re = re
	return p, true
}

// translate turns a .gitignore line into a regular expression over the
// path relative to the file's directory; ok is false for a line that
// matches nothing (blank, a comment, a malformed bracket, a trailing
// backslash).
func translate(line string) (expr string, p pattern, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are ignored unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return "", pattern{}, false
	}
	if line[0] == '!' {
		p.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return "", pattern{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	switch {
	case line == "" || strings.ContainsAny(line, "\\[?"):
	case !strings.Contains(line, "*"):
		p.fast, p.lit = fastBase, line
		if anchored {
			p.fast = fastPath
		}
	case !anchored && line[0] == '*' && !strings.ContainsAny(line[1:], "*/") && len(line) > 1:
		p.fast, p.lit = fastSuffix, line[1:]
	}
	var b strings.Builder
	b.WriteString("^")
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '*' && i+1 < len(line) && line[i+1] == '*':
			atStart := i == 0 || line[i-1] == '/'
			j := i + 2
			if atStart && j < len(line) && line[j] == '/' {
				b.WriteString("(?:.*/)?") // **/ : zero or more directories
				i = j
			} else if atStart && j == len(line) {
				b.WriteString(".*") // trailing /** : everything inside
				i = j - 1
			} else {
				b.WriteString("[^/]*") // other ** is an ordinary *
				i++
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			class, n, ok := bracket(line[i:])
			if !ok {
				return "", pattern{}, false // git: a malformed bracket matches nothing
			}
			b.WriteString(class)
			i += n - 1
		case c == '\\':
			if i+1 == len(line) {
				return "", pattern{}, false // git: a trailing backslash matches nothing
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(line[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String(), p, true
}

// posixClasses are the [:name:] classes git's wildmatch knows, as Go
// regexp class members; those that hold "/" are spelled without it, since
// no bracket matches "/" in a path.
var posixClasses = map[string]string{
	"alnum": "[:alnum:]", "alpha": "[:alpha:]", "blank": "[:blank:]", "cntrl": "[:cntrl:]",
	"digit": "[:digit:]", "lower": "[:lower:]", "space": "[:space:]", "upper": "[:upper:]",
	"xdigit": "[:xdigit:]",
	"punct":  `!-.:-@\[-` + "`" + `{-~`,
	"graph":  `!-.0-~`,
	"print":  ` -.0-~`,
}

// bracket translates the bracket expression at the start of s as git's
// wildmatch reads it into a Go regexp class that never matches "/": "!" or
// "^" first negates, a "]" first (after it) is literal, a backslash escapes,
// "a-z" is a range (one whose ends are reversed matches nothing) and
// "[:digit:]" a character class. n is the length of the expression; ok is
// false when it is malformed (no closing "]", an unknown class name), for
// which git's pattern matches nothing.
func bracket(s string) (class string, n int, ok bool) {
	var b strings.Builder
	i := 1
	negate := i < len(s) && (s[i] == '!' || s[i] == '^')
	if negate {
		i++
		b.WriteString("/")
	}
	// member reads one (possibly escaped) character at i.
	member := func() (rune, bool) {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				return 0, false
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		return r, true
	}
	for first := true; ; first = false {
		if i >= len(s) {
			return "", 0, false
		}
		if s[i] == ']' && !first {
			i++
			break
		}
		if strings.HasPrefix(s[i:], "[:") {
			if end := strings.Index(s[i+2:], ":]"); end >= 0 {
				name := s[i+2 : i+2+end]
				members, known := posixClasses[name]
				if !known {
					return "", 0, false
				}
				b.WriteString(members)
				i += end + 4
				continue
			}
		}
		lo, ok := member()
		if !ok {
			return "", 0, false
		}
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			i++
			if hi, ok = member(); !ok {
				return "", 0, false
			}
		}
		switch {
		case lo > hi: // an empty range
		case !negate && lo <= '/' && '/' <= hi:
			// The range without "/".
			if lo < '/' {
				writeRange(&b, lo, '.')
			}
			if hi > '/' {
				writeRange(&b, '0', hi)
			}
		default:
			writeRange(&b, lo, hi)
		}
	}
	if b.Len() == 0 {
		return "[^\\x00-\\x{10FFFF}]", i, true // nothing in it: matches no character
	}
	if negate {
		return "[^" + b.String() + "]", i, true
	}
	return "[" + b.String() + "]", i, true
}

// writeRange writes lo-hi as class members, each as its code point, so no
// character in them can mean anything to the class.
func writeRange(b *strings.Builder, lo, hi rune) {
	fmt.Fprintf(b, `\x{%x}`, lo)
	if hi != lo {
		fmt.Fprintf(b, `-\x{%x}`, hi)
	}
}

// Match reports whether this file decides rel (slash-separated, relative
// to the tree's root): decided is false when no pattern matches.
func (f *File) Match(rel string, isDir bool) (ignored, decided bool) {
	if f.base != "" {
		if !strings.HasPrefix(rel, f.base+"/") {
			return false, false
		}
		rel = rel[len(f.base)+1:]
	}
	for i := len(f.patterns) - 1; i >= 0; i-- {
		p := f.patterns[i]
		if p.dirOnly && !isDir {
			continue
		}
		if p.matches(rel) {
			return !p.negate, true
		}
	}
	return false, false
}

// Stack is the ignore files in force in one directory, deepest last: a
// deeper file's match overrides a shallower one's, and any .gitignore
// overrides .git/info/exclude, which comes first.
type Stack []*File

// Exclude is the stack at the top of the tree at root before its own
// .gitignore: its .git/info/exclude, when it has one.
func Exclude(root string) Stack {
	data, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude"))
	if err != nil {
		return nil
	}
	return Stack{Parse("", data)}
}

// Enter is the stack in force inside directory dir (slash-separated,
// relative to root, "" for root itself) when s is the one in force where dir
// is: s and dir's .gitignore, if it has one it can read. s itself is left
// as it is, so siblings can each enter from it.
func (s Stack) Enter(root, dir string) Stack {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), ".gitignore"))
	if err != nil {
		return s
	}
	return append(s[:len(s):len(s)], Parse(dir, data))
}

// Ignored reports whether rel (slash-separated, relative to the root) is
// ignored: the last pattern that matches it in the deepest file that has
// one decides. A walk skips an ignored directory, and so everything in it,
// as git does (a file in it cannot be re-included).
func (s Stack) Ignored(rel string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		if ig, ok := s[i].Match(rel, isDir); ok {
			return ig
		}
	}
	return false
}
