package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"lukechampine.com/blake3"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

// VerdictBadRow is the verdict of a receipt that verifies but whose row
// does not (its stored hash, sequence or prev disagree with the envelope),
// as `joule receipts ls` calls it.
const VerdictBadRow = receipts.VerdictBadRow

// Row is one receipt of a chain as the page lists it: what was signed,
// and its verdict within its chain.
type Row struct {
	Seq        uint64 `json:"seq"`
	Index      int64  `json:"index"`
	TimeMS     uint64 `json:"time_ms"`
	Kind       string `json:"kind"` // "decision", "efficiency", or "" when it could not be opened
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason,omitempty"`
	Decision   string `json:"decision,omitempty"`
	Code       string `json:"code,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Tier       string `json:"tier,omitempty"`
	Unit       string `json:"unit,omitempty"`
	Model      string `json:"model,omitempty"`
	UJ         uint64 `json:"uj"`
	Measured   bool   `json:"measured,omitempty"`
	Provenance string `json:"provenance,omitempty"`
	Coverage   string `json:"coverage,omitempty"`
	Status     string `json:"status,omitempty"`
	Tokens     uint64 `json:"tokens,omitempty"`
	Category   string `json:"category"` // L0..L4, "gate" or "model": where its joules are charted
	Hash       string `json:"hash"`

	grants []string
	why    string    // a deny's or an ask's reason, as signed
	in     [4]uint64 // input, cached, cache-write, output tokens
	calls  int       // model calls the receipt covers
	fitted int       // of which fitted to the budget
	signed bool      // the signature verified: the figures count
}

// Stats is what the sessions view shows of one session.
type Stats struct {
	Receipts    int               `json:"receipts"`
	Damaged     int               `json:"damaged"`
	FirstBad    uint64            `json:"first_bad,omitempty"` // SEQ of the first receipt whose verdict is not ok
	FirstBadWhy string            `json:"first_bad_verdict,omitempty"`
	Allowed     int               `json:"allowed"`
	Denied      int               `json:"denied"`
	Asked       int               `json:"asked"`
	Calls       int               `json:"model_calls"`
	Fitted      int               `json:"fitted_calls"`
	Tokens      [4]uint64         `json:"tokens"` // input, cached input, cache write, output
	TotalUJ     uint64            `json:"total_uj"`
	Measured    uint64            `json:"measured_uj"`  // HwShunt
	Modelled    uint64            `json:"modelled_uj"`  // ModelBased
	Estimated   uint64            `json:"estimated_uj"` // Estimator
	Observed    uint64            `json:"observed_uj"`  // efficiency receipts with coverage observed (OTel): observed, not enforced
	Enforced    uint64            `json:"enforced_uj"`  // metered at the proxy, which could refuse
	ByTier      map[string]uint64 `json:"by_tier"`
	Grants      []string          `json:"grants"` // every grant id the receipts name, first seen first
	First, Last uint64            `json:"-"`
}

// clone copies st, its map and slice included, to be read after the
// session's lock is released.
func (st Stats) clone() Stats {
	c := st
	c.ByTier = make(map[string]uint64, len(st.ByTier))
	for k, v := range st.ByTier {
		c.ByTier[k] = v
	}
	c.Grants = append([]string(nil), st.Grants...)
	return c
}

// add counts one signed receipt, as `joule statusline` does.
func (st *Stats) add(r *Row) {
	if !r.signed {
		return
	}
	switch r.Kind {
	case "decision":
		switch r.Decision {
		case receipts.Allow, receipts.Rewrite:
			st.Allowed++
		case receipts.Deny:
			st.Denied++
		default:
			st.Asked++
		}
	case "efficiency":
		if r.Unit == "model-call" {
			st.Calls += r.calls
			st.Fitted += r.fitted
		}
		for i := range st.Tokens {
			st.Tokens[i] += r.in[i]
		}
		switch r.Coverage {
		case receipts.CoverageObserved:
			st.Observed += r.UJ
		case receipts.CoverageEnforced:
			st.Enforced += r.UJ
		}
	}
	switch {
	case r.Measured:
		st.Measured += r.UJ
	case r.Provenance == string(core.ModelBased):
		st.Modelled += r.UJ
	default:
		st.Estimated += r.UJ
	}
	st.TotalUJ += r.UJ
	if st.ByTier == nil {
		st.ByTier = map[string]uint64{}
	}
	st.ByTier[r.Category] += r.UJ
	for _, g := range r.grants {
		found := false
		for _, h := range st.Grants {
			if h == g {
				found = true
				break
			}
		}
		if !found {
			st.Grants = append(st.Grants, g)
		}
	}
}

// session is the cached, verified index of one chain.
type session struct {
	mu      sync.Mutex
	rows    []Row
	envs    [][32]byte // BLAKE3 of each envelope as judged
	last    []byte     // the last envelope, to judge the next against
	stats   Stats
	checked time.Time
	size    int64 // log size when last checked
}

// index keeps every session it was asked about, verified once and
// extended as its chain grows; a chain whose stored bytes changed is
// judged again from the first changed receipt.
type index struct {
	st    *store.Store
	keys  receipts.Keys
	fresh time.Duration
	mu    sync.Mutex
	by    map[string]*session
}

func newIndex(st *store.Store, keys receipts.Keys, fresh time.Duration) *index {
	return &index{st: st, keys: keys, fresh: fresh, by: map[string]*session{}}
}

// errUnknownSession is an unknown session id.
var errUnknownSession = errors.New("no such session")

// cached returns a session's stats if it was indexed, without reading.
func (x *index) cached(id string) (Stats, bool) {
	x.mu.Lock()
	s := x.by[id]
	x.mu.Unlock()
	if s == nil {
		return Stats{}, false
	}
	if !s.mu.TryLock() {
		return Stats{}, false
	}
	defer s.mu.Unlock()
	if s.rows == nil {
		return Stats{}, false
	}
	return s.stats.clone(), true
}

// get returns the session, brought up to date with the store, locked; the
// caller unlocks it.
func (x *index) get(ctx context.Context, id string) (*session, error) {
	x.mu.Lock()
	s := x.by[id]
	if s == nil {
		s = &session{}
		x.by[id] = s
	}
	x.mu.Unlock()
	s.mu.Lock()
	if err := x.refresh(ctx, id, s); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return s, nil
}

func (x *index) refresh(ctx context.Context, id string, s *session) error {
	size, err := x.st.LogSize(ctx)
	if err != nil {
		return err
	}
	if s.rows != nil && size == s.size && time.Since(s.checked) < x.fresh {
		return nil
	}
	stored, err := x.st.SessionRows(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %q has no receipts in this store", errUnknownSession, id)
	}
	if err != nil {
		return err
	}
	// The first receipt whose bytes are not what was judged: judge again
	// from there (a chain only grows, unless someone edited it).
	from := 0
	for from < len(stored) && from < len(s.envs) && blake3.Sum256(stored[from].Envelope) == s.envs[from] {
		from++
	}
	if from < len(s.rows) || from > 0 && s.rows[from-1].Verdict != receipts.VerdictOK {
		// Edited, or judged incrementally after a damaged receipt (whose
		// session and sequence the chain does not carry on from): judge
		// the whole chain again, as receipts ls does.
		s.rows, s.envs, s.last, s.stats = s.rows[:0], s.envs[:0], nil, Stats{}
		from = 0
	}
	if len(stored) > from {
		x.judge(s, stored[from:])
	}
	s.size, s.checked = size, time.Now()
	return nil
}

// judge appends the verdicts of rows, judged against the chain so far, as
// `joule receipts ls` judges them (receipts.Keys.Verdicts, plus the row's
// own faults).
func (x *index) judge(s *session, rows []store.StoredEntry) {
	envs := make([][]byte, 0, len(rows)+1)
	skip := 0
	if s.last != nil {
		envs, skip = append(envs, s.last), 1
	}
	for _, r := range rows {
		envs = append(envs, r.Envelope)
	}
	// Verdicts judges the receipt before the batch as if it were the
	// first of a chain (its verdict is dropped), and the batch against it:
	// its session and sequence, which are the chain's, since it was ok.
	verdicts := x.keys.Verdicts(envs)[skip:]
	for i, r := range rows {
		v := verdicts[i]
		v.CheckRow(r.Seq, r.Prev, r.Fault)
		row := rowOf(r, v)
		s.rows = append(s.rows, row)
		s.envs = append(s.envs, blake3.Sum256(r.Envelope))
		s.stats.Receipts++
		if row.Verdict != receipts.VerdictOK {
			if s.stats.Damaged == 0 {
				s.stats.FirstBad, s.stats.FirstBadWhy = row.Seq, row.Verdict
			}
			s.stats.Damaged++
		}
		s.stats.add(&s.rows[len(s.rows)-1])
		if s.stats.First == 0 || row.TimeMS < s.stats.First && row.TimeMS > 0 {
			s.stats.First = row.TimeMS
		}
		if row.TimeMS > s.stats.Last {
			s.stats.Last = row.TimeMS
		}
		s.last = r.Envelope
	}
}

func rowOf(r store.StoredEntry, v receipts.Verdict) Row {
	row := Row{Seq: r.Seq, Index: r.Index, Verdict: v.Verdict, Reason: v.Reason, Hash: core.ID(blake3.Sum256(r.Envelope)).String(), Category: "gate"}
	a := v.Receipt
	if a == nil {
		row.TimeMS = uint64(r.Time.UnixMilli())
		return row
	}
	row.signed = true
	switch {
	case a.Decision != nil:
		d := a.Decision
		row.Kind, row.TimeMS, row.Decision, row.Code, row.Tool, row.Summary = "decision", d.TimeMS, d.Decision, d.Code, d.Tool, d.Summary
		row.UJ, row.Provenance, row.grants = d.DebitUJ, string(d.Provenance), d.Grants
		if d.Decision != receipts.Allow && d.Decision != receipts.Rewrite {
			row.why = d.Reason
		}
		if t, ok := strings.CutPrefix(d.Tool, "cascade:"); ok && core.Tier(t).Valid() {
			row.Tier, row.Category = t, t
		}
	case a.Efficiency != nil:
		f := a.Efficiency
		row.Kind, row.TimeMS, row.Unit, row.Model, row.Tier = "efficiency", f.TimeMS, f.Unit, f.Model, string(f.Tier)
		row.Provenance, row.Coverage, row.Status, row.grants = string(f.Provenance), string(f.Coverage), string(f.Status), f.Grants
		row.UJ = f.EstimatedUJ
		if f.MeasuredUJ != nil {
			row.UJ, row.Measured = *f.MeasuredUJ, true
		}
		row.in = [4]uint64{f.InputTokens, f.CachedInputTokens, f.CacheWriteTokens, f.OutputTokens}
		row.Tokens = f.InputTokens + f.CachedInputTokens + f.CacheWriteTokens + f.OutputTokens
		row.calls, row.fitted = f.CallCount(), f.FittedCount()
		row.Category = "model"
		if row.Tier != "" {
			row.Category = row.Tier
		}
		row.Summary = strings.TrimSpace(f.Unit + " " + f.Model)
		if len(f.Calls) > 0 {
			row.Summary = fmt.Sprintf("%d × %s", len(f.Calls), row.Summary)
		}
	}
	return row
}

// Denial is one decision that did not let an action run (deny, or ask:
// held for a human), with its reason as the receipt signed it: what the
// session view shows first.
type Denial struct {
	Seq      uint64 `json:"seq"`
	TimeMS   uint64 `json:"time_ms"`
	Decision string `json:"decision"`
	Code     string `json:"code"`
	Tool     string `json:"tool"`
	Summary  string `json:"summary"`
	Reason   string `json:"reason"`
}

// denialsOf are the last n denials among rows, newest first, and how many
// there are in all. Only signed receipts count: a forged row is no denial.
func denialsOf(rows []Row, n int) ([]Denial, int) {
	out := []Denial{}
	total := 0
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		if !r.signed || r.Kind != "decision" || r.Decision == receipts.Allow || r.Decision == receipts.Rewrite {
			continue
		}
		total++
		if len(out) < n {
			out = append(out, Denial{Seq: r.Seq, TimeMS: r.TimeMS, Decision: r.Decision, Code: r.Code, Tool: r.Tool, Summary: r.Summary, Reason: r.why})
		}
	}
	return out, total
}

// l4Baseline is what one request costs at L4 when the session shows no L4
// call to take the figure from: one frontier-class turn of a 6 000-token
// system prompt and tool schemas and 150 output tokens, the least of
// docs/cascade.md's token model for an L4 request.
func l4Baseline() uint64 {
	return energy.DefaultRates[energy.Frontier].Of(energy.Usage{Input: 6000, Output: 150})
}

// Cascade is what the cascade spent on the requests it closed, against
// the same requests all sent to L4.
type Cascade struct {
	Requests  int               `json:"requests"`
	ByTier    map[string]int    `json:"closed_by_tier"`
	SpentUJ   uint64            `json:"spent_uj"`
	AllL4UJ   uint64            `json:"all_l4_uj"`
	PerL4UJ   uint64            `json:"per_request_l4_uj"`
	Basis     string            `json:"basis"`
	SpentTier map[string]uint64 `json:"spent_by_tier"`
}

// cascadeOf counts the units of the cascade's work (efficiency receipts
// with a tier that are not model calls through the proxy): each one is a
// request, closed at its tier. Nil when the cascade did not run.
func cascadeOf(rows []Row) *Cascade {
	c := &Cascade{ByTier: map[string]int{}, SpentTier: map[string]uint64{}}
	var l4, l4n uint64
	for i := range rows {
		r := &rows[i]
		if !r.signed || r.Kind != "efficiency" || r.Tier == "" {
			continue
		}
		if r.Tier == "L4" {
			l4 += r.UJ
			l4n++
		}
		c.Requests++
		c.ByTier[r.Tier]++
		c.SpentUJ += r.UJ
		c.SpentTier[r.Tier] += r.UJ
	}
	if c.Requests == 0 {
		return nil
	}
	if l4n > 0 {
		c.PerL4UJ = l4 / l4n
		c.Basis = fmt.Sprintf("the mean of this session's %d L4 requests", l4n)
	} else {
		c.PerL4UJ = l4Baseline()
		c.Basis = "no L4 request in this session: one frontier-class turn of 6 000 input and 150 output tokens per request (a lower bound, docs/cascade.md's token model)"
	}
	c.AllL4UJ = c.PerL4UJ * uint64(c.Requests)
	return c
}
