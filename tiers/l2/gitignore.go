package l2

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// ignorePattern is one line of a .gitignore file, compiled.
type ignorePattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// ignoreFile is the patterns of one .gitignore, which apply to paths
// below its directory base ("" for the root).
type ignoreFile struct {
	base     string
	patterns []ignorePattern
}

// parseGitignore compiles a .gitignore's lines (gitignore(5)): blank lines
// and # comments are skipped; trailing unescaped spaces are trimmed; "!"
// negates; a trailing "/" matches directories only; a "/" at the start or
// in the middle anchors the pattern to base, otherwise it matches at any
// depth; "*", "?", "[...]" do not cross "/"; "**" spans directories in
// the leading "**/", trailing "/**" and inner "/**/" forms. Lines that do
// not compile are ignored, as git ignores them.
func parseGitignore(base string, data []byte) *ignoreFile {
	f := &ignoreFile{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if p, ok := compileIgnore(sc.Text()); ok {
			f.patterns = append(f.patterns, p)
		}
	}
	return f
}

func compileIgnore(line string) (ignorePattern, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are ignored unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return ignorePattern{}, false
	}
	var p ignorePattern
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
		return ignorePattern{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
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
			end := strings.IndexByte(line[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			if end == 0 { // "[]...]": a leading ] is literal
				next := strings.IndexByte(line[i+2:], ']')
				if next < 0 {
					b.WriteString(`\[`)
					continue
				}
				end = next + 1
			}
			class := line[i+1 : i+1+end]
			i += end + 1
			b.WriteString("[")
			if class[0] == '!' || class[0] == '^' {
				b.WriteString("^/")
				class = class[1:]
			}
			for k := 0; k < len(class); k++ {
				ch := class[k]
				if ch == '\\' && k+1 < len(class) {
					k++
					ch = class[k]
				}
				if ch == '-' && k > 0 && k < len(class)-1 {
					b.WriteByte('-')
					continue
				}
				b.WriteString(regexp.QuoteMeta(string(ch)))
			}
			b.WriteString("]")
		case c == '\\' && i+1 < len(line):
			i++
			b.WriteString(regexp.QuoteMeta(string(line[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return ignorePattern{}, false
	}
	p.re = re
	return p, true
}

// match reports whether this file decides rel (slash-separated, relative
// to the workspace root): decided is false when no pattern matches.
func (f *ignoreFile) match(rel string, isDir bool) (ignored, decided bool) {
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
		if p.re.MatchString(rel) {
			return !p.negate, true
		}
	}
	return false, false
}

// ignoreStack is the .gitignore files in force for one directory, deepest
// last: a deeper file's match overrides a shallower one's.
type ignoreStack []*ignoreFile

func (s ignoreStack) ignored(rel string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		if ig, ok := s[i].match(rel, isDir); ok {
			return ig
		}
	}
	return false
}
