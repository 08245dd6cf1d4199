package acpagent

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
)

// An editor's unsaved buffers. When the editor offers fs/read_text_file,
// the files an op touches are read through it: if a buffer differs from the
// disk, the turn's tree takes the buffer's content and the op is computed
// again on it, so its prior tree is exactly what it was computed from, and
// it is written back through fs/write_text_file.

// maxRecompute bounds how often one turn recomputes its op on buffers that
// differ from the disk (a recomputed op may touch more files).
const maxRecompute = 3

// Buffer returns the content of a workspace file as the editor holds it
// (unsaved changes included) when the editor offers fs/read_text_file, else
// as the turn's snapshot holds it; ok is false for a file neither has.
// A buffer that differs from the snapshot becomes the turn's tree state.
func (t *turn) Buffer(ctx context.Context, rel string) (b []byte, ok bool, err error) {
	files, err := t.Files(ctx)
	if err != nil {
		return nil, false, err
	}
	old, had := files[rel]
	if !t.a.clientCaps().Fs.ReadTextFile {
		return old, had, nil
	}
	if err := core.ValidatePath(rel); err != nil {
		return nil, false, err
	}
	abs := filepath.Join(t.s.cwd, filepath.FromSlash(rel))
	r, err := t.a.connection().ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: t.s.id, Path: abs})
	if err != nil {
		if !had {
			return nil, false, nil // neither on disk nor open in the editor
		}
		return nil, false, fmt.Errorf("the editor refused to let joule read %s (%s)", rel, editorError(err))
	}
	if had && r.Content == string(old) {
		return old, true, nil
	}
	t.overlay(rel, []byte(r.Content))
	return []byte(r.Content), true, nil
}

// editorError is an error the editor answered with, in one line: its
// message and what its data says (acpx answers a refused read with
// {"details": "Permission denied for fs/read_text_file (--deny-all)"}),
// not the JSON-RPC object.
func editorError(err error) string {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return oneLineMax(err.Error(), 300)
	}
	msg := re.Message
	switch d := re.Data.(type) {
	case nil:
	case string:
		msg += ": " + d
	case map[string]any:
		var parts []string
		for _, k := range []string{"details", "error", "message", "reason", "path"} {
			if v, ok := d[k].(string); ok && v != "" {
				parts = append(parts, v)
			}
		}
		if len(parts) > 0 {
			msg += ": " + strings.Join(parts, "; ")
		}
	}
	return oneLineMax(fmt.Sprintf("%s, code %d", msg, re.Code), 300)
}

// overlay makes b the content of rel in the turn's tree. The map is
// replaced, not changed, so a stage holding the previous tree keeps it.
func (t *turn) overlay(rel string, b []byte) {
	t.fmu.Lock()
	defer t.fmu.Unlock()
	next := t.files.Clone()
	next[rel] = b
	t.files = next
}

// maxPreload bounds how many Go files a rename reads through the editor
// before it type-checks; a larger module sees the buffers of the files the
// rename touches only.
const maxPreload = 2000

// preload reads, for a rename, every Go file (and go.mod) through the
// editor before the type-check, so a reference that exists only in an
// unsaved buffer is renamed too.
func (t *turn) preload(ctx context.Context, prompt string) error {
	if !t.a.clientCaps().Fs.ReadTextFile {
		return nil
	}
	if cmd, _ := l1.Parse(prompt); cmd == nil {
		return nil
	} else if _, ok := cmd.(l1.Rename); !ok {
		return nil
	}
	files, err := t.Files(ctx)
	if err != nil {
		return err
	}
	var goFiles []string
	for _, p := range files.Paths() {
		if strings.HasSuffix(p, ".go") || path.Base(p) == "go.mod" {
			goFiles = append(goFiles, p)
		}
	}
	if len(goFiles) > maxPreload {
		_ = t.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("%d Go files: only the editor buffers of the files the rename touches are read", len(goFiles))))
		return nil
	}
	for _, p := range goFiles {
		if _, _, err := t.Buffer(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// syncBuffers reads the op's files through the editor and reports whether
// any differed from the tree the op was computed on (the tree now holds
// the buffers).
func (t *turn) syncBuffers(ctx context.Context, op *core.CodingOp) (bool, error) {
	if !t.a.clientCaps().Fs.ReadTextFile {
		return false, nil
	}
	before, err := t.Files(ctx)
	if err != nil {
		return false, err
	}
	stale := false
	for _, e := range op.Edits {
		b, ok, err := t.Buffer(ctx, e.Path)
		if err != nil {
			return false, err
		}
		if old, had := before[e.Path]; ok != had || string(b) != string(old) {
			stale = true
		}
	}
	return stale, nil
}

// onBuffers recomputes a closing op while the editor's buffers of the files
// it touches differ from the tree it was computed on. An L4 op is not
// recomputed (that would run the remote agent again): its reads went
// through the editor already, and its writes replace whole files.
func (t *turn) onBuffers(ctx context.Context, c *tiers.Cascade, req *tiers.Request, res *tiers.Result) (*tiers.Result, error) {
	for i := 0; ; i++ {
		if !res.Closed() || res.Resolution.Op == nil || res.Closing == core.L4 {
			return res, nil
		}
		stale, err := t.syncBuffers(ctx, &res.Resolution.Op.Op)
		if err != nil || !stale {
			return res, err
		}
		if i == maxRecompute {
			return res, fmt.Errorf("the editor's buffers of the files to change kept changing while the change was computed (%d times); nothing was changed", i+1)
		}
		_ = t.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("%s computed the change on files the editor holds unsaved changes to; computing it again on the editor's buffers", res.Closing)))
		if res, err = c.Run(ctx, req); err != nil {
			return res, err
		}
	}
}

// memoGate decides each tier once per turn: a recomputation reuses the
// first decision, so a tier is neither debited nor sealed twice.
type memoGate struct {
	inner tiers.Gate

	mu   sync.Mutex
	seen map[core.Tier]error
}

func (m *memoGate) Consult(ctx context.Context, req *tiers.Request, tier core.Tier) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err, ok := m.seen[tier]; ok {
		return err
	}
	err := m.inner.Consult(ctx, req, tier)
	var denied *tiers.Denied
	if err == nil || errors.As(err, &denied) {
		if m.seen == nil {
			m.seen = map[core.Tier]error{}
		}
		m.seen[tier] = err
	}
	return err
}
