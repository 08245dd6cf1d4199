package gate

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// Codes of decisions refused because the trust state is not what the
// signed trust chains say (core/trust). Each reason says what was found
// and the command that recovers.
const (
	CodeGrantUnrecorded = "grant-unrecorded" // a grant of the chain has no issue receipt in the trust chain
	CodeTrustCorrupt    = "trust-corrupt"    // a trust chain does not verify
	CodeIssuersUnsigned = "issuers-unsigned" // the issuers file is not the list the home's chain signs
	CodeConfigUnsigned  = "config-unsigned"  // config.json's trust settings are not the ones the home's chain signs
	CodeStoreMoved      = "store-moved"      // the store opened is not the one the home is bound to
)

// trustView is the trust state derived from the chains whose heads it
// records, for the keys and files it was checked with: a decision whose
// chains, witness and keys are the same uses it as is, and any change
// derives it again.
type trustView struct {
	heads   map[string]store.ChainHead // as the sessions table stores them
	wit     map[string]store.ChainHead // as the witness recorded them
	trusted grant.Trust
	grants  *trust.Grants
	err     error
}

// trustSessions are the chains a decision reads: the grants' and, with
// Files, the home's own.
func (g *Gate) trustSessions() []string {
	if g.Files != nil {
		return []string{trust.GrantsSession, g.Files.Home}
	}
	return []string{trust.GrantsSession}
}

// trustState is the grant trust state the signed chains say now. In the
// steady state it costs one read of the chains' heads (which a resident
// gate compares with the view it derived last); a change of either chain,
// of what the witness recorded of them or of the trusted keys derives it
// again: every receipt of the chains verified.
func (g *Gate) trustState(ctx context.Context) (*trust.Grants, error) {
	sessions := g.trustSessions()
	heads, err := g.Store.SessionHeads(ctx, sessions...)
	if err != nil {
		return nil, err
	}
	wit, cp := g.Store.WitnessedChains()
	if v := g.view.Load(); v != nil && maps.Equal(v.heads, heads) && maps.Equal(v.wit, wit) && sameTrust(v.trusted, g.grantKeys()) {
		return v.grants, v.err
	}
	if cp != nil {
		// A receipt row taken out after what the witness saw leaves the
		// log and its witnesses satisfied, and the chain shorter.
		if err := g.Store.CheckEntries(ctx, cp.Size); err != nil {
			return nil, err
		}
	}
	v := &trustView{heads: heads, wit: wit, trusted: g.grantKeys()}
	v.grants, v.err = g.deriveTrust(ctx, heads, wit)
	if v.err != nil {
		// A store its witness refuses as a whole (rolled back, replaced,
		// moved) is that, whatever its trust chains look like.
		if _, _, werr := g.Store.WitnessState(ctx); errors.Is(werr, store.ErrRolledBack) || errors.Is(werr, store.ErrWitnessInvalid) || errors.Is(werr, store.ErrStoreMoved) {
			return nil, werr
		}
		if isStoreFailure(v.err) && !errors.Is(v.err, trust.ErrBehind) {
			return nil, v.err // not cached: the store may come back
		}
	}
	g.view.Store(v)
	return v.grants, v.err
}

func sameTrust(a, b grant.Trust) bool { return maps.Equal(a, b) }

// chainOf is session's chain as the sessions table and the witness
// record its head.
func chainOf(session string, heads, wit map[string]store.ChainHead) trust.Chain {
	c := trust.Chain{Session: session}
	if h, ok := heads[session]; ok {
		c.Head = &h
	}
	if w, ok := wit[session]; ok {
		c.Witnessed = &w
	}
	return c
}

// loadHome reads and verifies the home's own chain with the home's key
// alone: only the home records its files.
func (g *Gate) loadHome(ctx context.Context, heads, wit map[string]store.ChainHead) (*trust.Home, error) {
	f := g.Files
	own, err := receipts.NewKeys(map[string]core.PublicKey{f.Steward: f.Key})
	if err != nil {
		return nil, err
	}
	return trust.LoadHome(ctx, g.Store, own, chainOf(f.Home, heads, wit))
}

// deriveTrust reads and verifies the home's chain and checks the home's
// files against it, then reads and verifies the grants' chain with every
// trusted issuer's key, or, in a team, with the administrators' alone.
func (g *Gate) deriveTrust(ctx context.Context, heads, wit map[string]store.ChainHead) (*trust.Grants, error) {
	if g.Files != nil {
		home, err := g.loadHome(ctx, heads, wit)
		if err != nil {
			return nil, err
		}
		if err := home.Check(*g.Files); err != nil {
			return nil, err
		}
	}
	keys, err := receipts.NewKeys(g.grantKeys())
	if err != nil {
		return nil, err
	}
	return trust.LoadGrants(ctx, g.Store, keys, chainOf(trust.GrantsSession, heads, wit))
}

// trustRefusal is the verdict for an error that kept the trust state from
// being read or a chain from loading, and whether it is sealed (a store
// that cannot be trusted with a receipt gets none); ok is false for an
// error that is none of these.
func trustRefusal(err error) (v Verdict, sealed, ok bool) {
	var (
		te    *trust.Error
		fault *store.GrantFaultError
	)
	switch {
	case errors.As(err, &fault):
		return deny(CodeStoreCorrupt, "%v", err), true, true
	case errors.Is(err, store.ErrStoreMoved):
		return deny(CodeStoreMoved, "the store this process opened is not the one this home's signed history is bound to, so nothing is decided: %v. "+
			"If the configuration or $JOULE_STORE was changed behind your back, set it back. "+
			"To move the home to this store on purpose, record the move: 'joule store accept-loss' (it seals the change in this store and binds the home to it)", err), false, true
	case errors.As(err, &te) && errors.Is(err, trust.ErrBehind):
		return deny(CodeRolledBack, "the trust chain lost signed receipts, so nothing is decided: %v; restore them ('joule store restore FILE'), or record the loss ('joule store accept-loss') and redo what was lost (a revocation, say)", err), false, true
	case errors.As(err, &te) && errors.Is(err, trust.ErrCorrupt):
		return deny(CodeTrustCorrupt, "the trust chain does not verify, so nothing is decided: %v; 'joule store check' shows it. Restore the store from a backup ('joule store restore FILE', then 'joule store accept-loss')", err), true, true
	case errors.Is(err, trust.ErrIssuersUnsigned):
		return deny(CodeIssuersUnsigned, "the issuers file was changed without a receipt, so nothing is decided: %v. 'joule trust' shows the difference; if the change is yours, record it with 'joule trust accept', else undo it", err), true, true
	case errors.Is(err, trust.ErrConfigUnsigned):
		return deny(CodeConfigUnsigned, "config.json's trust settings were changed without a receipt, so nothing is decided: %v. 'joule trust' shows the difference; if the change is yours, record it with 'joule trust accept', else undo it", err), true, true
	case errors.Is(err, trust.ErrUnrecorded):
		var ue *UnrecordedError
		id := ""
		if errors.As(err, &ue) {
			id = ue.GrantID
		}
		return deny(CodeGrantUnrecorded, "%v. If you issued it, record it with 'joule grant adopt %s'; otherwise make another grant active ('joule grant ls', 'joule grant use ID')", err, id), true, true
	}
	return Verdict{}, false, false
}

// ChainError is why a chain could not be loaded, for a command's error:
// the refusal's reason, naming the way on.
func ChainError(err error) error {
	if v, _, ok := trustRefusal(err); ok && v.Code != CodeStoreCorrupt {
		return fmt.Errorf("%s", v.Reason)
	}
	return err
}
