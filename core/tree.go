package core

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"lukechampine.com/blake3"
)

// Tree is a tree state: each file's slash-separated relative path mapped to
// the BLAKE3-256 of its bytes. Its canonical CBOR is a map ordered
// length-first; the empty tree encodes as the single byte 0xa0.
type Tree map[string]ID

// ID returns the tree's content address.
func (t Tree) ID() ID {
	b, err := t.Canonical()
	if err != nil {
		// A Tree built by this package always encodes; a hand-built one with
		// a bad path still hashes what it holds.
		b, _ = encMode.Marshal(map[string]ID(t))
	}
	return Sum(b)
}

// Canonical returns the tree's canonical CBOR after checking every path.
func (t Tree) Canonical() ([]byte, error) {
	for p := range t {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
	}
	if t == nil {
		return []byte{0xa0}, nil
	}
	return encMode.Marshal(map[string]ID(t))
}

// DecodeTree decodes a canonical tree state.
func DecodeTree(b []byte) (Tree, error) {
	var t map[string]ID
	if err := decodeCanonical("tree", b, &t); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("tree: not a map")
	}
	for p := range t {
		if err := ValidatePath(p); err != nil {
			return nil, fmt.Errorf("tree: %w", err)
		}
	}
	return Tree(t), nil
}

// ValidatePath checks the tree-path rules: relative, slash-separated, valid
// UTF-8, no empty, "." or ".." segment. No Unicode normalisation is applied.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return errors.New("path is empty")
	case !utf8.ValidString(p):
		return fmt.Errorf("path %q is not valid UTF-8", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute; tree paths are relative", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q contains a NUL byte", p)
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return fmt.Errorf("path %q has an empty segment", p)
		case ".", "..":
			return fmt.Errorf("path %q has a %q segment", p, seg)
		}
	}
	return nil
}

// Files is a tree held in memory: path to content.
type Files map[string][]byte

// Tree returns the tree state of the files.
func (f Files) Tree() (Tree, error) { return f.TreeWith(nil) }

// SumFunc returns the BLAKE3-256 of the content of the file at path: Sum,
// or a cache's answer for contents it has hashed before (DirCache.Sum).
type SumFunc func(path string, content []byte) ID

// TreeWith returns the tree state of the files, each summed by sum (nil
// means Sum).
func (f Files) TreeWith(sum SumFunc) (Tree, error) {
	t := make(Tree, len(f))
	for p, b := range f {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
		if sum != nil {
			t[p] = sum(p, b)
		} else {
			t[p] = Sum(b)
		}
	}
	return t, nil
}

// Clone returns a shallow copy: the map is new, the contents are shared.
func (f Files) Clone() Files {
	c := make(Files, len(f))
	for p, b := range f {
		c[p] = b
	}
	return c
}

// Paths returns the paths in sorted order.
func (f Files) Paths() []string {
	ps := make([]string, 0, len(f))
	for p := range f {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// skipDir reports directories that are not part of a tree state.
func skipDir(name string) bool { return name == ".git" }

// TreeOfDir computes the tree state of the directory root: every regular
// file below it, .git directories skipped. Symbolic links and other
// non-regular files are not part of a tree state and are skipped.
func TreeOfDir(root string) (Tree, error) {
	t := Tree{}
	err := walkRegular(root, func(rel, abs string) error {
		h := blake3.New(32, nil)
		f, err := os.Open(abs)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("reading %s: %w", rel, err)
		}
		var id ID
		h.Sum(id[:0])
		t[rel] = id
		return nil
	})
	return t, err
}

// ReadDir reads every regular file below root into memory, .git skipped.
func ReadDir(root string) (Files, error) {
	files := Files{}
	err := walkRegular(root, func(rel, abs string) error {
		b, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		files[rel] = b
		return nil
	})
	return files, err
}

func walkRegular(root string, visit func(rel, abs string) error) error {
	info, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", root)
	}
	return filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if abs != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if err := ValidatePath(rel); err != nil {
			return fmt.Errorf("file %s cannot be part of a tree state: %w", abs, err)
		}
		return visit(rel, abs)
	})
}
