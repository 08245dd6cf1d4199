package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/rule"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// The functions here are the changes of trust state: issuing a grant,
// choosing the active one, renewing and revoking it. Each seals its
// receipt into the trust chain (trust.GrantsSession) before it takes
// effect, and the gate reads the trust state from that chain only
// (trustState): a grant row without its issue receipt, a revoked flag set
// back or an active-grant setting changed decide nothing.

// ActiveGrant names the active grant wherever a grant id is taken.
const ActiveGrant = "active"

// ErrNoActiveGrant is ResolveGrant's answer to ActiveGrant when no grant
// is active.
var ErrNoActiveGrant = errors.New("no active grant")

// ResolveGrant turns what a person typed for a grant, a whole id, a unique
// prefix of one, or ActiveGrant, into the grant's id. It fails with
// ErrNoActiveGrant, store.ErrNotFound or store.ErrAmbiguous, or with what
// keeps the trust state from being read.
func (g *Gate) ResolveGrant(ctx context.Context, arg string) (string, error) {
	return g.ResolveGrantAt(ctx, arg, "")
}

// ResolveGrantAt is ResolveGrant with ActiveGrant the grant active for
// directory cwd (a workspace's, else the one for every session).
func (g *Gate) ResolveGrantAt(ctx context.Context, arg, cwd string) (string, error) {
	if arg == ActiveGrant {
		id, err := g.ActiveIDAt(ctx, "", cwd)
		if err == nil && id == "" {
			err = ErrNoActiveGrant
		}
		return id, err
	}
	return g.Store.ResolveGrant(ctx, arg)
}

// ActiveID is the grant the signed trust chain makes active for session
// (its own, else the one for every session; "" for every session alone),
// "" when none is.
func (g *Gate) ActiveID(ctx context.Context, session string) (string, error) {
	ts, err := g.trustState(ctx)
	if err != nil {
		return "", err
	}
	return ts.Active(session), nil
}

// ActiveIDAt is ActiveID for an action run in directory cwd: the
// session's own grant, else the one active for the longest workspace root
// holding cwd, else the one for every session.
func (g *Gate) ActiveIDAt(ctx context.Context, session, cwd string) (string, error) {
	ts, err := g.trustState(ctx)
	if err != nil {
		return "", err
	}
	return activeAt(ts, session, cwd), nil
}

// TrustState is the grant trust state as the signed chain says it now:
// what ActiveChain and LoadChain decide from.
func (g *Gate) TrustState(ctx context.Context) (*trust.Grants, error) { return g.trustState(ctx) }

// Issue signs gr with is and stores it, seals its issue receipt, and when
// use makes it the active grant for every session (a second receipt).
// Under a parent it is a delegation: the parent's chain must be in force
// in the trust chain and verify, gr's window is clipped to the parent's,
// gr must attenuate it, and a zero budget takes what the chain has left,
// which an explicit budget may not exceed.
func (g *Gate) Issue(ctx context.Context, is *grant.Issuer, gr *grant.Grant, parent string, use bool) (*grant.Signed, error) {
	if parent != "" {
		if err := g.delegate(ctx, gr, parent); err != nil {
			return nil, err
		}
	}
	s, err := is.Sign(gr)
	if err != nil {
		return nil, err
	}
	if err := g.record(ctx, s, "joule grant issue", "issued by "+s.IssuerName); err != nil {
		return nil, err
	}
	if use {
		if err := g.activate(ctx, s.ID.String(), ""); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// delegate makes gr a delegation from parent: the parent's chain must be
// recorded, unrevoked and verify, gr's window is clipped to the parent's,
// gr must attenuate it, and a zero budget takes what the chain has left,
// which an explicit budget may not exceed.
func (g *Gate) delegate(ctx context.Context, gr *grant.Grant, parent string) error {
	chain, err := g.LoadChain(ctx, parent)
	if err != nil {
		return fmt.Errorf("parent %s: %w", parent, err)
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
		return fmt.Errorf("the new grant does not attenuate %s: %w", parent, err)
	}
	explicit := gr.BudgetUJ != 0
	for i, link := range chain {
		rec, err := g.Store.Grant(ctx, link.ID.String())
		if err != nil {
			return err
		}
		left := rec.RemainingUnder(link.Grant.BudgetUJ)
		if !explicit && (i == 0 || left < gr.BudgetUJ) {
			gr.BudgetUJ = left
		}
	}
	if gr.BudgetUJ == 0 {
		return fmt.Errorf("parent %s has no budget left to delegate", parent)
	}
	for _, link := range chain {
		rec, err := g.Store.Grant(ctx, link.ID.String())
		if err != nil {
			return err
		}
		if left := rec.RemainingUnder(link.Grant.BudgetUJ); gr.BudgetUJ > left {
			return fmt.Errorf("budget %s exceeds what grant %s has left (%s)", grant.FormatEnergy(gr.BudgetUJ), link.ID, grant.FormatEnergy(left))
		}
	}
	return nil
}

// Adopt records s, a grant signed by a trusted issuer elsewhere or before
// joule recorded issues, as issued: it is stored (if it is not already)
// and its issue receipt is sealed, naming why. A delegated grant's parent
// must be recorded already. With use it is made active for every session.
func (g *Gate) Adopt(ctx context.Context, s *grant.Signed, why string, use bool) error {
	if s.Grant.Parent != "" {
		ts, err := g.trustState(ctx)
		if err != nil {
			return err
		}
		if !ts.Issued(s.Grant.Parent) {
			return fmt.Errorf("grant %s is delegated from %s, which the trust chain records no issue of: adopt that one first", s.ID, s.Grant.Parent)
		}
	}
	opened, err := g.open(s.Envelope)
	if err != nil {
		return fmt.Errorf("grant %s: %w", s.ID, err)
	}
	if opened.ID != s.ID {
		return fmt.Errorf("grant %s: its envelope is grant %s", s.ID, opened.ID)
	}
	if err := g.record(ctx, opened, "joule grant adopt", why); err != nil {
		return err
	}
	if use {
		return g.activate(ctx, s.ID.String(), "")
	}
	return nil
}

// record stores s and seals its issue receipt: the row alone decides
// nothing, the receipt makes it a grant.
func (g *Gate) record(ctx context.Context, s *grant.Signed, tool, reason string) error {
	id := s.ID.String()
	if err := g.Store.PutGrant(ctx, store.GrantRecord{ID: id, Parent: s.Grant.Parent, Signed: s.Envelope, BudgetUJ: s.Grant.BudgetUJ}); err != nil {
		return err
	}
	if s.Grant.Parent != "" {
		reason += ", delegated from " + s.Grant.Parent
	}
	_, err := g.SealRecord(ctx, Record{Session: trust.GrantsSession, Tool: tool, Code: trust.CodeIssued,
		Summary: trust.IssuedSummary(id),
		Reason:  fmt.Sprintf("%s; %s, valid to %s", reason, grant.FormatEnergy(s.Grant.BudgetUJ), time.Unix(s.Grant.NotAfter, 0).UTC().Format(time.RFC3339)),
		Grants:  []string{id}, Input: s.Envelope})
	return err
}

// Use makes grant id the active one, for every session or, when session
// is not "", for that session only, by sealing the receipt of the choice.
// A choice for every session replaces the workspaces' own choices
// (UseWorkspace) made before it; a session's own stays.
// The grant's chain must be recorded, unrevoked and in force for the
// session it will serve (its own subject when session is "").
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
	return g.activate(ctx, id, session)
}

// UseWorkspace makes grant id the active one for the actions whose
// working directory is inside root (absolute, clean, symbolic links
// resolved), by sealing the receipt of the choice. The grant's chain must
// be recorded, unrevoked and in force for its own subject.
func (g *Gate) UseWorkspace(ctx context.Context, id, root string) error {
	if err := trust.ValidRoot(root); err != nil {
		return err
	}
	chain, err := g.LoadChain(ctx, id)
	if err != nil {
		return err
	}
	if err := chain.Check(chain.Leaf().Grant.Subject, g.now()); err != nil {
		return err
	}
	_, err = g.SealRecord(ctx, Record{Session: trust.GrantsSession, Tool: "joule grant use", Code: trust.CodeActivated, Cwd: root,
		Summary: trust.WorkspaceSummary(id, root), Reason: "the active grant for the workspace " + root,
		Grants: []string{id}, Input: []byte(id + "\x00workspace\x00" + root)})
	return err
}

func (g *Gate) activate(ctx context.Context, id, session string) error {
	scope := "every session"
	if session != "" {
		scope = "session " + session
	}
	_, err := g.SealRecord(ctx, Record{Session: trust.GrantsSession, Tool: "joule grant use", Code: trust.CodeActivated,
		Summary: trust.ActivatedSummary(id, session), Reason: "the active grant for " + scope,
		Grants: []string{id}, Input: []byte(id + "\x00" + session)})
	return err
}

// Revoke stops grant id and every grant delegated from it: it seals the
// revocation into the trust chain, which is what every decision reads,
// then marks the row, which the store's own debit paths also refuse.
func (g *Gate) Revoke(ctx context.Context, id string) error {
	if _, err := g.Store.Grant(ctx, id); err != nil {
		return err
	}
	if _, err := g.SealRecord(ctx, Record{Session: trust.GrantsSession, Tool: "joule grant revoke", Code: trust.CodeRevoked,
		Summary: trust.RevokedSummary(id), Reason: "revoked, and with it every grant delegated from it",
		Grants: []string{id}, Input: []byte(id)}); err != nil {
		return err
	}
	return g.Store.Revoke(ctx, id)
}

// Renewed is what Renew did.
type Renewed struct {
	Grant   *grant.Signed // the new grant
	Moved   int64         // the places (every session, one session) it took the old one's
	Receipt store.Entry   // the receipt naming the old and the new grant
}

// Renew supersedes grant id by a new one signed by is, with the same rules
// and what id has left, valid from now for ttl (zero: as long as id was):
// the new grant is stored, and one receipt naming both, sealed in the
// trust chain, issues it, makes it active wherever id was and revokes id
// (and with it what was delegated from it). A renewal under a parent needs
// the parent in force.
func (g *Gate) Renew(ctx context.Context, is *grant.Issuer, id string, ttl time.Duration) (Renewed, error) {
	return g.supersede(ctx, is, id, ttl, nil, "joule grant renew", "")
}

// AllowRule supersedes grant id, as Renew does and with the same receipt,
// by a grant with one more allow rule, r, valid until id's own end (or, if
// id has expired, for as long as id was). An ask rule that is r exactly
// is dropped, since it would hold r back; a deny rule still wins.
func (g *Gate) AllowRule(ctx context.Context, is *grant.Issuer, id, r string) (Renewed, error) {
	parsed, err := rule.Parse(r)
	if err != nil {
		return Renewed{}, fmt.Errorf("rule %q: %w", r, err)
	}
	canon := parsed.String()
	var ttl time.Duration
	add := func(gr *grant.Grant, old *grant.Grant) error {
		if slices.Contains(old.Allow, canon) {
			return fmt.Errorf("grant %s allows %s already", id, canon)
		}
		if end := time.Unix(old.NotAfter, 0); end.After(g.now()) {
			gr.NotAfter = end.Unix()
		}
		gr.Allow = append(gr.Allow, canon)
		gr.Ask = slices.DeleteFunc(gr.Ask, func(a string) bool { return a == canon })
		return nil
	}
	return g.supersede(ctx, is, id, ttl, add, "joule grant allow", "with one more allow rule, "+canon+", ")
}

// supersede issues the successor of grant id: change, when set, edits it
// from the old grant before it is signed, and what says what it changed.
func (g *Gate) supersede(ctx context.Context, is *grant.Issuer, id string, ttl time.Duration, change func(gr, old *grant.Grant) error, tool, what string) (Renewed, error) {
	ts, err := g.trustState(ctx)
	if err != nil {
		return Renewed{}, err
	}
	rec, err := g.Store.Grant(ctx, id)
	if err != nil {
		return Renewed{}, err
	}
	if rec.Revoked || ts.Revoked(id) {
		return Renewed{}, fmt.Errorf("grant %s is revoked: issue a new one ('joule grant issue --template dev --use')", id)
	}
	if !ts.Issued(id) {
		return Renewed{}, unrecorded(id)
	}
	old, err := g.grantKeys().Open(rec.Signed)
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
	if change != nil {
		// Sign validates the changed grant.
		if err := change(gr, old.Grant); err != nil {
			return Renewed{}, err
		}
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
		if err := g.delegate(ctx, gr, gr.Parent); err != nil {
			return Renewed{}, err
		}
	}
	s, err := is.Sign(gr)
	if err != nil {
		return Renewed{}, err
	}
	newID := s.ID.String()
	if err := g.Store.PutGrant(ctx, store.GrantRecord{ID: newID, Parent: gr.Parent, Signed: s.Envelope, BudgetUJ: gr.BudgetUJ}); err != nil {
		return Renewed{}, err
	}
	moved := int64(len(ts.Places(id)))
	en, err := g.SealRecord(ctx, Record{
		Session: trust.GrantsSession, Tool: tool, Cwd: g.JouleHome, Code: trust.CodeRenewed,
		Summary: trust.RenewedSummary(id, newID),
		Reason:  fmt.Sprintf("superseded by %s, %swith %s left, valid to %s", newID, what, grant.FormatEnergy(gr.BudgetUJ), time.Unix(gr.NotAfter, 0).UTC().Format(time.RFC3339)),
		Grants:  []string{id, newID}, Input: []byte(id + " " + newID),
	})
	if err != nil {
		return Renewed{}, err
	}
	if err := g.Store.Revoke(ctx, id); err != nil {
		return Renewed{}, err
	}
	return Renewed{Grant: s, Moved: moved, Receipt: en}, nil
}

// UnrecordedError is a grant stored without its issue receipt.
type UnrecordedError struct{ GrantID string }

func (e *UnrecordedError) Error() string {
	return fmt.Sprintf("grant %s is in the store, but the trust chain (session %s) records no issue of it: it was written there without 'joule grant issue'", e.GrantID, trust.GrantsSession)
}

func (e *UnrecordedError) Unwrap() error { return trust.ErrUnrecorded }

func unrecorded(id string) error { return &UnrecordedError{GrantID: id} }

// RecordFiles seals into the home's own chain what its files say now
// (g.Files): the receipt that makes them the home's signed state. tool is
// the command, reason what it records in words (the issuers' names, the
// settings), for a person reading the chain.
func (g *Gate) RecordFiles(ctx context.Context, tool, reason string) (store.Entry, error) {
	f := g.Files
	if f == nil {
		return store.Entry{}, errors.New("this gate has no home files to record")
	}
	return g.SealRecord(ctx, Record{Session: f.Home, Tool: tool, Code: trust.CodeHome, Cwd: g.JouleHome,
		Summary: trust.HomeSummary(f.Issuers, f.Config), Reason: reason,
		Input: []byte(f.Issuers.String() + "\x00" + f.Config.String())})
}

// HomeState is what the home's chain records and whether its files match
// it now: nil, or an error wrapping trust.ErrIssuersUnsigned or
// trust.ErrConfigUnsigned (or one that kept the chain from being read).
func (g *Gate) HomeState(ctx context.Context) (*trust.Home, error) {
	f := g.Files
	if f == nil {
		return nil, errors.New("this gate has no home files")
	}
	heads, err := g.Store.SessionHeads(ctx, f.Home)
	if err != nil {
		return nil, err
	}
	wit, _ := g.Store.WitnessedChains()
	home, err := g.loadHome(ctx, heads, wit)
	if err != nil {
		return nil, err
	}
	return home, home.Check(*f)
}
