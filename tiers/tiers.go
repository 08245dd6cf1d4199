// Package tiers is the energy-tiered cascade: stages, one per tier, are
// consulted cheapest first and the first that closes a request wins.
package tiers

import (
	"context"
	"errors"
	"fmt"

	"github.com/joulehook/joule/core"
)

// Request is one coding request put to the cascade.
type Request struct {
	Session string
	Prompt  string // the user's request, as typed
	Root    string // the workspace the request applies to

	// Context is what cheaper tiers learned without closing the request
	// (L2's retrieved code), handed on to the tiers after them, best first.
	Context []Snippet

	// Sum, when set, sums file contents for tree states: a cache of the
	// workspace answers for the files it read (core.DirCache.Sum).
	Sum core.SumFunc
}

// Tree returns the tree state of files, summed by r.Sum when set.
func (r *Request) Tree(files core.Files) (core.Tree, error) { return files.TreeWith(r.Sum) }

// Snippet is one piece of workspace code a tier found relevant to a request.
type Snippet struct {
	Path      string  // slash-separated, relative to Request.Root
	StartLine int     // 1-based, inclusive
	EndLine   int     // 1-based, inclusive
	Symbol    string  // the declaration it holds, e.g. "(*Server).Serve"; empty for plain text
	Text      string  // the lines themselves
	Score     float64 // the retriever's fused score; higher is better
	Why       string  // how it was found, e.g. "bm25+vector", "lexical only: no embedding model"
}

// Resolution is what a stage that closes a request produces: a coding op
// that changes the tree, or an answer that changes nothing.
type Resolution struct {
	Op     *core.SignedOp
	Answer string
}

// Stage is one tier of the cascade. TryResolve returns (nil, nil) when the
// stage cannot close the request; an error counts as a miss and is recorded.
type Stage interface {
	Tier() core.Tier
	TryResolve(ctx context.Context, req *Request) (*Resolution, error)
}

// Consultation records one tier the cascade consulted.
type Consultation struct {
	Tier   core.Tier
	Closed bool
	Denied *Denied // non-nil when the gate refused the tier; the stage did not run
	Err    error   // non-nil when the stage failed; the cascade fell through
}

// Ran reports whether the stage itself ran (it was not denied).
func (c Consultation) Ran() bool { return c.Denied == nil }

// Denied is a gate's refusal to consult a tier (Joule Code §5.1): it is a
// fall-through, exactly like a tier that could not close.
type Denied struct {
	Code   string
	Reason string
}

func (d *Denied) Error() string { return d.Code + ": " + d.Reason }

// Gate authorises each consultation before its stage runs: it checks the
// tier verb against the grant chain, debits the tier's attempt cost from
// every link and seals the consultation, allow or deny. It returns nil to
// let the stage run, a *Denied to fall through, or another error, which
// stops the cascade (fail closed: no tier runs unaccounted).
type Gate interface {
	Consult(ctx context.Context, req *Request, tier core.Tier) error
}

// Result is the cascade's outcome: the closing tier, if any, and every
// consultation in order.
type Result struct {
	Resolution *Resolution
	Closing    core.Tier // empty when nothing closed
	Consulted  []Consultation
}

// Closed reports whether some stage closed the request.
func (r *Result) Closed() bool { return r.Closing != "" }

// Cascade consults stages in order and stops at the first that closes.
type Cascade struct {
	stages []Stage
	gate   Gate
}

// WithGate returns a copy of the cascade whose consultations g authorises.
func (c *Cascade) WithGate(g Gate) *Cascade {
	return &Cascade{stages: c.stages, gate: g}
}

// New returns a cascade over stages, which must be in strictly increasing
// tier order (a tier the runtime does not implement is simply absent).
func New(stages ...Stage) (*Cascade, error) {
	for i, s := range stages {
		if !s.Tier().Valid() {
			return nil, fmt.Errorf("cascade: stage %d has invalid tier %q", i, s.Tier())
		}
		if i > 0 && s.Tier() <= stages[i-1].Tier() {
			return nil, fmt.Errorf("cascade: stage %s after %s: stages must be in increasing tier order", s.Tier(), stages[i-1].Tier())
		}
	}
	return &Cascade{stages: stages}, nil
}

// Run puts req to each stage in tier order. A stage error or panic is a
// miss, and so is a tier the gate denies; a cancelled context, or a gate
// that cannot answer, stops the cascade with that error.
func (c *Cascade) Run(ctx context.Context, req *Request) (*Result, error) {
	res := &Result{}
	for _, s := range c.stages {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if c.gate != nil {
			if err := c.gate.Consult(ctx, req, s.Tier()); err != nil {
				var d *Denied
				if !errors.As(err, &d) {
					return res, fmt.Errorf("cascade: consulting %s: %w", s.Tier(), err)
				}
				res.Consulted = append(res.Consulted, Consultation{Tier: s.Tier(), Denied: d})
				continue
			}
		}
		r, err := try(ctx, s, req)
		if err == nil && r == nil {
			res.Consulted = append(res.Consulted, Consultation{Tier: s.Tier()})
			continue
		}
		if err != nil {
			res.Consulted = append(res.Consulted, Consultation{Tier: s.Tier(), Err: err})
			continue
		}
		res.Consulted = append(res.Consulted, Consultation{Tier: s.Tier(), Closed: true})
		res.Resolution = r
		res.Closing = s.Tier()
		return res, nil
	}
	return res, nil
}

// ErrStagePanic wraps a panic inside a stage, so one broken tier cannot take
// the runtime down.
var ErrStagePanic = errors.New("stage panicked")

func try(ctx context.Context, s Stage, req *Request) (r *Resolution, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%w: %v", ErrStagePanic, p)
		}
	}()
	return s.TryResolve(ctx, req)
}
