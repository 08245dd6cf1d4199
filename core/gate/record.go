package gate

import (
	"context"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// GrantsSession is the session that holds the receipts of changes made to
// grants themselves, such as a renewal.
const GrantsSession = "joule-grants"

// CodeGrantRenewed is the code of the receipt joule grant renew seals.
const CodeGrantRenewed = "grant-renewed"

// Record is an administrative act the gate seals as a decision receipt
// without a debit: what a person did to the endpoint, as against what an
// agent asked for.
type Record struct {
	Session  string
	Tool     string // the command, e.g. "joule grant renew"
	Summary  string
	Cwd      string
	Decision string // receipts.Allow unless told
	Code     string
	Reason   string
	Grants   []string // the grants it concerns
	Input    []byte   // what InputDigest hashes
}

// SealRecord seals r into its session and returns the entry.
func (g *Gate) SealRecord(ctx context.Context, r Record) (store.Entry, error) {
	now := g.now()
	digest := core.Sum(r.Input)
	if r.Decision == "" {
		r.Decision = receipts.Allow
	}
	if r.Grants == nil {
		r.Grants = []string{}
	}
	return g.Store.Seal(ctx, store.SealRequest{Session: r.Session, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		nonce, err := core.NewNonce()
		if err != nil {
			return nil, false, err
		}
		d := &receipts.Decision{
			Kind: receipts.KindDecision, Session: pos.Session, Sequence: pos.Seq, Prev: core.ID(pos.Prev),
			TimeMS: uint64(now.UnixMilli()), Tool: r.Tool, InputDigest: digest, Summary: r.Summary,
			Cwd: r.Cwd, Decision: r.Decision, Code: r.Code, Reason: truncateReason(r.Reason),
			Grants: r.Grants, Provenance: core.Estimator, Nonce: nonce, Steward: g.Sealer.Steward(),
		}
		payload, err := receipts.Encode(d)
		if err != nil {
			return nil, false, err
		}
		env, err := g.Sealer.SealPayload(payload)
		return env, false, err
	}})
}
