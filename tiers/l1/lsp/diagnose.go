package lsp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"sort"
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
	for p := range next { // not next.Paths(): a tree of thousands, sorted for a few
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
	sort.Strings(out)
	return out
}

// diagnostic is the part of an LSP diagnostic the check reads.
type diagnostic struct {
	Severity int    `json:"severity"` // 1: error
	Message  string `json:"message"`
}

// diagnose lists the errors the server reports for rels in its current
// state, as "FILE: MESSAGE" (no position: an edit moves them). The
// requests go out at once (callAll). A file's errors already asked for in
// the same state (the same open documents, the same disk) are not asked
// again: the state after one edit is the state before the next, and a
// request's prior is usually the last one's successor.
func (s *session) diagnose(ctx context.Context, rels []string) ([]string, error) {
	state := s.fingerprint()
	known := s.diags.get(state)
	var ask []string
	for _, rel := range rels {
		if _, ok := known[rel]; !ok {
			ask = append(ask, rel)
		}
	}
	if len(ask) > 0 {
		got, err := s.askDiagnostics(ctx, ask)
		if err != nil {
			return nil, err
		}
		known = s.diags.put(state, got)
	}
	var out []string
	for _, rel := range rels {
		out = append(out, known[rel]...)
	}
	return out, nil
}

// askDiagnostics asks the server for the errors of each of rels, all
// requests at once.
func (s *session) askDiagnostics(ctx context.Context, rels []string) (map[string][]string, error) {
	ts := s.srv.Name == "typescript-language-server"
	type pull struct {
		Kind  string       `json:"kind"`
		Items []diagnostic `json:"items"`
	}
	var reqs []request
	pulls := make([]pull, len(rels))
	var tsRaw []json.RawMessage
	if ts {
		tsRaw = make([]json.RawMessage, 2*len(rels))
	}
	for i, rel := range rels {
		uri := fileURI(filepath.Join(s.root, filepath.FromSlash(rel)))
		if ts {
			for j, cmd := range tsDiagnosticCommands {
				reqs = append(reqs, request{"workspace/executeCommand", map[string]any{
					"command":   "typescript.tsserverRequest",
					"arguments": []any{cmd, map[string]any{"file": uri}},
				}, &tsRaw[2*i+j]})
			}
			continue
		}
		// gopls and pyright answer textDocument/diagnostic (pull)
		reqs = append(reqs, request{"textDocument/diagnostic", map[string]any{"textDocument": map[string]any{"uri": uri}}, &pulls[i]})
	}
	errs, err := s.c.callAll(ctx, reqs)
	if err != nil {
		return nil, fmt.Errorf("%s: the errors of %s: %v", s.srv.Name, strings.Join(rels, ", "), err)
	}
	out := make(map[string][]string, len(rels))
	for i, rel := range rels {
		var ds []diagnostic
		var err error
		if ts {
			for j, cmd := range tsDiagnosticCommands {
				var more []diagnostic
				if err = errs[2*i+j]; err == nil {
					more, err = tsDiagnostics(cmd, tsRaw[2*i+j])
				}
				if err != nil {
					break
				}
				ds = append(ds, more...)
			}
		} else {
			err = errs[i]
			var rpc *RPCError
			if errors.As(err, &rpc) && rpc.Code == -32601 { // method not found
				return nil, errNoDiagnose
			}
			if err == nil && pulls[i].Kind != "full" && pulls[i].Kind != "" { // gopls leaves it out
				err = fmt.Errorf("a %q report, not a full one", pulls[i].Kind)
			}
			ds = pulls[i].Items
		}
		if err != nil {
			return nil, fmt.Errorf("%s: the errors of %s: %v", s.srv.Name, rel, err)
		}
		errs := []string{} // known, even when there are none
		for _, d := range ds {
			if d.Severity == 1 {
				errs = append(errs, rel+": "+firstLine(d.Message))
			}
		}
		out[rel] = errs
	}
	return out, nil
}

// tsDiagnosticCommands are the tsserver requests, sent through
// typescript-language-server's typescript.tsserverRequest command, that
// list the syntactic and semantic errors of one open file: synchronous
// requests, where the server's own diagnostics arrive later, debounced,
// as notifications.
var tsDiagnosticCommands = [2]string{"syntacticDiagnosticsSync", "semanticDiagnosticsSync"}

// tsDiagnostics reads the answer to one of tsDiagnosticCommands.
func tsDiagnostics(cmd string, raw json.RawMessage) ([]diagnostic, error) {
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
	var out []diagnostic
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
	return out, nil
}

// fingerprint identifies the state the server checks: its open documents
// (path and content) and the disk changes it was told of. Unopened files
// that change on disk unannounced (a library below node_modules, the
// module cache) are not in it; the pool's idle bound ends such a server.
func (s *session) fingerprint() [sha256.Size]byte {
	rels := make([]string, 0, len(s.docs))
	for rel := range s.docs {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", s.srv.Name, s.diskChanges)
	h.Write(s.config[:])
	for _, rel := range rels {
		sum := s.docs[rel].sum
		h.Write([]byte(rel))
		h.Write([]byte{0})
		h.Write(sum[:])
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// noteConfig fingerprints the project files of files that the server reads
// from disk rather than from a document (isConfig).
func (s *session) noteConfig(files core.Files) {
	var rels []string
	for rel := range files {
		if isConfig(rel) {
			rels = append(rels, rel)
		}
	}
	sort.Strings(rels)
	h := sha256.New()
	for _, rel := range rels {
		sum := sha256.Sum256(files[rel])
		h.Write([]byte(rel))
		h.Write([]byte{0})
		h.Write(sum[:])
	}
	h.Sum(s.config[:0])
}

// isConfig reports the files that configure a project for gopls,
// tsserver or pyright.
func isConfig(rel string) bool {
	switch base := path.Base(rel); base {
	case "go.mod", "go.sum", "go.work", "go.work.sum", "package.json", "pyrightconfig.json", "pyproject.toml", "setup.cfg":
		return true
	default:
		return strings.HasSuffix(base, ".json") && (strings.HasPrefix(base, "tsconfig") || strings.HasPrefix(base, "jsconfig"))
	}
}

// diagCache keeps the errors of the last few states the server checked,
// per file: enough for a request's prior (the last request's successor,
// or its prior) to be known.
type diagCache struct {
	states []diagState // most recent last
}

type diagState struct {
	state [sha256.Size]byte
	errs  map[string][]string
}

const diagStates = 4

// get is what is known of state, nil if nothing. A state read becomes the
// most recent: the prior every request of a series starts from stays
// known while the successors pass through.
func (c *diagCache) get(state [sha256.Size]byte) map[string][]string {
	for i, st := range c.states {
		if st.state == state {
			c.states = append(append(c.states[:i:i], c.states[i+1:]...), st)
			return st.errs
		}
	}
	return nil
}

// put adds got to what is known of state and returns all of it.
func (c *diagCache) put(state [sha256.Size]byte, got map[string][]string) map[string][]string {
	for i, st := range c.states {
		if st.state == state {
			for rel, errs := range got {
				st.errs[rel] = errs
			}
			// the most recent last
			c.states = append(append(c.states[:i:i], c.states[i+1:]...), st)
			return st.errs
		}
	}
	if len(c.states) == diagStates {
		c.states = c.states[1:]
	}
	c.states = append(c.states, diagState{state, got})
	return got
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
