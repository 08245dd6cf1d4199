package l1

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/joulehook/joule/core"
)

// match reports whether rel is selected by glob: "" selects everything, a
// glob without "/" matches base names anywhere, "dir/**" a whole subtree,
// anything else the whole relative path.
func match(glob, rel string) bool {
	switch {
	case glob == "" || glob == "." || glob == "**":
		return true
	case strings.HasSuffix(glob, "/**"):
		return strings.HasPrefix(rel, strings.TrimSuffix(glob, "**"))
	case !strings.Contains(glob, "/"):
		ok, _ := path.Match(glob, path.Base(rel))
		return ok
	}
	ok, _ := path.Match(glob, rel)
	return ok || glob == rel
}

func validGlob(glob string) error {
	if _, err := path.Match(strings.TrimSuffix(glob, "/**"), ""); err != nil {
		return fmt.Errorf("bad glob %q: %v", glob, err)
	}
	return nil
}

// skipped are the trees a whole-workspace format leaves alone, as gofmt
// users expect (go vet and go build ignore them too).
func skipped(rel string) bool {
	for _, d := range strings.Split(path.Dir(rel), "/") {
		if d == "." {
			continue
		}
		if d == "testdata" || d == "vendor" || d == "node_modules" || strings.HasPrefix(d, ".") || strings.HasPrefix(d, "_") {
			return true
		}
	}
	return false
}

func replace(files core.Files, c Replace) (core.Files, string, error) {
	if err := validGlob(c.Glob); err != nil {
		return nil, "", err
	}
	var re *regexp.Regexp
	if c.Regex {
		var err error
		if re, err = regexp.Compile(c.Old); err != nil {
			return nil, "", fmt.Errorf("bad regular expression: %v", err)
		}
	}
	next := files.Clone()
	count, nfiles := 0, 0
	for _, p := range files.Paths() {
		b := files[p]
		if !match(c.Glob, p) || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			continue // binary files are never edited by a text replace
		}
		var out []byte
		var n int
		if re != nil {
			n = len(re.FindAllIndex(b, -1))
			out = re.ReplaceAll(b, []byte(c.New))
		} else {
			n = bytes.Count(b, []byte(c.Old))
			out = bytes.ReplaceAll(b, []byte(c.Old), []byte(c.New))
		}
		if n > 0 {
			count += n
			nfiles++
			next[p] = out
		}
	}
	if count == 0 {
		return nil, "", fmt.Errorf("no match for %q in files matching %q", c.Old, c.Glob)
	}
	return next, fmt.Sprintf("replaced %d occurrence(s) of %q in %d file(s)", count, c.Old, nfiles), nil
}

const maxFindLines = 200

func find(files core.Files, text string) string {
	var sb strings.Builder
	n := 0
	for _, p := range files.Paths() {
		b := files[p]
		if !utf8.Valid(b) {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, text) {
				n++
				if n <= maxFindLines {
					fmt.Fprintf(&sb, "%s:%d: %s\n", p, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
	switch {
	case n == 0:
		return fmt.Sprintf("no line holds %q", text)
	case n > maxFindLines:
		fmt.Fprintf(&sb, "… %d more\n", n-maxFindLines)
	}
	return fmt.Sprintf("%d line(s) hold %q:\n%s", n, text, sb.String())
}

// applyPatch applies a unified diff strictly: every hunk's context and
// removed lines must be found exactly where its header says.
func applyPatch(files core.Files, diff string) (core.Files, string, error) {
	fps, err := parseDiff(diff)
	if err != nil {
		return nil, "", err
	}
	next := files.Clone()
	hunks := 0
	for _, fp := range fps {
		switch {
		case fp.newPath == "":
			return nil, "", fmt.Errorf("%s: the patch deletes the file; a coding op cannot delete", fp.oldPath)
		case fp.oldPath != "" && fp.oldPath != fp.newPath:
			return nil, "", fmt.Errorf("%s: the patch renames the file to %s; not supported", fp.oldPath, fp.newPath)
		}
		if err := core.ValidatePath(fp.newPath); err != nil {
			return nil, "", err
		}
		cur, exists := next[fp.newPath]
		if fp.oldPath == "" && exists {
			return nil, "", fmt.Errorf("%s: the patch creates the file, but it exists", fp.newPath)
		}
		if fp.oldPath != "" && !exists {
			return nil, "", fmt.Errorf("%s: no such file in the workspace", fp.oldPath)
		}
		out, err := applyHunks(cur, fp)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %v", fp.newPath, err)
		}
		next[fp.newPath] = out
		hunks += len(fp.hunks)
	}
	return next, fmt.Sprintf("applied a patch: %d hunk(s) in %d file(s)", hunks, len(fps)), nil
}

type filePatch struct {
	oldPath, newPath string // "" for /dev/null
	hunks            []hunk
}

type hunk struct {
	oldStart   int
	lines      []string // each with its ' ', '-' or '+' prefix, without "\n"
	noEOLOld   bool
	noEOLNew   bool
	oldN, newN int
}

var hunkHeader = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)
})

func diffPath(s, prefix string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

func parseDiff(diff string) ([]*filePatch, error) {
	lines := strings.Split(strings.TrimRight(diff, "\n"), "\n")
	var out []*filePatch
	for i := 0; i < len(lines); {
		l := lines[i]
		if !strings.HasPrefix(l, "--- ") {
			if strings.HasPrefix(l, "@@") {
				return nil, fmt.Errorf("patch line %d: hunk without a file header", i+1)
			}
			i++ // git headers, index lines, prose
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "+++ ") {
			return nil, fmt.Errorf("patch line %d: '---' without '+++'", i+1)
		}
		fp := &filePatch{oldPath: diffPath(l[4:], "a/"), newPath: diffPath(lines[i+1][4:], "b/")}
		i += 2
		for i < len(lines) && strings.HasPrefix(lines[i], "@@") {
			m := hunkHeader().FindStringSubmatch(lines[i])
			if m == nil {
				return nil, fmt.Errorf("patch line %d: bad hunk header %q", i+1, lines[i])
			}
			h := hunk{oldStart: atoi(m[1]), oldN: count(m[2]), newN: count(m[4])}
			i++
			o, n := 0, 0
			for i < len(lines) && (o < h.oldN || n < h.newN || strings.HasPrefix(lines[i], `\`)) {
				l := lines[i]
				switch {
				case strings.HasPrefix(l, `\`):
					if len(h.lines) == 0 {
						return nil, fmt.Errorf("patch line %d: misplaced %q", i+1, l)
					}
					switch h.lines[len(h.lines)-1][0] {
					case '-':
						h.noEOLOld = true
					case '+':
						h.noEOLNew = true
					default:
						h.noEOLOld, h.noEOLNew = true, true
					}
				case l == "" || l[0] == ' ':
					o++
					n++
					h.lines = append(h.lines, " "+strings.TrimPrefix(l, " "))
				case l[0] == '-':
					o++
					h.lines = append(h.lines, l)
				case l[0] == '+':
					n++
					h.lines = append(h.lines, l)
				default:
					return nil, fmt.Errorf("patch line %d: %q is not a hunk line", i+1, l)
				}
				i++
			}
			if o != h.oldN || n != h.newN {
				return nil, fmt.Errorf("patch: hunk %q is truncated (%d/%d old, %d/%d new lines)", m[0], o, h.oldN, n, h.newN)
			}
			fp.hunks = append(fp.hunks, h)
		}
		if len(fp.hunks) == 0 {
			return nil, fmt.Errorf("patch: %s has no hunks", fp.newPath)
		}
		out = append(out, fp)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("patch: no file header ('--- a/…', '+++ b/…')")
	}
	return out, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func count(s string) int {
	if s == "" {
		return 1
	}
	return atoi(s)
}

func applyHunks(cur []byte, fp *filePatch) ([]byte, error) {
	text := string(cur)
	eol := text == "" || strings.HasSuffix(text, "\n")
	src := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		src = nil
	}
	var out []string
	pos := 0 // next unconsumed source line, 0-based
	newEOL := eol
	for k, h := range fp.hunks {
		start := h.oldStart - 1
		if h.oldN == 0 {
			start = h.oldStart // a pure insertion is placed after line oldStart
		}
		if start < pos || start > len(src) {
			return nil, fmt.Errorf("hunk %d: starts at line %d, outside the file or before the previous hunk", k+1, h.oldStart)
		}
		out = append(out, src[pos:start]...)
		pos = start
		for _, l := range h.lines {
			switch l[0] {
			case ' ', '-':
				if pos >= len(src) || src[pos] != l[1:] {
					return nil, fmt.Errorf("hunk %d does not apply: line %d differs from the patch's %q", k+1, pos+1, l[1:])
				}
				if l[0] == ' ' {
					out = append(out, l[1:])
				}
				pos++
			case '+':
				out = append(out, l[1:])
			}
		}
		if h.noEOLOld && (pos != len(src) || eol) {
			return nil, fmt.Errorf("hunk %d does not apply: the patch expects no newline at end of file", k+1)
		}
		if pos == len(src) {
			newEOL = !h.noEOLNew
		}
	}
	out = append(out, src[pos:]...)
	res := strings.Join(out, "\n")
	if len(out) > 0 && newEOL {
		res += "\n"
	}
	return []byte(res), nil
}
