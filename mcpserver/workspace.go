package mcpserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// workspace confines the tools to one directory tree. Paths are resolved
// through symbolic links before use, so neither "../" nor a link can reach
// outside the root.
type workspace struct {
	root string // absolute, clean, symlink-resolved
}

func newWorkspace(dir string) (workspace, error) {
	if dir == "" {
		return workspace{}, errors.New("mcpserver: a workspace directory is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return workspace{}, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return workspace{}, fmt.Errorf("mcpserver: workspace: %w", err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return workspace{}, fmt.Errorf("mcpserver: workspace: %w", err)
	}
	if !fi.IsDir() {
		return workspace{}, fmt.Errorf("mcpserver: workspace %s is not a directory", root)
	}
	return workspace{root: root}, nil
}

// abs makes p absolute against the root, without resolving links: this is
// the path the gate is asked about (it resolves links itself).
func (w workspace) abs(p string) string {
	if p == "" {
		return w.root
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.root, p)
	}
	return filepath.Clean(p)
}

func (w workspace) contains(p string) bool {
	return p == w.root || strings.HasPrefix(p, w.root+string(filepath.Separator))
}

// resolve returns the real location of p: the longest existing prefix is
// resolved through symbolic links and the rest appended. It fails if p, or
// where it leads, lies outside the workspace.
func (w workspace) resolve(p string) (string, error) {
	a := w.abs(p)
	if !w.contains(a) {
		return "", fmt.Errorf("%s is outside the workspace %s", a, w.root)
	}
	rest := ""
	cur := a
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			real = filepath.Join(real, rest)
			if !w.contains(real) {
				return "", fmt.Errorf("%s leads through a symbolic link to %s, outside the workspace %s", a, real, w.root)
			}
			return real, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", fmt.Errorf("%s: no existing parent", a)
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// rel is p relative to the root, for display.
func (w workspace) rel(p string) string {
	r, err := filepath.Rel(w.root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

// sniff is how much of a file is inspected to tell text from binary.
const sniff = 8 << 10

// binary reports whether b, the start of a file, looks binary: a NUL byte,
// or bytes that are not UTF-8 (a rune cut at the end of b aside).
func binary(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			return len(b) >= utf8.UTFMax // an incomplete rune at the very end is fine
		}
		b = b[n:]
	}
	return false
}

// openRegular opens a regular file for reading, refusing directories,
// devices, pipes and sockets (which could block a read forever).
func openRegular(path string) (*os.File, os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory: use list_directory", path)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return f, fi, nil
}

// readText reads a range of lines of a text file: from line offset (1-based;
// 0 is the start) up to limit lines (0: to the end), stopping at maxBytes of
// output. A file over maxBytes can only be read by range.
func readText(path string, offset, limit int, maxBytes int64) (text string, truncated bool, err error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniff)
	if binary(head) {
		return "", false, fmt.Errorf("%s is a binary file (%d bytes); read_file returns text only", path, fi.Size())
	}
	if offset <= 0 && limit <= 0 && fi.Size() > maxBytes {
		return "", false, fmt.Errorf("%s is %d bytes, over the %d-byte read limit: read it in parts with offset and limit (lines)", path, fi.Size(), maxBytes)
	}
	var out strings.Builder
	line := 1
	for n := 0; limit <= 0 || n < limit; {
		s, err := br.ReadSlice('\n')
		if line >= offset {
			if int64(out.Len()+len(s)) > maxBytes {
				out.Write(s[:maxBytes-int64(out.Len())])
				return validUTF8(out.String()), true, nil
			}
			out.Write(s)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long line: its rest follows
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false, err
		}
		if line >= offset {
			n++
		}
		line++
	}
	return validUTF8(out.String()), false, nil
}

func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// writeAtomic replaces path with data through a temporary file in the same
// directory, keeping the mode of an existing file.
func writeAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".joule-write-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// editText replaces oldText with newText in path: exactly once unless all
// is set. It returns how many replacements were made.
func editText(path, oldText, newText string, all bool, maxBytes int64) (int, error) {
	if oldText == "" {
		return 0, errors.New("old_string is empty: to create or overwrite a file use write_file")
	}
	if oldText == newText {
		return 0, errors.New("old_string and new_string are the same: nothing to change")
	}
	f, fi, err := openRegular(path)
	if err != nil {
		return 0, err
	}
	if fi.Size() > maxBytes {
		f.Close()
		return 0, fmt.Errorf("%s is %d bytes, over the %d-byte edit limit", path, fi.Size(), maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	f.Close()
	if err != nil {
		return 0, err
	}
	if binary(b[:min(len(b), sniff)]) {
		return 0, fmt.Errorf("%s is a binary file; edit_file edits text only", path)
	}
	s := string(b)
	n := strings.Count(s, oldText)
	switch {
	case n == 0:
		return 0, fmt.Errorf("old_string was not found in %s (it must match exactly, whitespace included)", path)
	case n > 1 && !all:
		return 0, fmt.Errorf("old_string occurs %d times in %s: include more context to make it unique, or set replace_all", n, path)
	}
	if !all {
		s = strings.Replace(s, oldText, newText, 1)
	} else {
		s = strings.ReplaceAll(s, oldText, newText)
	}
	return n, writeAtomic(path, []byte(s))
}

// dirEntry is one line of list_directory.
type dirEntry struct {
	Name   string `json:"name"`
	Type   string `json:"type"` // file, dir, symlink, other
	Size   int64  `json:"size,omitempty"`
	Target string `json:"target,omitempty"` // a symlink's target
}

// listDir lists a directory, sorted by name, at most max entries.
func listDir(path string, max int) ([]dirEntry, bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	if !fi.IsDir() {
		return nil, false, fmt.Errorf("%s is not a directory", path)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, false, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	truncated := len(ents) > max
	if truncated {
		ents = ents[:max]
	}
	out := make([]dirEntry, 0, len(ents))
	for _, e := range ents {
		d := dirEntry{Name: e.Name()}
		switch t := e.Type(); {
		case t.IsDir():
			d.Type = "dir"
		case t&fs.ModeSymlink != 0:
			d.Type = "symlink"
			d.Target, _ = os.Readlink(filepath.Join(path, e.Name()))
		case t.IsRegular():
			d.Type = "file"
			if info, err := e.Info(); err == nil {
				d.Size = info.Size()
			}
		default:
			d.Type = "other"
		}
		out = append(out, d)
	}
	return out, truncated, nil
}
