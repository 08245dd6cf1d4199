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

// Consultation records one stage the cascade ran.
type Consultation struct {
	Tier   core.Tier
	Closed bool
	Err    error // non-nil when the stage failed; the cascade fell through
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
// miss; a cancelled context stops the cascade with ctx's error.
func (c *Cascade) Run(ctx context.Context, req *Request) (*Result, error) {
	res := &Result{}
	for _, s := range c.stages {
		if err := ctx.Err(); err != nil {
			return res, err
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
