package lsp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/joulehook/joule/core"
)

// ErrNoServer is returned when no language server serves a file, or the one
// that would is not installed.
var ErrNoServer = errors.New("no language server")

// Result is a successor tree a server computed, checked.
type Result struct {
	Next    core.Files
	Summary string
	// Server is how long the server took to answer the edit request itself
	// (from sending it to its response), Total the whole call: starting the
	// server, the request, applying it and the check.
	Server, Total time.Duration
	// Edits is how many text edits the server's edit made; Old is the name
	// a rename replaced.
	Edits int
	Old   string
}

// Timeout bounds one request (starting the server, the edit, both type
// checks) when the caller's context does not end sooner: a server that
// hangs makes L1 miss, it does not hold the cascade.
var Timeout = 3 * time.Minute

// session is one server started for one request against one workspace.
type session struct {
	srv  Server
	root string // absolute, symlinks resolved
	c    *conn

	// capture, when set, takes a workspace/applyEdit the server sends
	// while a command runs; an error declines it.
	capture func(*WorkspaceEdit) error

	// docs are the documents open in the server, with the text it has; a
	// reused session sends only what changed since.
	docs map[string]doc
	// disk is the snapshot gopls last read unopened files of; files that
	// differ from it since are announced as changed on disk.
	disk core.Files
	// stats are the stats of the unopened files whose disk content was
	// disk's when syncGo last looked: unchanged, they need no read.
	stats map[string]fileStat
	// diskChanges counts the announcements of disk changes: the state the
	// server checks is its open documents and this (fingerprint).
	diskChanges int
	// config is the fingerprint of the snapshot's project files that no
	// document holds (go.mod, tsconfig.json, pyrightconfig.json …): a
	// server reads them itself, and its errors depend on them.
	config [sha256.Size]byte
	// diags are the errors the server reported, per state (diagnose).
	diags diagCache
}

type doc struct {
	version int
	text    []byte
	sum     [sha256.Size]byte // of text, for the state's fingerprint
}

// put makes the server's copy of rel the given text: didOpen the first
// time, didChange (the full text) when it differs.
func (s *session) put(rel, languageID string, text []byte) error {
	if s.docs == nil {
		s.docs = map[string]doc{}
	}
	uri := fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))
	d, ok := s.docs[rel]
	if !ok {
		s.docs[rel] = doc{1, text, sha256.Sum256(text)}
		return s.c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": uri, "languageId": languageID, "version": 1, "text": string(text),
		}})
	}
	if sameBytes(d.text, text) {
		return nil
	}
	s.docs[rel] = doc{d.version + 1, text, sha256.Sum256(text)}
	return s.c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": d.version + 1},
		"contentChanges": []any{map[string]any{"text": string(text)}},
	})
}

// drop closes the documents open in the server that keep returns false for.
func (s *session) drop(keep func(rel string) bool) error {
	for rel := range s.docs {
		if keep(rel) {
			continue
		}
		delete(s.docs, rel)
		err := s.c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{
			"uri": fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))}})
		if err != nil {
			return err
		}
	}
	return nil
}

// sameBytes is bytes.Equal with a shortcut for the same backing array, the
// common case of a file unchanged between two snapshots.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return bytes.Equal(a, b)
}

// ResolveEdits makes the client announce codeAction/resolve support for
// edits, so that gopls returns a refactoring's edit on resolve rather than
// as a command that sends it back with workspace/applyEdit; both ways are
// handled (tests turn it off to drive the second).
var ResolveEdits = true

func codeActionCaps() map[string]any {
	caps := map[string]any{
		"codeActionLiteralSupport": map[string]any{
			"codeActionKind": map[string]any{"valueSet": []string{"source", "source.organizeImports", "refactor", "refactor.extract", "refactor.inline"}},
		},
	}
	if ResolveEdits {
		caps["dataSupport"] = true
		caps["resolveSupport"] = map[string]any{"properties": []string{"edit"}}
	}
	return caps
}

// openServer starts srv in root and initializes it.
func openServer(ctx context.Context, srv Server, root string) (*session, error) {
	bin, err := Look(srv.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s (for %s) is not installed; see docs/acp.md", ErrNoServer, srv.Name, srv.Language)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	c, err := start(append([]string{bin}, srv.Args...), real)
	if err != nil {
		return nil, err
	}
	s := &session{srv: srv, root: real, c: c}
	c.onRequest = func(method string, params json.RawMessage) (any, error) {
		switch method {
		case "workspace/configuration":
			var p struct {
				Items []json.RawMessage `json:"items"`
			}
			_ = json.Unmarshal(params, &p)
			return make([]any, len(p.Items)), nil
		case "workspace/applyEdit":
			if s.capture != nil {
				// gopls sends the edit of a command it executes: it
				// becomes the request's successor tree, and the server
				// is told it was applied only once it is.
				var p struct {
					Edit WorkspaceEdit `json:"edit"`
				}
				if err := json.Unmarshal(params, &p); err != nil {
					return map[string]any{"applied": false, "failureReason": "bad applyEdit params: " + err.Error()}, nil
				}
				if err := s.capture(&p.Edit); err != nil {
					return map[string]any{"applied": false, "failureReason": err.Error()}, nil
				}
				return map[string]any{"applied": true}, nil
			}
			// pyright sends the edit its command returned; the response
			// already holds it, and nothing is written here.
			return map[string]any{"applied": false, "failureReason": "joule applies the command's result itself"}, nil
		case "client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create", "window/showMessageRequest",
			"workspace/diagnostic/refresh": // pyright's, after a change: the check asks again anyway
			return nil, nil
		}
		return nil, fmt.Errorf("unsupported request %s", method)
	}
	uri := fileURI(real)
	init := map[string]any{
		"processId":  os.Getpid(),
		"clientInfo": map[string]any{"name": "joule"},
		"rootUri":    uri,
		"rootPath":   real,
		"workspaceFolders": []any{
			map[string]any{"uri": uri, "name": filepath.Base(real)},
		},
		"capabilities": map[string]any{
			"general": map[string]any{"positionEncodings": []string{"utf-16"}},
			"workspace": map[string]any{
				"applyEdit":        true,
				"configuration":    true,
				"workspaceFolders": true,
				"workspaceEdit":    map[string]any{"documentChanges": true},
			},
			"textDocument": map[string]any{
				"synchronization": map[string]any{"didSave": false},
				"rename":          map[string]any{"prepareSupport": false},
				"codeAction":      codeActionCaps(),
				"documentSymbol":  map[string]any{"hierarchicalDocumentSymbolSupport": true},
				// pull diagnostics (checkEdit asks textDocument/diagnostic).
				// Registered dynamically, pyright's: it then analyzes only
				// what it is asked about, where a client that cannot
				// register has it re-check every open file after each
				// change, in the thread that answers the check, for nothing
				// the check reads
				"diagnostic": map[string]any{"dynamicRegistration": srv.Name == "pyright-langserver", "relatedDocumentSupport": false},
			},
		},
	}
	if srv.Name == Gopls.Name {
		// gopls answers textDocument/diagnostic only when asked to
		// (checkEdit), which reads its errors alone: the analyzers it runs
		// besides are turned off, since they cost more than the type check
		opts := map[string]any{"pullDiagnostics": true}
		if off := goplsAnalyzers(bin); len(off) > 0 {
			opts["analyses"] = off
		}
		init["initializationOptions"] = opts
	}
	if err := c.call(ctx, "initialize", init, nil); err != nil {
		c.close()
		return nil, fmt.Errorf("%s: %w", srv.Name, err)
	}
	if err := c.notify("initialized", map[string]any{}); err != nil {
		c.close()
		return nil, err
	}
	return s, nil
}

func (s *session) close() { s.c.close() }

// sync opens every file of the server's language in the snapshot, with the
// snapshot's content: a server then sees an editor's unsaved buffers, and
// typescript-language-server (which otherwise renames only in the projects
// of open files) finds every use.
func (s *session) sync(files core.Files) error {
	n := 0
	for _, p := range files.Paths() {
		if sv, ok := For(p); !ok || sv.Name != s.srv.Name || ignored(p) {
			continue
		}
		if n++; n > maxOpen {
			return fmt.Errorf("more than %d %s files: too many to open in %s", maxOpen, s.srv.Language, s.srv.Name)
		}
		if err := s.put(p, languageID(p), files[p]); err != nil {
			return err
		}
	}
	s.noteConfig(files)
	return s.drop(func(rel string) bool { _, ok := files[rel]; return ok })
}

// maxOpen bounds the files one request opens in a server.
const maxOpen = 5000

// position converts a 1-based line and byte column in src to an LSP position.
func position(src []byte, line, col int) (Position, error) {
	lines := bytes.Split(src, []byte("\n"))
	if line < 1 || line > len(lines) {
		return Position{}, fmt.Errorf("line %d is outside the file (%d lines)", line, len(lines))
	}
	l := bytes.TrimSuffix(lines[line-1], []byte("\r"))
	if col < 1 || col > len(l)+1 {
		return Position{}, fmt.Errorf("column %d is outside line %d (%d bytes)", col, line, len(l))
	}
	prefix := l[:col-1]
	if !utf8.Valid(prefix) {
		return Position{}, fmt.Errorf("column %d of line %d splits a character", col, line)
	}
	units := 0
	for _, r := range string(prefix) {
		units++
		if r >= 0x10000 {
			units++
		}
	}
	return Position{Line: line - 1, Character: units}, nil
}

// Rename asks the language server for rel (gopls for a Go file) to rename
// the symbol at line:col (1-based, the column in bytes) of the snapshot to
// to, applies its WorkspaceEdit to files, and checks on the server that no
// file the edit can affect has an error it had not (checkEdit). Nothing is
// written to disk; a server that refuses, errors or whose edit breaks the
// type check makes it return an error.
func Rename(ctx context.Context, root string, files core.Files, rel string, line, col int, to string) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	t0 := time.Now()
	src, ok := files[rel]
	if !ok {
		return nil, fmt.Errorf("rename: %s is not in the workspace", rel)
	}
	if to == "" || strings.ContainsAny(to, " \t\r\n") {
		return nil, fmt.Errorf("rename: %q is not a name", to)
	}
	pos, err := position(src, line, col)
	if err != nil {
		return nil, fmt.Errorf("rename: %s: %v", rel, err)
	}
	goFile := strings.HasSuffix(rel, ".go")
	srv, ok := For(rel)
	if goFile {
		srv, ok = Gopls, true
	}
	if !ok {
		return nil, fmt.Errorf("%w for %s", ErrNoServer, rel)
	}
	s, release, err := Default.acquire(ctx, srv, root)
	if err != nil {
		return nil, err
	}
	defer func() { release(ctx.Err() != nil) }()
	if goFile {
		err = s.syncGo(files, rel)
	} else {
		err = s.sync(files)
	}
	if err != nil {
		return nil, err
	}
	next, server, n, err := s.renameAt(ctx, files, rel, pos, fmt.Sprintf("%s:%d:%d", rel, line, col), to)
	if err != nil {
		return nil, err
	}
	return &Result{Next: next, Server: server, Total: time.Since(t0), Edits: n, Old: wordAt(src, pos),
		Summary: fmt.Sprintf("renamed the symbol at %s:%d:%d to %s through %s: %d edit(s) in %d file(s)", rel, line, col, to, s.srv.Name, n, changed(files, next))}, nil
}

// wordAt is the identifier at pos of src, "" when there is none.
func wordAt(src []byte, pos Position) string {
	off, err := offset(src, pos)
	if err != nil {
		return ""
	}
	word := func(r rune) bool { return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	end := off
	for end < len(src) {
		r, n := utf8.DecodeRune(src[end:])
		if !word(r) {
			break
		}
		end += n
	}
	start := off
	for start > 0 {
		r, n := utf8.DecodeLastRune(src[:start])
		if !word(r) {
			break
		}
		start -= n
	}
	return string(src[start:end])
}

// renameAt renames the symbol at pos of rel to to, applies the server's
// edit to files and checks it; at is the position as the request gave it.
func (s *session) renameAt(ctx context.Context, files core.Files, rel string, pos Position, at, to string) (core.Files, time.Duration, int, error) {
	var we *WorkspaceEdit
	t1 := time.Now()
	err := s.c.call(ctx, "textDocument/rename", map[string]any{
		"textDocument": map[string]any{"uri": fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))},
		"position":     pos,
		"newName":      to,
	}, &we)
	server := time.Since(t1)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s refuses the rename at %s: %v", s.srv.Name, at, err)
	}
	if we == nil || len(we.Changes)+len(we.DocumentChanges) == 0 {
		return nil, 0, 0, fmt.Errorf("%s finds nothing to rename at %s", s.srv.Name, at)
	}
	next, n, err := Apply(s.root, files, we)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %v", s.srv.Name, err)
	}
	if err := s.checkEdit(ctx, files, next, wordAt(files[rel], pos)); err != nil {
		return nil, 0, 0, err
	}
	return next, server, n, nil
}

// OrganizeImports asks the language server for rel to organize its imports
// (typescript-language-server's source.organizeImports code action,
// pyright's pyright.organizeimports command), applied and checked as Rename
// is.
func OrganizeImports(ctx context.Context, root string, files core.Files, rel string) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	t0 := time.Now()
	src, ok := files[rel]
	if !ok {
		return nil, fmt.Errorf("organize imports: %s is not in the workspace", rel)
	}
	goFile := strings.HasSuffix(rel, ".go")
	srv, ok := For(rel)
	if goFile {
		srv, ok = Gopls, true
	}
	if !ok {
		return nil, fmt.Errorf("%w for %s", ErrNoServer, rel)
	}
	s, release, err := Default.acquire(ctx, srv, root)
	if err != nil {
		return nil, err
	}
	defer func() { release(ctx.Err() != nil) }()
	if goFile {
		err = s.syncGo(files, rel)
	} else {
		err = s.sync(files)
	}
	if err != nil {
		return nil, err
	}
	uri := fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))
	var we *WorkspaceEdit
	t1 := time.Now()
	switch s.srv.Name {
	case "pyright-langserver":
		err = s.c.call(ctx, "workspace/executeCommand", map[string]any{"command": "pyright.organizeimports", "arguments": []string{uri}}, &we)
	default:
		end, _ := offsetEnd(src)
		var actions []struct {
			Kind string         `json:"kind"`
			Edit *WorkspaceEdit `json:"edit"`
		}
		err = s.c.call(ctx, "textDocument/codeAction", map[string]any{
			"textDocument": map[string]any{"uri": uri},
			"range":        Range{End: end},
			"context":      map[string]any{"diagnostics": []any{}, "only": []string{"source.organizeImports"}},
		}, &actions)
		for _, a := range actions {
			if a.Kind == "source.organizeImports" || strings.HasPrefix(a.Kind, "source.organizeImports.") {
				if a.Edit == nil {
					err = fmt.Errorf("its organize-imports action carries no edit")
				}
				we = a.Edit
				break
			}
		}
	}
	server := time.Since(t1)
	if err != nil {
		return nil, fmt.Errorf("%s refuses to organize the imports of %s: %v", s.srv.Name, rel, err)
	}
	if we == nil && goFile {
		we = &WorkspaceEdit{} // gopls offers no action when the imports are in order
	}
	if we == nil {
		return nil, fmt.Errorf("%s offers no organize-imports edit for %s", s.srv.Name, rel)
	}
	next, n, err := Apply(s.root, files, we)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.srv.Name, err)
	}
	if changed(files, next) > 0 {
		if err := s.checkEdit(ctx, files, next); err != nil {
			return nil, err
		}
	}
	return &Result{Next: next, Server: server, Total: time.Since(t0),
		Summary: fmt.Sprintf("organized the imports of %s through %s: %d edit(s)", rel, s.srv.Name, n)}, nil
}

// offsetEnd is the LSP position of the end of src.
func offsetEnd(src []byte) (Position, error) {
	i := bytes.LastIndexByte(src, '\n')
	last := src[i+1:]
	units := 0
	for _, r := range string(last) {
		units++
		if r >= 0x10000 {
			units++
		}
	}
	return Position{Line: bytes.Count(src, []byte("\n")), Character: units}, nil
}

func changed(prior, next core.Files) int {
	n := 0
	for p, b := range next {
		if !bytes.Equal(prior[p], b) {
			n++
		}
	}
	return n
}

// ServerRename sends srv's own textDocument/rename for the symbol at
// line:col of rel on the pooled server of root (started or reused, synced
// with files) and returns how long the request took, its edit discarded:
// the baseline benchmarks hold L1's renames against.
func ServerRename(ctx context.Context, srv Server, root string, files core.Files, rel string, line, col int, to string) (time.Duration, error) {
	pos, err := position(files[rel], line, col)
	if err != nil {
		return 0, err
	}
	s, release, err := Default.acquire(ctx, srv, root)
	if err != nil {
		return 0, err
	}
	defer func() { release(ctx.Err() != nil) }()
	if srv.Name == Gopls.Name {
		err = s.syncGo(files, rel)
	} else {
		err = s.sync(files)
	}
	if err != nil {
		return 0, err
	}
	var we *WorkspaceEdit
	t0 := time.Now()
	err = s.c.call(ctx, "textDocument/rename", map[string]any{
		"textDocument": map[string]any{"uri": fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))},
		"position":     pos,
		"newName":      to,
	}, &we)
	d := time.Since(t0)
	if err == nil && (we == nil || len(we.Changes)+len(we.DocumentChanges) == 0) {
		err = fmt.Errorf("%s finds nothing to rename at %s:%d:%d", srv.Name, rel, line, col)
	}
	return d, err
}
