package tiers

import (
	"context"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
)

// GrantGate binds the project's gate to the cascade (Joule Code §5.1):
// every consultation of a tier is a ConsultTier, sealed allow or deny,
// and a denial is a fall-through. It lives here, not in core/gate, so
// that core depends on nothing above it.
type GrantGate struct{ Gate *gate.Gate }

var _ Gate = GrantGate{}

// Consult implements Gate.
func (t GrantGate) Consult(ctx context.Context, req *Request, tier core.Tier) error {
	r := t.Gate.ConsultTier(ctx, req.Session, req.Root, tier)
	switch {
	case r.Decision == gate.Allow:
		return nil
	case r.Code == gate.CodeStoreError:
		return &storeError{r.Reason}
	}
	return &Denied{Code: r.Code, Reason: r.Reason}
}

type storeError struct{ reason string }

func (e *storeError) Error() string { return e.reason }
