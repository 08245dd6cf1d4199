package receipts

import (
	"fmt"

	"github.com/joulehook/joule/core"
)

// ChainError locates the first receipt of a chain that does not verify.
type ChainError struct {
	Position int // 1-based position in the list given
	Reason   string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("receipt %d: %s", e.Position, e.Reason)
}

// Open verifies one envelope with v and decodes its session receipt.
func Open(v *core.Verifier, steward string, envelope []byte) (*Any, error) {
	payload, err := v.Open(envelope)
	if err != nil {
		return nil, err
	}
	a, err := Decode(payload)
	if err != nil {
		return nil, err
	}
	if a.Steward != steward {
		return nil, fmt.Errorf("receipt steward %q is not the kid %q", a.Steward, steward)
	}
	return a, nil
}

// VerifyChain verifies a whole session chain, in order from its first
// receipt: every signature, one session, sequences 1, 2, 3… and each prev
// equal to the chain hash (BLAKE3-256) of the envelope before it. Any flip,
// deletion, insertion or reordering is reported at the first position where
// the chain breaks.
func VerifyChain(v *core.Verifier, steward string, envelopes [][]byte) ([]*Any, error) {
	out := make([]*Any, 0, len(envelopes))
	var prev core.ID
	session := ""
	for i, env := range envelopes {
		pos := i + 1
		a, err := Open(v, steward, env)
		if err != nil {
			return out, &ChainError{pos, err.Error()}
		}
		if i == 0 {
			session = a.Session
		}
		switch {
		case a.Session != session:
			return out, &ChainError{pos, fmt.Sprintf("session %q in a chain of session %q", a.Session, session)}
		case a.Sequence != uint64(pos):
			return out, &ChainError{pos, fmt.Sprintf("sequence %d where %d was due: a receipt is missing, inserted or out of order", a.Sequence, pos)}
		case a.Prev != prev:
			return out, &ChainError{pos, fmt.Sprintf("prev %s is not the hash of the receipt before it (%s)", a.Prev, prev)}
		}
		prev = core.Sum(env)
		out = append(out, a)
	}
	return out, nil
}
