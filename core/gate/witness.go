package gate

import (
	"errors"
	"fmt"

	"github.com/joulehook/joule/core/store"
)

// CodeWitnessUnreachable denies an action because fewer of the witnesses
// elsewhere than config.json's quorum cosigned the log (docs/receipts.md,
// "The witness").
const CodeWitnessUnreachable = "witness-unreachable"

// witnessRefusal is the verdict for an action the witness quorum did not
// let through, or nil when err is not the quorum's: a witness that has
// cosigned more of the log than the store holds is a rolled-back store,
// any other failure a quorum that cannot be reached. Each says how to
// recover.
func witnessRefusal(err error) *Verdict {
	var qe *store.QuorumError
	if !errors.As(err, &qe) {
		return nil
	}
	if qe.Behind() {
		v := deny(CodeRolledBack, "a witness has cosigned more of the receipts log than the store holds, so nothing is allowed: %v; restore the lost receipts from a backup ('joule store restore FILE'), or, to go on without them, record the loss ('joule store accept-loss') and take that witness out of config.json's witness.witnesses; 'joule witness status' shows what each witness cosigned", qe)
		return &v
	}
	v := deny(CodeWitnessUnreachable, "the witness quorum did not cosign the receipts log, so nothing is allowed until it does: %v; start the witness or fix config.json's witness.witnesses, then run 'joule witness sync'", qe)
	return &v
}

// withdrawn is the verdict for an action sealed as allowed whose receipt
// the witness quorum then did not cosign: the host is told no, and the
// log says so after the allow.
func withdrawn(e store.Entry, decision string, err error) Verdict {
	v := witnessRefusal(err)
	switch {
	case v != nil:
	case errors.Is(err, store.ErrRolledBack):
		w := deny(CodeRolledBack, "the receipt store is behind what its witness holds, so nothing is allowed: %v; restore the lost receipts from a backup ('joule store restore FILE'), or record the loss ('joule store accept-loss')", err)
		v = &w
	default:
		w := deny(CodeWitnessUnreachable, "the witness quorum did not cosign the receipts log: %v; 'joule witness sync' retries", err)
		v = &w
	}
	v.Reason = fmt.Sprintf("the %s sealed as session %s seq %d is withdrawn: %s", decision, e.Session, e.Seq, v.Reason)
	return *v
}
