package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/store"
)

// The functions here are the changes of trust state: issuing a grant,
// choosing the active one, renewing and revoking. Each is one function so
// that each has one place where the signed receipt every such change is
// to carry (a later issue) gets sealed; Renew seals one already.

// ActiveGrant names the active grant wherever a grant id is taken.
const ActiveGrant = "active"

// ErrNoActiveGrant is ResolveGrant's answer to ActiveGrant when no grant
// is active.
var ErrNoActiveGrant = errors.New("no active grant")

// ResolveGrant turns what a person typed for a grant, a whole id, a unique
// prefix of one, or ActiveGrant, into the grant's id. It fails with
// ErrNoActiveGrant, store.ErrNotFound or store.ErrAmbiguous.
func ResolveGrant(ctx context.Context, st *store.Store, arg string) (string, error) {
	if arg == ActiveGrant {
		id, err := st.Setting(ctx, SettingActive)
		if errors.Is(err, store.ErrNotFound) || err == nil && id == "" {
			return "", ErrNoActiveGrant
		}
		return id, err
	}
	return st.ResolveGrant(ctx, arg)
}

// Issue signs gr with is and stores it, and when use makes it the active
// grant. Under a parent it is a delegation: the parent's chain must be in
// the store and verify, gr's window is clipped to the parent's, gr must
// attenuate it, and a zero budget takes what the chain has left, which an
// explicit budget may not exceed. A later issue seals the receipt of the
// issue here.
func (g *Gate) Issue(ctx context.Context, is *grant.Issuer, gr *grant.Grant, parent string, use bool) (*grant.Signed, error) {
	if parent != "" {
		chain, err := g.LoadChain(ctx, parent)
		if err != nil {
			return nil, fmt.Errorf("parent %s: %w", parent, err)
		}
		gr.Parent = parent
		p := chain.Leaf().Grant
		// A child cannot outlive its parent: clip the window rather than fail.
		if gr.NotAfter > p.NotAfter {
			gr.NotAfter = p.NotAfter
		}
		if gr.NotBefore < p.NotBefore {
			gr.NotBefore = p.NotBefore
		}
		if err := grant.Attenuates(p, gr); err != nil {
			return nil, fmt.Errorf("the new grant does not attenuate %s: %w", parent, err)
		}
		explicit := gr.BudgetUJ != 0
		for i, link := range chain {
			rec, err := g.Store.Grant(ctx, link.ID.String())
			if err != nil {
				return nil, err
			}
			if !explicit && (i == 0 || rec.RemainingUJ() < gr.BudgetUJ) {
				gr.BudgetUJ = rec.RemainingUJ()
			}
		}
		if gr.BudgetUJ == 0 {
			return nil, fmt.Errorf("parent %s has no budget left to delegate", parent)
		}
		for _, link := range chain {
			rec, err := g.Store.Grant(ctx, link.ID.String())
			if err != nil {
				return nil, err
			}
			if gr.BudgetUJ > rec.RemainingUJ() {
				return nil, fmt.Errorf("budget %s exceeds what grant %s has left (%s)", grant.FormatEnergy(gr.BudgetUJ), link.ID, grant.FormatEnergy(rec.RemainingUJ()))
			}
		}
	}
	s, err := is.Sign(gr)
	if err != nil {
		return nil, err
	}
	if err := g.Store.PutGrant(ctx, store.GrantRecord{ID: s.ID.String(), Parent: gr.Parent, Signed: s.Envelope, BudgetUJ: gr.BudgetUJ}); err != nil {
		return nil, err
	}
	if use {
		if err := g.Store.SetSetting(ctx, SettingActive, s.ID.String()); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Use makes grant id the active one, for every session or, when session
// is not "", for that session only. The grant's chain must be in force for
// the session it will serve (its own subject when session is ""). A later
// issue seals the receipt of the choice here.
func (g *Gate) Use(ctx context.Context, id, session string) error {
	chain, err := g.LoadChain(ctx, id)
	if err != nil {
		return err
	}
	subject := session
	if subject == "" {
		subject = chain.Leaf().Grant.Subject
	}
	if err := chain.Check(subject, g.now()); err != nil {
		return err
	}
	key := SettingActive
	if session != "" {
		key += ":" + session
	}
	return g.Store.SetSetting(ctx, key, id)
}

// Revoke stops grant id and every grant delegated from it. A later issue
// seals the receipt of the revocation here.
func (g *Gate) Revoke(ctx context.Context, id string) error { return g.Store.Revoke(ctx, id) }

// Renewed is what Renew did.
type Renewed struct {
	Grant   *grant.Signed // the new grant
	Moved   int64         // the active-grant settings moved to it
	Receipt store.Entry   // the receipt naming the old and the new grant
}

// Renew supersedes grant id by a new one signed by is, with the same rules
// and what id has left, valid from now for ttl (zero: as long as id was):
// the new grant is stored and made active wherever id was, a receipt
// naming both is sealed in GrantsSession, and id is revoked (and with it
// what was delegated from it). A renewal under a parent needs the parent
// in force.
func (g *Gate) Renew(ctx context.Context, is *grant.Issuer, id string, ttl time.Duration) (Renewed, error) {
	rec, err := g.Store.Grant(ctx, id)
	if err != nil {
		return Renewed{}, err
	}
	if rec.Revoked {
		return Renewed{}, fmt.Errorf("grant %s is revoked: issue a new one ('joule grant issue --template dev --use')", id)
	}
	old, err := g.Trust.Open(rec.Signed)
	if err != nil {
		return Renewed{}, err
	}
	if fault := rec.ColumnFault(old.ID.String(), SignedFacts(old)); fault != "" {
		return Renewed{}, fmt.Errorf("grant %s: %s (run 'joule store check')", id, fault)
	}
	gr, err := grant.Renewal(old.Grant, rec.RemainingUnder(old.Grant.BudgetUJ), g.now(), ttl)
	if err != nil {
		return Renewed{}, fmt.Errorf("grant %s: %w", id, err)
	}
	if gr.Parent != "" {
		// The renewal cannot outlive the parent it is delegated from.
		chain, err := g.LoadChain(ctx, gr.Parent)
		if err != nil {
			return Renewed{}, err
		}
		if err := chain.Check(gr.Subject, g.now()); err != nil {
			return Renewed{}, fmt.Errorf("grant %s is delegated from %s, which is not in force (%v): renew that one first", id, gr.Parent, err)
		}
	}
	s, err := g.Issue(ctx, is, gr, gr.Parent, false)
	if err != nil {
		return Renewed{}, err
	}
	newID := s.ID.String()
	moved, err := g.Store.ReplaceSetting(ctx, SettingActive, id, newID)
	if err != nil {
		return Renewed{}, err
	}
	en, err := g.SealRecord(ctx, Record{
		Session: GrantsSession, Tool: "joule grant renew", Cwd: g.JouleHome, Code: CodeGrantRenewed,
		Summary: fmt.Sprintf("grant %s renewed as %s", id, newID),
		Reason:  fmt.Sprintf("superseded by %s, with %s left, valid to %s", newID, grant.FormatEnergy(gr.BudgetUJ), time.Unix(gr.NotAfter, 0).UTC().Format(time.RFC3339)),
		Grants:  []string{id, newID}, Input: []byte(id + " " + newID),
	})
	if err != nil {
		return Renewed{}, err
	}
	if err := g.Revoke(ctx, id); err != nil {
		return Renewed{}, err
	}
	return Renewed{Grant: s, Moved: moved, Receipt: en}, nil
}
