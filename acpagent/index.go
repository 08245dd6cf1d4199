package acpagent

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l2"
)

// Indexes is L2 as the agent uses it: one index per workspace a session
// works in, opened on first use and brought up to date (incrementally,
// from file hashes) each time L2 is consulted, so it never answers from a
// stale tree.
type Indexes struct {
	Home     string      // index files live at l2.DefaultPath(Home, root)
	Options  []l2.Option // e.g. l2.WithEmbedder
	Context  int         // snippets handed on to L3 on a miss; 0: L2's default
	Progress io.Writer   // indexing progress lines (stderr); nil: none

	mu   sync.Mutex
	open map[string]*l2.Index
}

func (x *Indexes) index(root string) (*l2.Index, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if ix := x.open[root]; ix != nil {
		return ix, nil
	}
	ix, err := l2.Open(l2.DefaultPath(x.Home, root), root, x.Options...)
	if err != nil {
		return nil, err
	}
	if x.open == nil {
		x.open = map[string]*l2.Index{}
	}
	x.open[root] = ix
	return ix, nil
}

// Close closes every open index.
func (x *Indexes) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	var first error
	for root, ix := range x.open {
		if err := ix.Close(); err != nil && first == nil {
			first = err
		}
		delete(x.open, root)
	}
	return first
}

// indexStage is L2 bound to one prompt turn: it refreshes the index,
// showing progress in the turn's plan and on Progress, then retrieves.
type indexStage struct {
	x     *Indexes
	t     *turn
	names []core.Tier // the turn's tiers, for the plan
}

func (s *indexStage) Tier() core.Tier { return core.L2 }

func (s *indexStage) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	ix, err := s.x.index(req.Root)
	if err != nil {
		return nil, err
	}
	var (
		last  time.Time
		phase string
		shown bool
	)
	stats, err := ix.Update(ctx, func(p l2.Progress) {
		if p.Phase == phase && time.Since(last) < 250*time.Millisecond && p.Done != p.Total {
			return
		}
		phase, last = p.Phase, time.Now()
		if p.Phase == "scan" || p.Total == 0 || (p.Phase == "done" && !shown) {
			return
		}
		line := fmt.Sprintf("indexing: %s %d/%d", p.Phase, p.Done, p.Total)
		if s.x.Progress != nil {
			fmt.Fprintf(s.x.Progress, "joule: L2 %s: %s\n", req.Root, line)
		}
		shown = true
		_ = s.t.Update(ctx, indexPlan(s.names, line))
	})
	if err != nil {
		return nil, fmt.Errorf("l2: updating the index: %w", err)
	}
	if shown || stats.Added+stats.Changed+stats.Removed > 0 {
		_ = s.t.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("L2: index of %s updated: %d files (%d added, %d changed, %d removed), %d chunks, %d embedded, in %s",
			req.Root, stats.Files, stats.Added, stats.Changed, stats.Removed, stats.Chunks, stats.Embedded, stats.Elapsed.Round(time.Millisecond))))
	}
	if stats.EmbedErr != nil {
		_ = s.t.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("L2: some chunks have no embedding yet (%v); they are retried on the next prompt", stats.EmbedErr)))
	}
	return (&l2.Stage{Index: ix, Context: s.x.Context}).TryResolve(ctx, req)
}

// indexPlan is the turn's plan while L2 indexes: the tiers before it done,
// L2 in progress with what it is doing, the rest pending.
func indexPlan(names []core.Tier, doing string) acp.SessionUpdate {
	var entries []acp.PlanEntry
	for _, n := range names {
		st, title := acp.PlanEntryStatusPending, tierTitles[n]
		switch {
		case n < core.L2:
			st = acp.PlanEntryStatusCompleted
		case n == core.L2:
			st, title = acp.PlanEntryStatusInProgress, title+" ("+doing+")"
		}
		entries = append(entries, acp.PlanEntry{Content: title, Priority: acp.PlanEntryPriorityMedium, Status: st})
	}
	return acp.UpdatePlan(entries...)
}
