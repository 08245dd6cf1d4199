package l3

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/joulehook/joule/core"
)

// Block is one search/replace edit: in Path, the text Search (which must
// occur exactly once) becomes Replace. An empty Search creates Path, which
// must not exist yet.
type Block struct {
	Path    string
	Search  string
	Replace string
	Line    int // 1-based line of the block's "<<<<<<< SEARCH" marker in the reply
}

// The markers, each alone on its line (trailing blanks allowed).
const (
	markSearch  = "<<<<<<< SEARCH"
	markDivider = "======="
	markReplace = ">>>>>>> REPLACE"
)

// ParseError is a reply that breaks the edit-block grammar.
type ParseError struct {
	Line int // 1-based line of the reply
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("edit blocks: line %d: %s", e.Line, e.Msg) }

// Parse reads every edit block in a model's reply (docs/models.md gives the
// grammar). Prose and code fences between blocks are ignored; a block must
// be complete and name its file on the line just before its SEARCH marker.
// A reply with no block at all parses to nil, nil.
func Parse(reply string) ([]Block, error) {
	text := strings.ReplaceAll(reply, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	var (
		blocks []Block
		prev   string // the last non-marker line seen outside a block
	)
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t")
		switch l {
		case markSearch:
		case markDivider, markReplace:
			return nil, &ParseError{i + 1, fmt.Sprintf("%q outside a block", l)}
		default:
			if strings.HasPrefix(l, "<<<<<<<") || strings.HasPrefix(l, ">>>>>>>") {
				return nil, &ParseError{i + 1, fmt.Sprintf("malformed marker %q: want %q or %q", oneLine(l), markSearch, markReplace)}
			}
			prev = l
			continue
		}
		path, err := blockPath(prev)
		if err != nil {
			return nil, &ParseError{i + 1, err.Error()}
		}
		b := Block{Path: path, Line: i + 1}
		var search, repl []string
		part := &search
		j := i + 1
		for ; ; j++ {
			if j >= len(lines) {
				return nil, &ParseError{i + 1, fmt.Sprintf("block for %s is not closed with %q", path, markReplace)}
			}
			m := strings.TrimRight(lines[j], " \t")
			if m == markSearch || strings.HasPrefix(m, "<<<<<<<") {
				return nil, &ParseError{j + 1, fmt.Sprintf("%q inside the block that starts on line %d", oneLine(m), i+1)}
			}
			if m == markDivider {
				if part == &repl {
					return nil, &ParseError{j + 1, fmt.Sprintf("a second %q in the block that starts on line %d", markDivider, i+1)}
				}
				part = &repl
				continue
			}
			if m == markReplace || strings.HasPrefix(m, ">>>>>>>") {
				if m != markReplace {
					return nil, &ParseError{j + 1, fmt.Sprintf("malformed marker %q: want %q", oneLine(m), markReplace)}
				}
				if part != &repl {
					return nil, &ParseError{j + 1, fmt.Sprintf("%q before %q in the block that starts on line %d", markReplace, markDivider, i+1)}
				}
				break
			}
			*part = append(*part, lines[j])
		}
		b.Search, b.Replace = joinLines(search), joinLines(repl)
		if b.Search == b.Replace {
			return nil, &ParseError{i + 1, fmt.Sprintf("the block for %s replaces its text with itself", path)}
		}
		blocks = append(blocks, b)
		i, prev = j, ""
	}
	return blocks, nil
}

// blockPath is the file a block names on the line before its marker,
// written bare or in backticks or bold, as models do.
func blockPath(line string) (string, error) {
	p := strings.TrimSpace(line)
	if strings.HasPrefix(p, "```") {
		return "", fmt.Errorf("the line before %q is %q, not a file path", markSearch, oneLine(line))
	}
	p = strings.Trim(p, "`*")
	p = strings.TrimSpace(strings.TrimPrefix(p, "File:"))
	p = strings.Trim(p, "`")
	if p == "" {
		return "", fmt.Errorf("%q without a file path on the line before it", markSearch)
	}
	if strings.ContainsAny(p, " \t") {
		return "", fmt.Errorf("the line before %q is %q, not a file path", markSearch, oneLine(line))
	}
	p = strings.TrimPrefix(p, "./")
	if err := core.ValidatePath(p); err != nil {
		return "", fmt.Errorf("file path %q: %v", p, err)
	}
	return p, nil
}

func joinLines(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

func oneLine(s string) string {
	if len(s) > 80 {
		return strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}

// ApplyError is a block that does not fit the tree.
type ApplyError struct {
	Block Block
	Msg   string
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("the block for %s (reply line %d) %s", e.Block.Path, e.Block.Line, e.Msg)
}

// Apply applies blocks in order to a copy of files and returns it; files
// itself is not modified. Each SEARCH must occur exactly once in the file as
// the earlier blocks left it.
func Apply(files core.Files, blocks []Block) (core.Files, error) {
	next := files.Clone()
	for _, b := range blocks {
		cur, exists := next[b.Path]
		if b.Search == "" {
			if exists {
				return nil, &ApplyError{b, "has an empty SEARCH, which creates a file, but the file exists; quote the text to replace"}
			}
			next[b.Path] = []byte(b.Replace)
			continue
		}
		if !exists {
			return nil, &ApplyError{b, "names a file that does not exist (an empty SEARCH creates one)"}
		}
		switch n := bytes.Count(cur, []byte(b.Search)); n {
		case 0:
			return nil, &ApplyError{b, "has SEARCH text that does not occur in the file; copy it exactly, whitespace included"}
		case 1:
			next[b.Path] = bytes.Replace(cur, []byte(b.Search), []byte(b.Replace), 1)
		default:
			return nil, &ApplyError{b, fmt.Sprintf("has SEARCH text that occurs %d times in the file; include more lines so it is unique", n)}
		}
	}
	return next, nil
}
