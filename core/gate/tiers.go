package gate

import (
	"context"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

// TierGate binds the gate to the cascade (Joule Code §5.1): every
// consultation of a tier is a ConsultTier, sealed allow or deny, and a
// denial is a fall-through.
type TierGate struct{ Gate *Gate }

var _ tiers.Gate = TierGate{}

// Consult implements tiers.Gate.
func (t TierGate) Consult(ctx context.Context, req *tiers.Request, tier core.Tier) error {
	r := t.Gate.ConsultTier(ctx, req.Session, req.Root, tier)
	switch {
	case r.Decision == Allow:
		return nil
	case r.Code == CodeStoreError:
		return &storeError{r.Reason}
	}
	return &tiers.Denied{Code: r.Code, Reason: r.Reason}
}

type storeError struct{ reason string }

func (e *storeError) Error() string { return e.reason }
