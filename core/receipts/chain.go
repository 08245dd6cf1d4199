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
	return verifyChain(func(env []byte) (*Any, error) { return Open(v, steward, env) }, envelopes)
}

// Keys verifies receipts sealed by any steward it holds a key for. A
// team's shared log holds receipts from many machines, each sealed with
// its own key, and one session's chain may be sealed by several of them
// (the instances of a shared gateway).
type Keys map[string]*core.Verifier

// NewKeys makes the verifiers for stewards' public keys, by name.
func NewKeys(stewards map[string]core.PublicKey) (Keys, error) {
	k := make(Keys, len(stewards))
	for name, pub := range stewards {
		v, err := core.NewVerifier(name, pub[:])
		if err != nil {
			return nil, fmt.Errorf("steward %q: %w", name, err)
		}
		k[name] = v
	}
	return k, nil
}

// Open verifies an envelope with the key of the steward its kid names.
func (k Keys) Open(envelope []byte) (*Any, error) {
	steward, err := core.EnvelopeSteward(envelope)
	if err != nil {
		return nil, err
	}
	v, ok := k[steward]
	if !ok {
		return nil, fmt.Errorf("sealed by steward %q, whose key is not trusted here (add its steward.pub line to the issuers file)", steward)
	}
	return Open(v, steward, envelope)
}

// VerifyChain is the package's VerifyChain over receipts from any steward
// in k.
func (k Keys) VerifyChain(envelopes [][]byte) ([]*Any, error) {
	return verifyChain(k.Open, envelopes)
}

func verifyChain(open func([]byte) (*Any, error), envelopes [][]byte) ([]*Any, error) {
	out := make([]*Any, 0, len(envelopes))
	var prev core.ID
	session := ""
	for i, env := range envelopes {
		pos := i + 1
		a, err := open(env)
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
