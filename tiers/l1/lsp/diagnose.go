package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/joulehook/joule/core"
)

// An edit is checked on the resident server itself: the server is asked
// for the errors of the files the edit can affect as they are (the
// snapshot), is told the edit (didChange), and asked again; an error after
// that was not there before refuses the edit. Which errors, not how many:
// fixing one and adding another is a regression. The server re-checks only
// what changed (gopls and tsserver cache what they type-checked, pyright
// re-evaluates the changed files and their dependants), so this costs a
// fraction of type-checking two copies of the project, which Check does
// and which remains the fallback for a server that cannot say.
//
// The files asked about are the ones the edit changes and the ones that
// still hold a renamed name as a word afterwards: a reference the server
// missed is an error in a file that holds the old name.

// errNoDiagnose is returned by diagnose when the server cannot report a
// file's errors on request.
var errNoDiagnose = errors.New("the server does not report errors on request")

// checkEdit refuses next when the files it changes, or those of srv's
// language that hold one of words afterwards, have an error they had not
// in prior. The server holds prior's content on entry (sync) and next's on
// return. A server that cannot report errors on request falls back to
// Check.
func (s *session) checkEdit(ctx context.Context, prior, next core.Files, words ...string) error {
	rels := s.affected(prior, next, words)
	if len(rels) == 0 {
		return nil
	}
	for _, p := range rels {
		// a document opened on the way (an intermediate edit) goes back
		// to prior's content; the others are prior's on disk (sync)
		if _, open := s.docs[p]; open {
			if err := s.put(p, languageID(p), prior[p]); err != nil {
				return err
			}
		}
	}
	before, err := s.diagnose(ctx, rels)
	if errors.Is(err, errNoDiagnose) {
		return Check(ctx, s.srv, s.root, prior, next)
	}
	if err != nil {
		return err
	}
	for _, p := range rels {
		if !bytes.Equal(prior[p], next[p]) {
			if err := s.put(p, languageID(p), next[p]); err != nil {
				return err
			}
		}
	}
	after, err := s.diagnose(ctx, rels)
	if err != nil {
		return err
	}
	if added := newErrors(before, after); len(added) > 0 {
		return fmt.Errorf("%w: %s reports %d error(s) it did not before (%d before, %d after): %s", ErrRegression, s.srv.Name, len(added), len(before), len(after), added[0])
	}
	return nil
}

// serves reports whether the session's server serves the workspace file rel.
func (s *session) serves(rel string) bool {
	if ignored(rel) {
		return false
	}
	if s.srv.Name == Gopls.Name {
		return strings.HasSuffix(rel, ".go")
	}
	sv, ok := For(rel)
	return ok && sv.Name == s.srv.Name
}

// affected are the files of the server's language next changes, then
// those that hold one of words as a word in next, sorted.
func (s *session) affected(prior, next core.Files, words []string) []string {
	type word struct {
		b  []byte
		re *regexp.Regexp
	}
	var ws []word
	for _, w := range words {
		if w != "" {
			ws = append(ws, word{[]byte(w), regexp.MustCompile(`(^|[^\p{L}\p{N}_$])` + regexp.QuoteMeta(w) + `($|[^\p{L}\p{N}_$])`)})
		}
	}
	var out []string
	for _, p := range next.Paths() {
		if !s.serves(p) {
			continue
		}
		hit := !bytes.Equal(prior[p], next[p])
		for _, w := range ws {
			if hit {
				break
			}
			hit = bytes.Contains(next[p], w.b) && w.re.Match(next[p])
		}
		if hit {
			out = append(out, p)
		}
	}
	return out
}

// diagnostic is the part of an LSP diagnostic the check reads.
type diagnostic struct {
	Severity int    `json:"severity"` // 1: error
	Message  string `json:"message"`
}

// diagnose lists the errors the server reports for rels in its current
// state, as "FILE: MESSAGE" (no position: an edit moves them).
func (s *session) diagnose(ctx context.Context, rels []string) ([]string, error) {
	var out []string
	for _, rel := range rels {
		uri := fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))
		var ds []diagnostic
		var err error
		if s.srv.Name == "typescript-language-server" {
			ds, err = s.tsDiagnostics(ctx, uri)
		} else {
			// gopls and pyright answer textDocument/diagnostic (pull)
			var rep struct {
				Kind  string       `json:"kind"`
				Items []diagnostic `json:"items"`
			}
			err = s.c.call(ctx, "textDocument/diagnostic", map[string]any{"textDocument": map[string]any{"uri": uri}}, &rep)
			var rpc *RPCError
			if errors.As(err, &rpc) && rpc.Code == -32601 { // method not found
				return nil, errNoDiagnose
			}
			if err == nil && rep.Kind != "full" && rep.Kind != "" { // gopls leaves it out
				err = fmt.Errorf("a %q report, not a full one", rep.Kind)
			}
			ds = rep.Items
		}
		if err != nil {
			return nil, fmt.Errorf("%s: the errors of %s: %v", s.srv.Name, rel, err)
		}
		for _, d := range ds {
			if d.Severity == 1 {
				out = append(out, rel+": "+firstLine(d.Message))
			}
		}
	}
	return out, nil
}

// tsDiagnostics asks tsserver, through typescript-language-server's
// typescript.tsserverRequest command, for the syntactic and semantic
// errors of one open file: synchronous requests, where the server's own
// diagnostics arrive later, debounced, as notifications.
func (s *session) tsDiagnostics(ctx context.Context, uri string) ([]diagnostic, error) {
	var out []diagnostic
	for _, cmd := range []string{"syntacticDiagnosticsSync", "semanticDiagnosticsSync"} {
		var raw json.RawMessage
		err := s.c.call(ctx, "workspace/executeCommand", map[string]any{
			"command":   "typescript.tsserverRequest",
			"arguments": []any{cmd, map[string]any{"file": uri}},
		}, &raw)
		if err != nil {
			return nil, err
		}
		// the tsserver response, or its body alone
		var resp struct {
			Success *bool             `json:"success"`
			Message string            `json:"message"`
			Body    []json.RawMessage `json:"body"`
		}
		var body []json.RawMessage
		if json.Unmarshal(raw, &resp) == nil && resp.Success != nil {
			if !*resp.Success {
				return nil, fmt.Errorf("tsserver %s: %s", cmd, resp.Message)
			}
			body = resp.Body
		} else if err := json.Unmarshal(raw, &body); err != nil {
			return nil, fmt.Errorf("tsserver %s: unexpected answer %.200s", cmd, raw)
		}
		for _, b := range body {
			var d struct {
				Text     string `json:"text"`
				Category string `json:"category"`
				Code     int    `json:"code"`
			}
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("tsserver %s: %v", cmd, err)
			}
			sev := 2
			if d.Category == "error" {
				sev = 1
			}
			out = append(out, diagnostic{Severity: sev, Message: fmt.Sprintf("error TS%d: %s", d.Code, d.Text)})
		}
	}
	return out, nil
}

// CheckEdit checks next against prior on srv's resident server for root
// (started if none runs), as the check of a server's own edit does: it
// returns an error wrapping ErrRegression when a file next changes, or one
// of srv's language holding one of words, has an error it had not in prior.
func CheckEdit(ctx context.Context, srv Server, root string, prior, next core.Files, words ...string) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	s, release, err := Default.acquire(ctx, srv, root)
	if err != nil {
		return err
	}
	defer func() { release(ctx.Err() != nil) }()
	if srv.Name == Gopls.Name {
		err = s.syncGo(prior, "")
	} else {
		err = s.sync(prior)
	}
	if err != nil {
		return err
	}
	return s.checkEdit(ctx, prior, next, words...)
}
