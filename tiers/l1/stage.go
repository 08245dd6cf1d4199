package l1

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/ask"
)

// Snapshot returns the tree a request applies to, read in full.
type Snapshot func(ctx context.Context, root string) (core.Files, error)

// Stage is the L1 tier.
type Stage struct {
	Key      ed25519.PrivateKey // the endpoint key: author and signer of every op
	Snapshot Snapshot           // nil reads the workspace from disk
}

var _ tiers.Stage = (*Stage)(nil)

// Tier implements tiers.Stage.
func (s *Stage) Tier() core.Tier { return core.L1 }

// TryResolve implements tiers.Stage: (nil, nil) when the grammar does not
// recognise the request; an error when it does but the edit cannot be made
// (a rename to a conflicting name, a patch that does not apply), which the
// cascade records as a miss.
func (s *Stage) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	cmd, err := Parse(req.Prompt)
	lookUp := readsAsLookUp(req.Prompt, cmd)
	if !lookUp && (cmd == nil || err != nil) {
		return nil, err
	}
	snap := s.Snapshot
	if snap == nil {
		snap = func(_ context.Context, root string) (core.Files, error) { return core.ReadDir(root) }
	}
	files, err := snap(ctx, req.Root)
	if err != nil {
		return nil, err
	}
	if lookUp {
		if cmd, err = readLookUp(ctx, req.Prompt, req.Root, files, cmd); cmd == nil || err != nil {
			return nil, err
		}
	}
	var (
		next    core.Files
		summary string
	)
	switch c := cmd.(type) {
	case Find:
		return &tiers.Resolution{Answer: find(files, c.Text)}, nil
	case Lookup:
		answer, err := lookup(ctx, req.Root, files, c)
		if err != nil {
			return nil, err
		}
		if n := ask.Sites(answer); c.Want == Definition && n > ask.MaxDefinitionSites {
			return nil, fmt.Errorf("a definition answer citing %d places is not one definition", n)
		}
		return &tiers.Resolution{Answer: answer}, nil
	case Rename:
		next, summary, err = renameAny(ctx, req.Root, files, c)
	case Format:
		next, summary, err = formatAny(ctx, req.Root, files, c)
	case Refactor:
		next, summary, err = refactor(ctx, req.Root, files, c)
	case Replace:
		next, summary, err = replace(files, c)
	case Patch:
		next, summary, err = applyPatch(files, c.Diff)
	default:
		return nil, fmt.Errorf("l1: unhandled command %T", cmd)
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pub := s.Key.Public().(ed25519.PublicKey)
	op, err := NewOpWith(req.Sum, files, next, core.PublicKey(pub), strings.TrimSpace(req.Prompt), core.L1)
	if errors.Is(err, ErrNoChange) {
		return &tiers.Resolution{Answer: summary + " (nothing to change)"}, nil
	}
	if err != nil {
		return nil, err
	}
	signed, err := core.SignOp(s.Key, op)
	if err != nil {
		return nil, err
	}
	return &tiers.Resolution{Op: signed, Answer: summary}, nil
}

// ErrNoChange is returned by NewOp when the successor equals the prior tree.
var ErrNoChange = errors.New("no change")

// NewOp builds the coding op taking prior to next: one range edit per
// changed file covering the span between their common prefix and suffix,
// files in sorted path order. It cannot delete a file (the wire format has no
// deletion).
func NewOp(prior, next core.Files, author core.PublicKey, intent string, tier core.Tier) (*core.CodingOp, error) {
	return NewOpWith(nil, prior, next, author, intent, tier)
}

// NewOpWith is NewOp with prior's tree state summed by sum (nil means
// core.Sum): a tier hands on its request's Sum, so a cached workspace is
// not hashed again.
func NewOpWith(sum core.SumFunc, prior, next core.Files, author core.PublicKey, intent string, tier core.Tier) (*core.CodingOp, error) {
	tree, err := prior.TreeWith(sum)
	if err != nil {
		return nil, err
	}
	var paths []string
	for p := range prior {
		if _, ok := next[p]; !ok {
			return nil, fmt.Errorf("%s: deleting a file cannot be expressed as a coding op", p)
		}
	}
	for p, b := range next {
		if old, ok := prior[p]; !ok || !bytes.Equal(old, b) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil, ErrNoChange
	}
	sort.Strings(paths)
	op := &core.CodingOp{Prior: tree.ID(), Author: author, Intent: intent, Tier: tier}
	for _, p := range paths {
		if err := core.ValidatePath(p); err != nil {
			return nil, err
		}
		old, nw := prior[p], next[p]
		pre := commonPrefix(old, nw)
		suf := commonSuffix(old[pre:], nw[pre:])
		op.Edits = append(op.Edits, core.Edit{
			Path:        p,
			Anchor:      core.RangeAnchor(uint64(pre), uint64(len(old)-suf)),
			Replacement: core.Bytes(append([]byte{}, nw[pre:len(nw)-suf]...)),
		})
	}
	return op, op.Validate()
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			return i
		}
	}
	return n
}
