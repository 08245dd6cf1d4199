package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
)

// The token model of the scripted tiers. Code runs at about four bytes a
// token; an agent's system prompt and tool schemas come with every call.
const (
	bytesPerToken = 4
	l4System      = 6000 // tokens: a coding agent's system prompt and tool definitions
	l3System      = 1000 // tokens: the local model's edit-block instructions
	l3Context     = 32768
)

func tokens(bytes int) uint64 { return uint64((bytes + bytesPerToken - 1) / bytesPerToken) }

// outBytes is what an answer or edit to r takes to write.
func outBytes(r *Request) int {
	switch r.Class {
	case Define:
		return 240
	case Callers:
		return 160 + 100*len(r.Calls)
	}
	return r.OutBytes
}

// L4Usage is what a remote frontier agent spends on r from scratch: it
// reads the files holding the answer and writes the answer or edit, over
// two turns for a lookup and three otherwise, each later turn re-reading
// the conversation from the provider's prompt cache.
func L4Usage(r *Request) energy.Usage {
	turns := uint64(3)
	if r.Class == Define || r.Class == Callers {
		turns = 2
	}
	in := l4System + tokens(len(r.Prompt)) + tokens(r.ReadBytes)
	return energy.Usage{Input: in, CachedInput: (turns - 1) * in, Output: tokens(outBytes(r)) + 150*turns}
}

// L3Usage is one local-model call on r with the context cheaper tiers
// handed on, clipped to the model's context window.
func L3Usage(r *Request, contextBytes int) energy.Usage {
	in := l3System + tokens(len(r.Prompt)) + tokens(r.ReadBytes+contextBytes)
	return energy.Usage{Input: min(in, l3Context), Output: tokens(outBytes(r)) + 100}
}

// scripted is a model tier played from a script: it spends the tokens the
// model above would, and closes a seeded share of what reaches it. Its
// answers are not real, and are never scored.
type scripted struct {
	tier  core.Tier
	model string
	share float64 // of what reaches it, the fraction it closes
	seed  uint64
	table *energy.Table
	cur   func() *Request

	usage energy.Usage // of the last call
}

var _ tiers.Stage = (*scripted)(nil)

func (s *scripted) Tier() core.Tier { return s.tier }

func (s *scripted) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	r := s.cur()
	if r == nil {
		return nil, fmt.Errorf("%s script: no workload request for %q", s.tier, req.Prompt)
	}
	if s.tier == core.L4 {
		s.usage = L4Usage(r)
	} else {
		n := 0
		for _, c := range req.Context {
			n += len(c.Text)
		}
		s.usage = L3Usage(r, n)
	}
	if !s.closes(r) {
		return nil, nil
	}
	return &tiers.Resolution{Answer: fmt.Sprintf("(scripted %s on %s: %d input, %d cached, %d output tokens)",
		s.tier, s.model, s.usage.Input, s.usage.CachedInput, s.usage.Output)}, nil
}

// closes draws, the same for the same seed, request and tier.
func (s *scripted) closes(r *Request) bool {
	if s.share >= 1 {
		return true
	}
	rng := rand.New(rand.NewPCG(s.seed, uint64(r.ID)<<8|uint64(s.tier[len(s.tier)-1])))
	return rng.Float64() < s.share
}

func (s *scripted) uj() uint64 { return s.table.Energy(s.model, s.usage).UJ }

// metered runs a cheap tier and measures the CPU time it takes, its child
// processes (`go list`) included.
type metered struct {
	tiers.Stage
	cpu, wall time.Duration
}

func (m *metered) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	c0, w0 := cpuTime(), time.Now()
	defer func() { m.cpu, m.wall = cpuTime()-c0, time.Since(w0) }()
	return m.Stage.TryResolve(ctx, req)
}

// cpuUJ is the energy of d of busy CPU at watts per core.
func cpuUJ(d time.Duration, watts float64) uint64 {
	return uint64(d.Seconds() * watts * 1e6)
}
