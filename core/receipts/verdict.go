package receipts

import (
	"errors"
	"fmt"

	"github.com/joulehook/joule/core"
)

// Verdicts of one receipt of a chain, from Keys.Verdicts.
const (
	VerdictOK           = "ok"
	VerdictUndecodable  = "undecodable"       // not a COSE_Sign1 envelope, or a payload that is no session receipt
	VerdictBadSignature = "bad-signature"     // the signature does not verify with its steward's key
	VerdictUntrusted    = "untrusted-steward" // sealed by a steward whose key is not trusted here
	VerdictBrokenChain  = "broken-chain"      // signed, but not the next link of its session's chain
)

// Verdict is one receipt's own verdict within its chain.
type Verdict struct {
	Position int    // 1-based position in the list given
	Verdict  string // one of the Verdict constants
	Reason   string // empty when ok
	Receipt  *Any   // the decoded receipt; nil when undecodable or not verified
}

// Verdicts judges every receipt of a chain on its own, instead of stopping
// at the first that fails as VerifyChain does: its signature, and whether
// it follows the receipt before it (the session, the next sequence, prev
// the chain hash of the envelope before it as given). A receipt after a
// damaged one is judged against that one's bytes, so one flipped byte
// marks the damaged receipt bad-signature and the next broken-chain, and
// the rest ok.
func (k Keys) Verdicts(envelopes [][]byte) []Verdict {
	out := make([]Verdict, len(envelopes))
	var (
		prev    core.ID
		lastSeq uint64
		session string
	)
	for i, env := range envelopes {
		v := Verdict{Position: i + 1, Verdict: VerdictOK}
		a, verdict, err := k.judge(env)
		switch {
		case err != nil:
			v.Verdict, v.Reason = verdict, err.Error()
		case session != "" && a.Session != session:
			v.Verdict, v.Reason = VerdictBrokenChain, fmt.Sprintf("session %q in a chain of session %q", a.Session, session)
		case a.Sequence != lastSeq+1:
			v.Verdict, v.Reason = VerdictBrokenChain, fmt.Sprintf("sequence %d where %d was due: a receipt is missing, inserted or out of order", a.Sequence, lastSeq+1)
		case a.Prev != prev:
			v.Verdict, v.Reason = VerdictBrokenChain, fmt.Sprintf("prev %s is not the hash of the receipt before it (%s)", a.Prev, prev)
		}
		if a != nil {
			v.Receipt = a
			if session == "" {
				session = a.Session
			}
			lastSeq = a.Sequence
		} else {
			lastSeq++
		}
		prev = core.Sum(env)
		out[i] = v
	}
	return out
}

// judge opens one envelope: the receipt, or its verdict and why.
func (k Keys) judge(env []byte) (*Any, string, error) {
	steward, err := core.EnvelopeSteward(env)
	if err != nil {
		return nil, VerdictUndecodable, err
	}
	v, ok := k[steward]
	if !ok {
		return nil, VerdictUntrusted, fmt.Errorf("sealed by steward %q, whose key is not trusted here (add its steward.pub line to the issuers file)", steward)
	}
	payload, err := v.Open(env)
	if err != nil {
		var re *core.ReceiptError
		if errors.As(err, &re) && re.Code != "bad-signature" {
			return nil, VerdictUndecodable, err
		}
		return nil, VerdictBadSignature, err
	}
	a, err := Decode(payload)
	if err != nil {
		return nil, VerdictUndecodable, err
	}
	if a.Steward != steward {
		return nil, VerdictBadSignature, fmt.Errorf("receipt steward %q is not the kid %q", a.Steward, steward)
	}
	return a, VerdictOK, nil
}
