package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/joulehook/joule/core/gitignore"
)

// ignorer applies the ignore files of a tree as a walk enters its
// directories: each directory's .gitignore to the paths below it, over
// .git/info/exclude at the root. .git itself is always skipped.
type ignorer struct {
	root   string
	stacks map[string]gitignore.Stack // directory (slash, relative to root, "" for root) → the files in force in it
}

func newIgnorer(root string) *ignorer {
	return &ignorer{root: root, stacks: map[string]gitignore.Stack{"": gitignore.Exclude(root).Enter(root, "")}}
}

// enter loads the .gitignore of directory dir (slash, relative) if it has
// one, over those of the directories above it, entered before it.
func (ig *ignorer) enter(dir string) {
	if dir == "" {
		return
	}
	ig.stacks[dir] = ig.stack(path.Dir(dir)).Enter(ig.root, dir)
}

// stack is the files in force in directory dir: its own stack, or that of
// the nearest directory above it that was entered.
func (ig *ignorer) stack(dir string) gitignore.Stack {
	for ; ; dir = path.Dir(dir) {
		if dir == "." {
			dir = ""
		}
		if s, ok := ig.stacks[dir]; ok || dir == "" {
			return s
		}
	}
}

// ignored reports whether rel (slash, relative to root) is ignored by the
// files in force in its directory.
func (ig *ignorer) ignored(rel string, isDir bool) bool {
	if rel == ".git" || strings.HasPrefix(rel, ".git/") || path.Base(rel) == ".git" {
		return true
	}
	return ig.stack(path.Dir(rel)).Ignored(rel, isDir)
}

// searchQuery is one search tool call.
type searchQuery struct {
	re      *regexp.Regexp
	glob    string // optional file name or path glob
	max     int
	maxSize int64
}

// match is one matching line.
type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

const maxMatchText = 300

// compileSearch builds the matcher: pattern is a Go (RE2) regular expression
// unless literal is set.
func compileSearch(pattern string, literal, ignoreCase bool) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, errors.New("pattern is empty")
	}
	if literal {
		pattern = regexp.QuoteMeta(pattern)
	}
	if ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern is not a valid regular expression (RE2 syntax): %v", err)
	}
	return re, nil
}

// search walks start (inside root) for lines matching q, skipping ignored,
// binary and oversized files and not following symbolic links.
func search(ctx context.Context, root, start string, q searchQuery) (matches []match, truncated bool, err error) {
	ig := newIgnorer(root)
	fi, err := os.Stat(start)
	if err != nil {
		return nil, false, err
	}
	if !fi.IsDir() {
		relStart, _ := filepath.Rel(root, start)
		m, t := searchFile(start, filepath.ToSlash(relStart), q, q.max)
		return m, t, nil
	}
	// Load the .gitignore files of the directories between root and start.
	if relStart, err := filepath.Rel(root, start); err == nil && relStart != "." {
		parts := strings.Split(filepath.ToSlash(relStart), "/")
		for i := range parts {
			ig.enter(strings.Join(parts[:i+1], "/"))
		}
	}
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, werr error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if werr != nil {
			if d != nil && d.IsDir() && p != start {
				return fs.SkipDir // unreadable directory: skip it
			}
			return nil
		}
		r, _ := filepath.Rel(root, p)
		rel := filepath.ToSlash(r)
		if d.IsDir() {
			if p == start {
				return nil
			}
			if ig.ignored(rel, true) {
				return fs.SkipDir
			}
			ig.enter(rel)
			return nil
		}
		if !d.Type().IsRegular() || ig.ignored(rel, false) {
			return nil
		}
		if q.glob != "" {
			ok, _ := path.Match(q.glob, path.Base(rel))
			if !ok {
				ok, _ = path.Match(q.glob, rel)
			}
			if !ok {
				return nil
			}
		}
		if info, err := d.Info(); err != nil || info.Size() > q.maxSize {
			return nil
		}
		m, t := searchFile(p, rel, q, q.max-len(matches))
		matches = append(matches, m...)
		if t || len(matches) >= q.max {
			truncated = true
			return fs.SkipAll
		}
		return nil
	})
	return matches, truncated, err
}

// searchFile returns up to max matching lines of one text file.
func searchFile(p, rel string, q searchQuery, max int) ([]match, bool) {
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniff)
	if binary(head) {
		return nil, false
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out []match
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !q.re.Match(line) {
			continue
		}
		if len(out) >= max {
			return out, true
		}
		text := validUTF8(string(line))
		if len(text) > maxMatchText {
			text = validUTF8(text[:maxMatchText]) + "…"
		}
		out = append(out, match{Path: rel, Line: n, Text: text})
	}
	return out, false
}
