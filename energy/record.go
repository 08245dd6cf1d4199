package energy

import (
	"context"
	"errors"
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

// SealBatch seals recs as Seal does each, in order, committing them
// together (store.SealBatch): errs[i] is nil when entries[i] and
// sealed[i] hold recs[i]'s receipt.
func (r *Recorder) SealBatch(ctx context.Context, recs []Record) (entries []store.Entry, sealed []*receipts.Efficiency, errs []error) {
	sealed = make([]*receipts.Efficiency, len(recs))
	if r == nil || r.Store == nil || r.Sealer == nil {
		errs = make([]error, len(recs))
		for i := range errs {
			errs[i] = errors.New("energy: recorder has no store or sealer")
		}
		return make([]store.Entry, len(recs)), sealed, errs
	}
	reqs := make([]store.SealRequest, len(recs))
	for i, rec := range recs {
		reqs[i], sealed[i] = r.request(rec)
	}
	entries, errs = r.Store.SealBatch(ctx, reqs)
	for i, err := range errs {
		if err != nil {
			sealed[i] = nil
		}
	}
	return entries, sealed, errs
}

// request is the store request that seals rec; the receipt it sealed is
// written to *sealed.
func (r *Recorder) request(rec Record) (store.SealRequest, *receipts.Efficiency) {
	when := rec.Time
	if when.IsZero() {
		when = time.Now()
	}
	eff := &receipts.Efficiency{
		Kind: receipts.KindEfficiency, TimeMS: uint64(when.UnixMilli()), Unit: rec.Unit, Model: rec.Model,
		InputTokens: rec.Usage.Input, CachedInputTokens: rec.Usage.CachedInput, CacheWriteTokens: rec.Usage.CacheWrite,
		OutputTokens: rec.Usage.Output, EstimatedUJ: rec.Estimate.UJ, Provenance: rec.Estimate.Provenance,
		Coverage: rec.Coverage, Status: receipts.StatusIncomplete, Note: truncate(rec.Note, MaxNote),
		Grants: rec.Grants, Steward: r.Sealer.Steward(),
		MaxOutputRequested: rec.MaxOutputRequested, MaxOutputFitted: rec.MaxOutputFitted,
	}
	if eff.Unit == "" {
		eff.Unit = "model-call"
	}
	if eff.Provenance == "" {
		eff.Provenance = core.Estimator
	}
	if rec.MeasuredUJ != nil {
		m := *rec.MeasuredUJ
		eff.MeasuredUJ, eff.Provenance = &m, core.HwShunt
	}
	if rec.Complete {
		eff.Status = receipts.StatusComplete
	}
	if eff.Grants == nil {
		eff.Grants = []string{}
	}
	sealed := new(receipts.Efficiency)
	return store.SealRequest{Session: rec.Session, Settle: rec.Reservation, SettleUJ: rec.SettleUJ, Draw: rec.Draw, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		c := *eff
		c.Session, c.Sequence, c.Prev = pos.Session, pos.Seq, core.ID(pos.Prev)
		c.Nonce = rec.Nonce
		if c.Nonce == "" {
			nonce, err := core.NewNonce()
			if err != nil {
				return nil, false, err
			}
			c.Nonce = nonce
		}
		payload, err := receipts.Encode(&c)
		if err != nil {
			return nil, false, err
		}
		env, err := r.Sealer.SealPayload(payload)
		*sealed = c
		return env, false, err
	}}, sealed
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 { // do not cut a UTF-8 sequence
		n--
	}
	return s[:n] + "…"
}

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
	grants := ref.Grants
	if grants == nil {
		grants = []string{}
	}
	digest := core.Sum(ref.Body)
	return r.Store.Seal(ctx, store.SealRequest{Session: ref.Session, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		nonce, err := core.NewNonce()
		if err != nil {
			return nil, false, err
		}
		d := &receipts.Decision{
			Kind: receipts.KindDecision, Session: pos.Session, Sequence: pos.Seq, Prev: core.ID(pos.Prev),
			TimeMS: uint64(when.UnixMilli()), Tool: "model-call", InputDigest: digest,
			Summary: truncate("model call "+ref.Model+" to "+ref.Path, 200), Cwd: "-", Decision: receipts.Deny,
			Code: ref.Code, Reason: truncate(ref.Reason, MaxNote), Grants: grants, Provenance: core.Estimator,
			Nonce: nonce, Steward: r.Sealer.Steward(),
		}
		payload, err := receipts.Encode(d)
		if err != nil {
			return nil, false, err
		}
		env, err := r.Sealer.SealPayload(payload)
		return env, false, err
	}})
}
