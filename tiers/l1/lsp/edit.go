package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/joulehook/joule/core"
)

// Position is an LSP position: zero-based line and UTF-16 code unit.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is an LSP range.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// TextEdit replaces Range with NewText.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// WorkspaceEdit is the part of the LSP type a rename or code action returns.
// DocumentChanges entries that create, rename or delete files are refused.
type WorkspaceEdit struct {
	Changes         map[string][]TextEdit `json:"changes,omitempty"`
	DocumentChanges []json.RawMessage     `json:"documentChanges,omitempty"`
}

type textDocumentEdit struct {
	Kind         string `json:"kind"`
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Edits []TextEdit `json:"edits"`
}

// fileURI is the file: URI of an absolute path.
func fileURI(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// relOf maps a file: URI to a path relative to root, refusing anything else.
func relOf(root, uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("the server edits %q, not a file", uri)
	}
	p := filepath.FromSlash(u.Path)
	if real, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(real, filepath.Base(p))
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("the server edits %s, outside the workspace", p)
	}
	return filepath.ToSlash(rel), nil
}

// edits flattens a WorkspaceEdit into text edits per workspace path.
func (we *WorkspaceEdit) edits(root string) (map[string][]TextEdit, error) {
	out := map[string][]TextEdit{}
	for uri, es := range we.Changes {
		rel, err := relOf(root, uri)
		if err != nil {
			return nil, err
		}
		out[rel] = append(out[rel], es...)
	}
	for _, raw := range we.DocumentChanges {
		var d textDocumentEdit
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("bad documentChanges entry: %v", err)
		}
		if d.Kind != "" {
			return nil, fmt.Errorf("the edit would %s a file; a coding op only edits files in place", d.Kind)
		}
		rel, err := relOf(root, d.TextDocument.URI)
		if err != nil {
			return nil, err
		}
		out[rel] = append(out[rel], d.Edits...)
	}
	return out, nil
}

// offset converts an LSP position in src to a byte offset; a position past
// the end of a line is the line's end, as the protocol says.
func offset(src []byte, p Position) (int, error) {
	if p.Line < 0 || p.Character < 0 {
		return 0, fmt.Errorf("negative position %d:%d", p.Line, p.Character)
	}
	off := 0
	for l := 0; l < p.Line; l++ {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("line %d is past the end of the file", p.Line+1)
		}
		off += i + 1
	}
	units := 0
	for off < len(src) && src[off] != '\n' && units < p.Character {
		r, n := utf8.DecodeRune(src[off:])
		if r == '\r' && off+1 < len(src) && src[off+1] == '\n' {
			break
		}
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if units+u > p.Character {
			return 0, fmt.Errorf("position %d:%d splits a character", p.Line+1, p.Character)
		}
		units += u
		off += n
	}
	return off, nil
}

// Apply applies the text edits of we to files, returning the successor tree
// and the number of edits made. Every edited file must be in the snapshot;
// edits to one file must not overlap.
func Apply(root string, files core.Files, we *WorkspaceEdit) (core.Files, int, error) {
	per, err := we.edits(root)
	if err != nil {
		return nil, 0, err
	}
	next := files.Clone()
	n := 0
	for rel, es := range per {
		src, ok := files[rel]
		if !ok {
			return nil, 0, fmt.Errorf("the server edits %s, which is not in the workspace snapshot", rel)
		}
		type span struct {
			start, end int
			text       string
		}
		spans := make([]span, 0, len(es))
		for _, e := range es {
			s, err := offset(src, e.Range.Start)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %v", rel, err)
			}
			t, err := offset(src, e.Range.End)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %v", rel, err)
			}
			if t < s {
				return nil, 0, fmt.Errorf("%s: edit range ends before it starts", rel)
			}
			spans = append(spans, span{s, t, e.NewText})
		}
		sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
		var out []byte
		last := 0
		for _, sp := range spans {
			if sp.start < last {
				return nil, 0, fmt.Errorf("%s: the server's edits overlap", rel)
			}
			out = append(out, src[last:sp.start]...)
			out = append(out, sp.text...)
			last = sp.end
		}
		next[rel] = append(out, src[last:]...)
		n += len(spans)
	}
	return next, n, nil
}
