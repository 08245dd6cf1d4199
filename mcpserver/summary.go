package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
)

// Summary is a session's account: what its receipts add up to, and what
// that figure covers (JouleHook §7).
type Summary struct {
	Session     string            `json:"session"`
	URI         string            `json:"uri"`
	ReceiptsURI string            `json:"receipts_uri"`
	Receipts    uint64            `json:"receipts"`
	First       time.Time         `json:"first"`
	Last        time.Time         `json:"last"`
	Head        string            `json:"chain_head"` // chain hash of the last receipt
	Chain       string            `json:"chain"`      // "intact", or where it breaks
	Decisions   DecisionCounts    `json:"decisions"`
	EnergyUJ    uint64            `json:"energy_uj"`
	ByTier      map[string]uint64 `json:"energy_uj_by_tier"`
	ByProv      map[string]uint64 `json:"energy_uj_by_provenance"`
	ModelCalls  uint64            `json:"model_calls"`
	// FittedCalls are the model calls the proxy forwarded with their
	// output cap lowered to what the budget could pay.
	FittedCalls uint64 `json:"fitted_calls"`
	Coverage    string `json:"coverage"`
	Budget      Budget `json:"budget"`
}

// DecisionCounts counts a session's decision receipts.
type DecisionCounts struct {
	Allowed uint64            `json:"allowed"`
	Denied  uint64            `json:"denied"`
	Asked   uint64            `json:"asked"`
	Rewrote uint64            `json:"rewritten"`
	ByCode  map[string]uint64 `json:"by_code"`
}

// Budget is what the session's active grant chain can still spend: the
// least any link has left.
type Budget struct {
	Grant  string `json:"grant,omitempty"` // the active grant (the chain's leaf)
	LeftUJ uint64 `json:"left_uj"`
	Left   string `json:"left"`
	Error  string `json:"error,omitempty"` // why no grant applies
}

// budgetOf reads the budget the session could spend now.
func budgetOf(ctx context.Context, s *Server, session string) Budget {
	chain, err := s.cfg.Gate.ActiveChainAt(ctx, session, s.ws.root) // the grant its tools are decided by
	if err != nil {
		return Budget{Error: err.Error()}
	}
	if len(chain) == 0 {
		return Budget{Error: "no active grant"}
	}
	var b Budget
	for i, link := range chain {
		rec, err := s.store.Grant(ctx, link.ID.String())
		if err != nil {
			return Budget{Error: err.Error()}
		}
		if left := rec.RemainingUJ(); i == 0 || left < b.LeftUJ {
			b.LeftUJ = left
		}
		b.Grant = link.ID.String()
	}
	b.Left = formatUJ(b.LeftUJ)
	return b
}

// summaries folds each session's receipts into its summary incrementally:
// a read after k new receipts decodes and verifies only those k.
type summaries struct {
	s  *Server
	mu sync.Mutex
	by map[string]*fold
}

type fold struct {
	mu   sync.Mutex
	sum  Summary
	last [32]byte // chain hash of the last folded receipt
	err  string   // first chain break, sticky
	// model calls metered where they could be refused, and only observed
	enforced, observed uint64
}

func newSummaries(s *Server) *summaries { return &summaries{s: s, by: map[string]*fold{}} }

// get returns the session's summary, folding in receipts sealed since the
// last call (by this or any other process).
func (m *summaries) get(ctx context.Context, session string) (Summary, error) {
	m.mu.Lock()
	f := m.by[session]
	if f == nil {
		f = &fold{sum: Summary{
			Session: session, URI: sessionURI(session), ReceiptsURI: sessionURI(session) + "/receipts",
			ByTier: map[string]uint64{}, ByProv: map[string]uint64{},
			Decisions: DecisionCounts{ByCode: map[string]uint64{}},
		}}
		m.by[session] = f
	}
	m.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		page, err := m.s.store.SessionRange(ctx, session, f.sum.Receipts, 500)
		if err != nil {
			return Summary{}, err
		}
		for _, en := range page {
			f.add(m.s, en.Seq, en.Hash, en.Prev, en.Envelope, en.Time)
		}
		if len(page) < 500 {
			break
		}
	}
	if f.sum.Receipts == 0 {
		return Summary{}, fmt.Errorf("session %q has no receipts", session)
	}
	out := f.sum
	out.ByTier, out.ByProv = copyMap(f.sum.ByTier), copyMap(f.sum.ByProv)
	out.Decisions.ByCode = copyMap(f.sum.Decisions.ByCode)
	out.Chain = "intact: every signature verifies and every receipt links to the one before"
	if f.err != "" {
		out.Chain = "BROKEN: " + f.err
	}
	out.Coverage = coverage(out.ModelCalls, f.enforced, f.observed)
	out.Budget = budgetOf(ctx, m.s, session)
	return out, nil
}

func copyMap(m map[string]uint64) map[string]uint64 {
	c := make(map[string]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// add folds one receipt in.
func (f *fold) add(s *Server, seq uint64, hash, prev [32]byte, envelope []byte, t time.Time) {
	sum := &f.sum
	sum.Receipts = seq
	sum.Head = core.ID(hash).String()
	if seq == 1 {
		sum.First = t
	}
	sum.Last = t
	ok := prev == f.last
	f.last = hash
	a, err := s.openReceipt(envelope)
	switch {
	case f.err != "":
	case err != nil:
		f.err = fmt.Sprintf("receipt %d does not verify: %v", seq, err)
	case !ok || a.Sequence != seq || a.Prev != core.ID(prev):
		f.err = fmt.Sprintf("receipt %d does not link to receipt %d", seq, seq-1)
	}
	if err != nil {
		return
	}
	if d := a.Decision; d != nil {
		switch d.Decision {
		case gate.Allow:
			sum.Decisions.Allowed++
		case gate.Deny:
			sum.Decisions.Denied++
		case gate.Ask:
			sum.Decisions.Asked++
		case gate.Rewrite:
			sum.Decisions.Rewrote++
		}
		sum.Decisions.ByCode[d.Code]++
		tier := "gate"
		if len(d.Tool) == len("cascade:L0") && d.Tool[:8] == "cascade:" {
			tier = d.Tool[8:]
		}
		sum.EnergyUJ += d.DebitUJ
		sum.ByTier[tier] += d.DebitUJ
		sum.ByProv[string(d.Provenance)] += d.DebitUJ
		return
	}
	e := a.Efficiency
	uj := e.EstimatedUJ
	if e.MeasuredUJ != nil {
		uj = *e.MeasuredUJ
	}
	tier := string(e.Tier)
	if tier == "" {
		tier = "untiered"
	}
	if e.Unit == "model-call" {
		sum.ModelCalls += uint64(e.CallCount())
		sum.FittedCalls += uint64(e.FittedCount())
		switch e.Coverage {
		case "enforced":
			f.enforced++
		case "observed":
			f.observed++
		}
	}
	sum.EnergyUJ += uj
	sum.ByTier[tier] += uj
	sum.ByProv[string(e.Provenance)] += uj
}

// coverage states honestly what the session's figure covers (JouleHook §7).
func coverage(modelCalls, enforced, observed uint64) string {
	switch {
	case enforced > 0 && observed == 0:
		return fmt.Sprintf("Covers the %d model calls metered at joule's proxy (enforced: the proxy could refuse them), the gate's estimates for the actions it decided, and joule's own cascade work. It cannot see model calls that did not go through the proxy, nor host tool calls that bypassed joule's gate.", modelCalls)
	case observed > 0:
		return fmt.Sprintf("Covers %d model calls, %d of them only observed from telemetry (observed, not enforced: telemetry cannot refuse a call), the gate's estimates for the actions it decided, and joule's own cascade work. It cannot see model calls the meter did not receive, nor host tool calls that bypassed joule's gate.", modelCalls, observed)
	default:
		return "Covers only the work that passed through joule's own seams: the gate's estimated cost of the actions it decided and joule's own cascade work. No meter is bound for this session, so the host agent's model tokens and any built-in tool calls that bypassed joule are not counted: this is not a whole-session energy figure (JouleHook §7)."
	}
}

// formatUJ prints microjoules with a readable unit.
func formatUJ(uj uint64) string {
	switch {
	case uj >= 1_000_000:
		return fmt.Sprintf("%.3f J", float64(uj)/1e6)
	case uj >= 1_000:
		return fmt.Sprintf("%.3f mJ", float64(uj)/1e3)
	}
	return fmt.Sprintf("%d µJ", uj)
}
