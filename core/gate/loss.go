package gate

import (
	"context"
	"fmt"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// LossSession is the session that holds the receipts of accepted losses.
const LossSession = trust.StoreSession

// CodeLossAccepted is the code of the receipt AcceptLoss seals.
const CodeLossAccepted = "store-loss-accepted"

// CodeStoreRestored is the code of the receipt 'joule store restore' seals
// into the store it is about to replace.
const CodeStoreRestored = "store-restored"

// AcceptedLoss is what AcceptLoss sealed.
type AcceptedLoss struct {
	Entry   store.Entry // the receipt, in LossSession
	Summary string      // what it records: the witnessed and the current log
	Kept    []string    // the witness files replaced, kept under other names
}

// AcceptLoss accepts the loss of a store its witness refused (rolled back,
// or a witness that cannot be trusted; until then the gate decides nothing,
// CodeRolledBack and CodeWitnessInvalid): it seals into LossSession a
// decision receipt recording what the witness remembered and what the store
// holds now, and re-anchors the witness there. found is the witness's
// complaint, nil when the store matched it (the witness is re-anchored
// anyway); cwd is the receipt's cwd, the endpoint's home.
func (g *Gate) AcceptLoss(ctx context.Context, found error, cwd string) (AcceptedLoss, error) {
	now := g.now()
	var out AcceptedLoss
	var err error
	out.Entry, out.Kept, err = g.Store.AcceptLoss(ctx, LossSession, func(pos store.Position, witnessed *store.Checkpoint, cur store.Checkpoint) ([]byte, error) {
		act := lossAct(witnessed, cur, found)
		act.Time, act.Cwd = now, cwd
		out.Summary = act.Summary
		return receipts.SealDecision(g.Sealer, link(pos), act)
	})
	return out, err
}

// lossAct is the decision an accepted loss records, but for its time and
// cwd: what the witness remembered (witnessed, nil when unreadable), what
// the store holds now (cur), and why (found).
func lossAct(witnessed *store.Checkpoint, cur store.Checkpoint, found error) receipts.Act {
	lost := "no readable witness"
	var digest core.ID
	if witnessed != nil {
		lost = fmt.Sprintf("witnessed log size %d root %s", witnessed.Size, witnessed.Root)
		digest = core.Sum(witnessed.Text())
	}
	reason := "the store was found smaller than, or not an extension of, its witness, and the loss was accepted"
	if found != nil {
		reason = receipts.Truncate(found.Error(), 900)
	}
	return receipts.Act{Tool: "joule store accept-loss", InputDigest: digest,
		Summary:  fmt.Sprintf("store loss accepted: %s; store now log size %d root %s", lost, cur.Size, cur.Root),
		Decision: receipts.Allow, Code: CodeLossAccepted, Reason: reason}
}
