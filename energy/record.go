package energy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// Record is what a meter knows about one unit of work when it is done.
type Record struct {
	Session    string
	Unit       string // "model-call", …
	Model      string
	Usage      Usage
	Estimate   Estimate
	MeasuredUJ *uint64 // only from a counter proven live; makes the receipt HwShunt
	Coverage   string  // receipts.CoverageEnforced, Observed or Local
	Complete   bool
	Note       string
	Grants     []string
	Time       time.Time
	// Reservation, when set, is settled to SettleUJ in the same store
	// transaction that seals the receipt: a call is never charged without
	// its receipt, nor receipted without its charge.
	Reservation *int64
	SettleUJ    uint64
	// Draw, when set, charges the call's share of a lease in the same
	// transaction that seals the receipt.
	Draw *store.Draw
	// Nonce, when set, is the receipt's nonce (32 lowercase hex digits);
	// otherwise a fresh one is drawn. A record journaled before it is
	// sealed carries its nonce, so that a receipt sealed from the journal
	// after a crash can be told from one already sealed.
	Nonce string
	// MaxOutputRequested and MaxOutputFitted, when the meter lowered the
	// call's output cap to fit its budget, are the cap asked for and the
	// cap the call was forwarded with.
	MaxOutputRequested, MaxOutputFitted uint64
}

// Recorder seals efficiency/1 receipts into a store's session chains.
type Recorder struct {
	Store  *store.Store
	Sealer *core.Sealer
}

// MaxNote bounds a receipt's note.
const MaxNote = 1024

// Seal seals rec as the next receipt of its session. It debits nothing
// itself: a meter charges its grants through a reservation, which Seal
// settles in the same transaction when rec names one.
func (r *Recorder) Seal(ctx context.Context, rec Record) (store.Entry, *receipts.Efficiency, error) {
	if r == nil || r.Store == nil || r.Sealer == nil {
		return store.Entry{}, nil, errors.New("energy: recorder has no store or sealer")
	}
	req, sealed := r.request(rec)
	e, err := r.Store.Seal(ctx, req)
	if err != nil {
		return store.Entry{}, nil, err
	}
	return e, sealed, nil
}

// SealBatch seals recs, in order, committing them together
// (store.SealBatch). Records of one session that share their unit,
// coverage, provenance, grants and lease are sealed as one receipt that
// lists them as its calls (at most MaxCalls each), under one signature: a
// burst of calls costs a signature and a log entry per session, not per
// call. Records that settle a reservation of their own, or carry a measured
// figure, are sealed alone. errs[i] is nil when entries[i] and sealed[i]
// hold the receipt that covers recs[i]; the records of one receipt share
// its entry, its receipt and its error.
func (r *Recorder) SealBatch(ctx context.Context, recs []Record) (entries []store.Entry, sealed []*receipts.Efficiency, errs []error) {
	entries, sealed, errs = make([]store.Entry, len(recs)), make([]*receipts.Efficiency, len(recs)), make([]error, len(recs))
	if r == nil || r.Store == nil || r.Sealer == nil {
		for i := range errs {
			errs[i] = errors.New("energy: recorder has no store or sealer")
		}
		return entries, sealed, errs
	}
	groups := groupRecords(recs)
	reqs := make([]store.SealRequest, len(groups))
	effs := make([]*receipts.Efficiency, len(groups))
	for g, at := range groups {
		if len(at) == 1 {
			reqs[g], effs[g] = r.request(recs[at[0]])
			continue
		}
		reqs[g], effs[g] = r.requestCalls(recs, at)
	}
	es, gerrs := r.Store.SealBatch(ctx, reqs)
	for g, at := range groups {
		for _, i := range at {
			entries[i], errs[i] = es[g], gerrs[g]
			if gerrs[g] == nil {
				sealed[i] = effs[g]
			}
		}
	}
	return entries, sealed, errs
}

// MaxCalls bounds the calls one receipt covers, and so its size (about
// 200 bytes a call).
const MaxCalls = 64

// groupRecords splits recs, keeping their order, into the groups
// SealBatch seals as one receipt each, as indexes into recs.
func groupRecords(recs []Record) [][]int {
	type key struct {
		session, unit, coverage, grants string
		prov                            core.Provenance
		lease                           int64
	}
	var groups [][]int
	open := map[key]int{}
	for i, rec := range recs {
		if rec.Reservation != nil || rec.MeasuredUJ != nil {
			groups = append(groups, []int{i})
			continue
		}
		k := key{session: rec.Session, unit: rec.Unit, coverage: rec.Coverage, grants: strings.Join(rec.Grants, "\x00"), prov: rec.Estimate.Provenance, lease: -1}
		if rec.Draw != nil {
			k.lease = rec.Draw.Reservation
		}
		if g, ok := open[k]; ok && len(groups[g]) < MaxCalls {
			groups[g] = append(groups[g], i)
			continue
		}
		open[k] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

// requestCalls is the store request that seals recs[at...], two or more
// records groupRecords put together, as one receipt listing them as its
// calls; the receipt it sealed is written to the returned Efficiency.
func (r *Recorder) requestCalls(recs []Record, at []int) (store.SealRequest, *receipts.Efficiency) {
	calls := make([]receipts.Call, len(at))
	var draw *store.Draw
	for i, k := range at {
		rec := &recs[k]
		calls[i] = callOf(rec)
		if calls[i].Nonce == "" {
			// Drawn here, not in Build, which may run again: a call keeps
			// its nonce through a retried transaction.
			nonce, err := core.NewNonce()
			if err != nil {
				return store.SealRequest{Session: rec.Session, Build: func(store.Position, error) ([]byte, bool, error) { return nil, false, err }}, new(receipts.Efficiency)
			}
			calls[i].Nonce = nonce
		}
		if d := rec.Draw; d != nil {
			if draw == nil {
				draw = &store.Draw{Reservation: d.Reservation}
			}
			draw.ReleaseUJ = satAdd(draw.ReleaseUJ, d.ReleaseUJ)
			draw.ChargeUJ = satAdd(draw.ChargeUJ, d.ChargeUJ)
		}
	}
	first := &recs[at[0]]
	eff := r.shared(first)
	eff.Cover(calls)
	eff.Note = fmt.Sprintf("%d calls", len(at))
	sealed := new(receipts.Efficiency)
	return store.SealRequest{Session: first.Session, Draw: draw, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		c := *eff
		return r.seal(&c, pos, "", sealed)
	}}, sealed
}

func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// request is the store request that seals rec; the receipt it sealed is
// written to the returned Efficiency.
func (r *Recorder) request(rec Record) (store.SealRequest, *receipts.Efficiency) {
	eff := r.core(rec)
	sealed := new(receipts.Efficiency)
	return store.SealRequest{Session: rec.Session, Settle: rec.Reservation, SettleUJ: rec.SettleUJ, Draw: rec.Draw, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		c := *eff
		return r.seal(&c, pos, rec.Nonce, sealed)
	}}, sealed
}

// callOf is rec as one of the calls of a receipt that covers several.
func callOf(rec *Record) receipts.Call {
	when := rec.Time
	if when.IsZero() {
		when = time.Now()
	}
	c := receipts.Call{TimeMS: uint64(when.UnixMilli()), Model: rec.Model, InputTokens: rec.Usage.Input, CachedInputTokens: rec.Usage.CachedInput,
		CacheWriteTokens: rec.Usage.CacheWrite, OutputTokens: rec.Usage.Output, EstimatedUJ: rec.Estimate.UJ, Status: receipts.StatusIncomplete,
		Note: receipts.Truncate(rec.Note, MaxNote), Nonce: rec.Nonce, MaxOutputRequested: rec.MaxOutputRequested, MaxOutputFitted: rec.MaxOutputFitted}
	if rec.Complete {
		c.Status = receipts.StatusComplete
	}
	return c
}

// core is rec's receipt but for its position and nonce.
func (r *Recorder) core(rec Record) *receipts.Efficiency {
	eff, c := r.shared(&rec), callOf(&rec)
	eff.TimeMS, eff.Model, eff.Status, eff.Note = c.TimeMS, c.Model, c.Status, c.Note
	eff.InputTokens, eff.CachedInputTokens, eff.CacheWriteTokens, eff.OutputTokens = c.InputTokens, c.CachedInputTokens, c.CacheWriteTokens, c.OutputTokens
	eff.EstimatedUJ, eff.MaxOutputRequested, eff.MaxOutputFitted = c.EstimatedUJ, c.MaxOutputRequested, c.MaxOutputFitted
	if rec.MeasuredUJ != nil {
		m := *rec.MeasuredUJ
		eff.MeasuredUJ, eff.Provenance = &m, core.HwShunt
	}
	return eff
}

// shared is what a receipt of rec shares with the other calls a receipt
// covering several would hold: all but the call's own figures.
func (r *Recorder) shared(rec *Record) *receipts.Efficiency {
	eff := &receipts.Efficiency{Kind: receipts.KindEfficiency, Unit: rec.Unit, Provenance: rec.Estimate.Provenance,
		Coverage: rec.Coverage, Grants: rec.Grants, Steward: r.Sealer.Steward()}
	if eff.Unit == "" {
		eff.Unit = "model-call"
	}
	if eff.Provenance == "" {
		eff.Provenance = core.Estimator
	}
	if eff.Grants == nil {
		eff.Grants = []string{}
	}
	return eff
}

// seal places c at pos with nonce (a fresh one if empty), signs it, and
// copies what it signed to *sealed.
func (r *Recorder) seal(c *receipts.Efficiency, pos store.Position, nonce string, sealed *receipts.Efficiency) ([]byte, bool, error) {
	c.Session, c.Sequence, c.Prev = pos.Session, pos.Seq, core.ID(pos.Prev)
	c.Nonce = nonce
	if c.Nonce == "" {
		n, err := core.NewNonce()
		if err != nil {
			return nil, false, err
		}
		c.Nonce = n
	}
	// The payload lives only until it is signed and wrapped: a pooled
	// buffer saves a receipt-sized allocation (tens of kB for a receipt
	// covering a burst of calls) per receipt.
	buf := payloads.Get().(*bytes.Buffer)
	defer payloads.Put(buf)
	buf.Reset()
	if err := receipts.AppendEncoded(buf, c); err != nil {
		return nil, false, err
	}
	env, err := r.Sealer.SealPayload(buf.Bytes())
	*sealed = *c
	return env, false, err
}

var payloads = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Refusal is a model call the meter refused before forwarding it: it is a
// decision, and is sealed as one (a deny, debiting nothing).
type Refusal struct {
	Session string
	Path    string // the API path, e.g. /v1/messages
	Model   string
	Code    string // the gate's codes: budget-exceeded, no-active-grant, ...
	Reason  string
	Grants  []string
	Body    []byte // the request, which the receipt's input digest names
	Time    time.Time
}

// SealRefusal seals ref as a joule-decision/1 deny in its session's chain.
func (r *Recorder) SealRefusal(ctx context.Context, ref Refusal) (store.Entry, error) {
	if r == nil || r.Store == nil || r.Sealer == nil {
		return store.Entry{}, errors.New("energy: recorder has no store or sealer")
	}
	when := ref.Time
	if when.IsZero() {
		when = time.Now()
	}
	act := receipts.Act{Time: when, Tool: "model-call", InputDigest: core.Sum(ref.Body),
		Summary: receipts.Truncate("model call "+ref.Model+" to "+ref.Path, 200), Cwd: "-",
		Decision: receipts.Deny, Code: ref.Code, Reason: ref.Reason, Grants: ref.Grants}
	return r.Store.Seal(ctx, store.SealRequest{Session: ref.Session, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		env, err := receipts.SealDecision(r.Sealer, receipts.Link{Session: pos.Session, Sequence: pos.Seq, Prev: pos.Prev}, act)
		return env, false, err
	}})
}
