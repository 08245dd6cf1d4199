package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/joulehook/joule/core"
)

// Gopls is the Go language server, driven for the refactorings it offers
// as code actions (extract function, method, variable or constant, inline
// a call, organize imports). It is kept out of Servers: Go renames and
// look-ups are L1's own, and joule doctor lists gopls with the Go tools.
var Gopls = Server{Name: "gopls", Language: "Go", Exts: []string{".go"}, Checker: "go"}

// GoplsVersion is the gopls the tests pin (.ci/setup.d/40-acp.sh).
const GoplsVersion = "v0.23.0"

// The code action kinds L1 asks gopls for by name.
const (
	ExtractFunction = "refactor.extract.function"
	ExtractMethod   = "refactor.extract.method"
	ExtractVariable = "refactor.extract.variable"
	ExtractConstant = "refactor.extract.constant"
	InlineCall      = "refactor.inline.call"
)

// ActionNames are what each kind is called in messages.
var ActionNames = map[string]string{
	ExtractFunction: "extract function", ExtractMethod: "extract method",
	ExtractVariable: "extract variable", ExtractConstant: "extract constant",
	InlineCall: "inline call",
}

// fresh are the names gopls gives what an extraction declares.
var fresh = map[string]*regexp.Regexp{
	ExtractFunction: regexp.MustCompile(`\bnewFunction\d*\b`),
	ExtractMethod:   regexp.MustCompile(`\bnewMethod\d*\b`),
	ExtractVariable: regexp.MustCompile(`\bnewVar\d*\b`),
	ExtractConstant: regexp.MustCompile(`\bnewConst\d*\b`),
}

// Action is one gopls code action asked for by kind over a span of a Go
// file. Lines are 1-based, columns 1-based bytes; EndCol is exclusive (the
// column just after the span, as gopls counts), 0 meaning the end of
// EndLine. For an inline call the span is the position of the call.
type Action struct {
	Kind            string
	File            string
	Line, Col       int
	EndLine, EndCol int
	Name            string // what to call the function or variable extracted; "" keeps gopls's name
	Callee          string // for an inline call: the function the call must call, "" for any
}

// Where renders the span as a request names it.
func (a Action) Where() string {
	switch {
	case a.EndLine == 0:
		return fmt.Sprintf("%s:%d:%d", a.File, a.Line, a.Col)
	case a.Col == 1 && a.EndCol == 0:
		return fmt.Sprintf("lines %d-%d of %s", a.Line, a.EndLine, a.File)
	}
	return fmt.Sprintf("%s:%d:%d-%d:%d", a.File, a.Line, a.Col, a.EndLine, a.EndCol)
}

// CodeAction asks gopls for the code action a.Kind over a's span of the
// snapshot, takes its edit (from the action, from codeAction/resolve, or
// from the workspace/applyEdit that executing its command makes gopls
// send), renames what it declares to a.Name through gopls when one is
// given, and checks that the packages it touches vet as well as before.
// Nothing is written to disk; an action gopls does not offer, or offers
// more than once, is refused.
func CodeAction(ctx context.Context, root string, files core.Files, a Action) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	t0 := time.Now()
	what := ActionNames[a.Kind]
	if what == "" {
		return nil, fmt.Errorf("code action %q is not one L1 asks gopls for", a.Kind)
	}
	rel := a.File
	src, ok := files[rel]
	if !ok {
		return nil, fmt.Errorf("%s: %s is not in the workspace", what, rel)
	}
	if !strings.HasSuffix(rel, ".go") {
		return nil, fmt.Errorf("%s: %s is not a Go file; gopls refactors Go only", what, rel)
	}
	if a.Name != "" && fresh[a.Kind] == nil {
		return nil, fmt.Errorf("%s declares nothing to name %s", what, a.Name)
	}
	start, err := position(src, a.Line, a.Col)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", what, rel, err)
	}
	rng := Range{Start: start, End: start}
	if a.EndLine > 0 {
		endCol := a.EndCol
		if endCol == 0 {
			lines := bytes.Split(src, []byte("\n"))
			if a.EndLine > len(lines) {
				return nil, fmt.Errorf("%s: %s: line %d is outside the file (%d lines)", what, rel, a.EndLine, len(lines))
			}
			endCol = len(bytes.TrimSuffix(lines[a.EndLine-1], []byte("\r"))) + 1
		}
		if rng.End, err = position(src, a.EndLine, endCol); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", what, rel, err)
		}
		if rng.End.Line < rng.Start.Line || rng.End.Line == rng.Start.Line && rng.End.Character <= rng.Start.Character {
			return nil, fmt.Errorf("%s: %s ends before it starts", what, a.Where())
		}
	}
	s, release, err := Default.acquire(ctx, Gopls, root)
	if err != nil {
		return nil, err
	}
	defer func() { release(ctx.Err() != nil) }()
	if err := s.syncGo(files, rel); err != nil {
		return nil, err
	}
	uri := fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))
	t1 := time.Now()
	var actions []codeAction
	err = s.c.call(ctx, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": uri},
		"range":        rng,
		"context":      map[string]any{"diagnostics": []any{}, "only": []string{a.Kind}, "triggerKind": 1},
	}, &actions)
	if err != nil {
		return nil, fmt.Errorf("gopls refuses to %s at %s: %v", what, a.Where(), err)
	}
	var picked []codeAction
	for _, ca := range actions {
		if ca.Kind == a.Kind {
			picked = append(picked, ca)
		}
	}
	switch {
	case len(picked) == 0:
		return nil, fmt.Errorf("gopls offers no %s at %s", what, a.Where())
	case len(picked) > 1:
		return nil, fmt.Errorf("gopls offers %d different %s actions at %s; name a narrower span", len(picked), what, a.Where())
	}
	ca := picked[0]
	if a.Kind == InlineCall && a.Callee != "" && ca.Title != "Inline call to "+a.Callee {
		return nil, fmt.Errorf("the call at %s is not a call of %s (gopls offers %q)", a.Where(), a.Callee, ca.Title)
	}
	next, n, err := s.actionEdit(ctx, files, ca)
	if err != nil {
		return nil, fmt.Errorf("gopls: %s at %s: %v", what, a.Where(), err)
	}
	server := time.Since(t1)
	summary := fmt.Sprintf("%s at %s through gopls (%s): %d edit(s) in %d file(s)", what, a.Where(), ca.Title, n, changed(files, next))
	if a.Name != "" {
		t2 := time.Now()
		next, err = s.renameFresh(ctx, files, next, rel, fresh[a.Kind], a.Name)
		if err != nil {
			return nil, fmt.Errorf("gopls: %s at %s: %v", what, a.Where(), err)
		}
		server += time.Since(t2)
		summary += ", named " + a.Name
	}
	if err := s.checkEdit(ctx, files, next); err != nil {
		return nil, err
	}
	return &Result{Next: next, Server: server, Total: time.Since(t0), Summary: summary}, nil
}

type codeAction struct {
	Title   string           `json:"title"`
	Kind    string           `json:"kind"`
	Edit    *WorkspaceEdit   `json:"edit,omitempty"`
	Command *command         `json:"command,omitempty"`
	Data    *json.RawMessage `json:"data,omitempty"`
	// Disabled is set when gopls declines the action, with a reason.
	Disabled *struct {
		Reason string `json:"reason"`
	} `json:"disabled,omitempty"`
}

type command struct {
	Title     string            `json:"title"`
	Command   string            `json:"command"`
	Arguments []json.RawMessage `json:"arguments,omitempty"`
}

// actionEdit returns the successor tree of one code action: its edit, the
// edit codeAction/resolve gives it, or the workspace/applyEdit its command
// makes the server send (answered applied only once applied to the tree).
func (s *session) actionEdit(ctx context.Context, files core.Files, ca codeAction) (core.Files, int, error) {
	if ca.Disabled != nil {
		return nil, 0, errors.New(ca.Disabled.Reason)
	}
	if ca.Edit == nil && ca.Command == nil && ca.Data != nil {
		var res codeAction
		if err := s.c.call(ctx, "codeAction/resolve", ca, &res); err != nil {
			return nil, 0, err
		}
		ca = res
	}
	if ca.Edit != nil {
		return Apply(s.root, files, ca.Edit)
	}
	if ca.Command == nil {
		return nil, 0, errors.New("the action carries neither an edit nor a command")
	}
	var next core.Files
	n := 0
	s.capture = func(we *WorkspaceEdit) error {
		if next != nil {
			return errors.New("joule takes one edit per command")
		}
		nx, k, err := Apply(s.root, files, we)
		if err != nil {
			return err
		}
		next, n = nx, k
		return nil
	}
	defer func() { s.capture = nil }()
	err := s.c.call(ctx, "workspace/executeCommand", map[string]any{"command": ca.Command.Command, "arguments": ca.Command.Arguments}, nil)
	if err != nil {
		return nil, 0, err
	}
	if next == nil {
		return nil, 0, fmt.Errorf("its command %s sent no edit", ca.Command.Command)
	}
	return next, n, nil
}

// renameFresh renames the name gopls gave what it extracted (the one of
// fresh's names that next has and prior lacks) to name, through gopls on
// next's content of rel.
func (s *session) renameFresh(ctx context.Context, prior, next core.Files, rel string, fresh *regexp.Regexp, name string) (core.Files, error) {
	src := next[rel]
	var at []int
	for _, m := range fresh.FindAllIndex(src, -1) {
		if !bytes.Contains(prior[rel], src[m[0]:m[1]]) {
			at = m
			break
		}
	}
	if at == nil {
		return nil, errors.New("cannot find the name it gave what it extracted")
	}
	if bytes.Equal(src[at[0]:at[1]], []byte(name)) {
		return next, nil
	}
	uri := fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err := s.put(rel, "go", src); err != nil {
		return nil, err
	}
	line := bytes.Count(src[:at[0]], []byte("\n"))
	ls := bytes.LastIndexByte(src[:at[0]], '\n') + 1
	pos, err := position(src, line+1, at[0]-ls+1)
	if err != nil {
		return nil, err
	}
	var we *WorkspaceEdit
	if err := s.c.call(ctx, "textDocument/rename", map[string]any{
		"textDocument": map[string]any{"uri": uri}, "position": pos, "newName": name,
	}, &we); err != nil {
		return nil, fmt.Errorf("naming it %s: %v", name, err)
	}
	if we == nil {
		return nil, fmt.Errorf("naming it %s: gopls renames nothing", name)
	}
	out, _, err := Apply(s.root, next, we)
	return out, err
}

// syncGo opens rel, and every Go file whose snapshot differs from the disk
// (an editor's unsaved buffers), in gopls: it reads the rest from disk.
//
// It reads a file from disk only when its stat changed since the last sync
// found the disk equal to that sync's snapshot (s.stats): an unchanged stat
// means the disk still holds s.disk's bytes, so comparing the snapshot with
// those says whether the disk equals it, without a read.
func (s *session) syncGo(files core.Files, rel string) error {
	n := 0
	var events []any
	stats := make(map[string]fileStat, len(s.stats))
	now := time.Now()
	for _, p := range files.Paths() {
		if !strings.HasSuffix(p, ".go") || ignored(p) {
			continue
		}
		abs := filepath.Join(s.root, filepath.FromSlash(p))
		if _, open := s.docs[p]; p != rel && !open {
			prior, seen := s.disk[p]
			st, stErr := statFile(abs)
			same := false
			if last, ok := s.stats[p]; ok && stErr == nil && st == last && seen {
				// the disk holds prior: it equals the snapshot when prior does
				same = sameBytes(prior, files[p])
				if same {
					stats[p] = st
					continue
				}
			} else if stErr == nil {
				disk, err := readDisk(abs)
				same = err == nil && bytes.Equal(disk, files[p])
			}
			if same {
				// gopls reads it from disk; a reused session is told
				// when the disk has changed since it last read it
				if s.disk != nil && (!seen || !sameBytes(prior, files[p])) {
					typ := 2 // changed
					if !seen {
						typ = 1 // created
					}
					events = append(events, map[string]any{"uri": fileURI(abs), "type": typ})
				}
				if st.settled(now) {
					stats[p] = st
				}
				continue
			}
		}
		if n++; n > maxOpen {
			return fmt.Errorf("more than %d Go files differ from the disk: too many to open in gopls", maxOpen)
		}
		if err := s.put(p, "go", files[p]); err != nil {
			return err
		}
	}
	for p := range s.disk {
		if _, ok := files[p]; !ok && strings.HasSuffix(p, ".go") {
			events = append(events, map[string]any{"uri": fileURI(filepath.Join(s.root, filepath.FromSlash(p))), "type": 3})
		}
	}
	s.disk, s.stats = files, stats
	if len(events) > 0 {
		s.diskChanges++
		if err := s.c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": events}); err != nil {
			return err
		}
	}
	s.noteConfig(files)
	return s.drop(func(rel string) bool { _, ok := files[rel]; return ok })
}

// readDisk reads a file syncGo cannot tell unchanged (a test counts them).
var readDisk = os.ReadFile

// fileStat is what syncGo compares to tell a file unchanged on disk
// without reading it.
type fileStat struct {
	size, mtime, ctime int64
	ino                uint64
	mode               os.FileMode
}

func statFile(abs string) (fileStat, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return fileStat{}, err
	}
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	st.ino, st.ctime = changeOf(fi)
	return st, nil
}

// statSlack is how recent a change may be for its stat to be trusted: a
// write within the clock's granularity of the last one can keep size and
// times, so a file changed this recently is read again next time.
var statSlack = 2 * time.Second

func (st fileStat) settled(now time.Time) bool {
	t := now.Add(-statSlack).UnixNano()
	return st.mtime < t && (st.ctime == 0 || st.ctime < t)
}

var analyzers struct {
	once sync.Once
	off  map[string]bool
}

// goplsAnalyzers maps each analyzer the gopls at bin runs by default (as
// its api-json lists them) to false, but one; nil when it cannot say.
func goplsAnalyzers(bin string) map[string]bool {
	analyzers.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "api-json").Output()
		if err != nil {
			return
		}
		var api struct {
			Analyzers []struct {
				Name    string `json:"Name"`
				Default bool   `json:"Default"`
			} `json:"Analyzers"`
		}
		if json.Unmarshal(out, &api) != nil {
			return
		}
		off := map[string]bool{}
		for _, a := range api.Analyzers {
			// one cheap syntactic analyzer stays on: gopls v0.23 panics
			// when it has none to run ("root analysisNode has nil actions")
			if a.Default && a.Name != "directive" {
				off[a.Name] = false
			}
		}
		analyzers.off = off
	})
	return analyzers.off
}
