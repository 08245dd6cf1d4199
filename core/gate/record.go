package gate

import (
	"context"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// GrantsSession is the session that holds the receipts of changes made to
// grants themselves: the trust chain (core/trust).
const GrantsSession = trust.GrantsSession

// CodeGrantRenewed is the code of the receipt joule grant renew seals.
const CodeGrantRenewed = trust.CodeRenewed

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
	act := receipts.Act{Time: now, Tool: r.Tool, InputDigest: digest, Summary: r.Summary, Cwd: r.Cwd,
		Decision: r.Decision, Code: r.Code, Reason: r.Reason, Grants: r.Grants}
	return g.Store.Seal(ctx, store.SealRequest{Session: r.Session, System: true, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		env, err := receipts.SealDecision(g.Sealer, link(pos), act)
		return env, false, err
	}})
}
