package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/rule"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// Result is the gate's answer to a host: the decision, and where its receipt
// sits. It is what `joule gate` prints.
type Result struct {
	Decision     string          `json:"decision"`
	Code         string          `json:"code"`
	Reason       string          `json:"reason"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	Session      string          `json:"session,omitempty"`
	Sequence     uint64          `json:"sequence,omitempty"`
	Receipt      string          `json:"receipt,omitempty"` // chain hash of the sealed receipt
	Grants       []string        `json:"grants,omitempty"`
	DebitUJ      uint64          `json:"debit_uj"`
}

// Gate is the stateful gate: it loads the active grant chain, decides, and
// seals each decision into the store in one transaction with its debit.
type Gate struct {
	Store     *store.Store
	Sealer    *core.Sealer
	Trust     grant.Trust
	JouleHome string
	Home      string
	Costs     Costs
	Now       func() time.Time
	// Contain, when set, rewrites allowed Bash actions to run under
	// joule exec (see Containment); nil keeps every decision as it is.
	Contain *Containment
	// Hosts is where the hosts read their configuration, protected like
	// joule's own home (ProtectedPaths); the zero value protects no host's.
	Hosts ConfigPaths
	// Files, when set, is what the home's issuers file and config.json
	// said when this gate was made: every decision is refused unless they
	// are what the home's signed chain records (trust.Home.Check). A gate
	// whose Trust comes from elsewhere leaves it nil.
	Files *trust.Files
	// Admins, when set (a team: config.json's team.admins), are the only
	// keys that sign the grants' trust chain and the grants a decision
	// relies on; Trust still verifies every other receipt. Nil: every
	// trusted issuer may.
	Admins grant.Trust
	// TeamWitness, when set (a team whose configuration requires a witness
	// quorum), checks the store against what the witnesses cosigned of
	// every machine's log (witness.CheckTeam); a store that does not extend
	// one is refused, store-rolled-back, though this machine's own
	// checkpoints are extended. Its answer stands for a second.
	TeamWitness func(ctx context.Context) error
	team        teamCheck

	// opened holds grants whose signatures were verified, by the BLAKE3 of
	// their envelope: a resident gate loads the same chain for every
	// decision, and verifying its Ed25519 signatures was a fifth of one.
	// Revocation, expiry and budget are read afresh every time.
	opened sync.Map // core.ID → *grant.Signed

	// checking is the store the gate installed its GrantCheck on.
	checking atomic.Pointer[store.Store]

	// view is the trust state last derived from the signed chains
	// (trustState).
	view atomic.Pointer[trustView]
}

// MalformedSession is the session under which events without a usable
// session id are sealed.
const MalformedSession = "joule:malformed"

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// DecideJSON reads one event and decides it; it never fails: every problem
// is a sealed deny (or, when even the store fails, an unsealed deny).
func (g *Gate) DecideJSON(ctx context.Context, b []byte) Result {
	ev, err := ParseEvent(b)
	if err != nil {
		session := MalformedSession
		var probe struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(b, &probe) == nil && probe.SessionID != "" && len(probe.SessionID) <= 256 && !trust.Reserved(probe.SessionID) {
			session = probe.SessionID
		}
		return g.seal(ctx, &Event{SessionID: session, Tool: "(malformed)", Input: json.RawMessage("{}")}, b, Verdict{Decision: Deny, Code: CodeMalformed, Reason: err.Error()}, nil)
	}
	return g.Decide(ctx, ev)
}

// Decide decides one parsed event and seals the decision.
func (g *Gate) Decide(ctx context.Context, ev *Event) Result { return g.decide(ctx, ev, "", g.Contain) }

// DecideNoAsk is Decide for a host that cannot put an ask to a person for
// this call (JouleHook §3.2): an ask verdict is sealed as the deny the host
// will carry out, saying why, so the receipt records what the host was told.
func (g *Gate) DecideNoAsk(ctx context.Context, ev *Event, host string) Result {
	if host == "" {
		host = "this host"
	}
	return g.decide(ctx, ev, host, g.Contain)
}

// Contained is a Gate deciding with C as its containment in place of the
// Gate's own: one resident gate serves hooks installed with and without
// it, each request in its own mode.
type Contained struct {
	*Gate
	C *Containment
}

// Decide is Gate.Decide with c.C.
func (c Contained) Decide(ctx context.Context, ev *Event) Result {
	return c.Gate.decide(ctx, ev, "", c.C)
}

// DecideNoAsk is Gate.DecideNoAsk with c.C.
func (c Contained) DecideNoAsk(ctx context.Context, ev *Event, host string) Result {
	if host == "" {
		host = "this host"
	}
	return c.Gate.decide(ctx, ev, host, c.C)
}

func (g *Gate) decide(ctx context.Context, ev *Event, cannotAsk string, contain *Containment) Result {
	if trust.Reserved(ev.SessionID) {
		// Only joule's own records enter its sessions: the trust chain
		// holds nothing a host can write.
		refused := *ev
		refused.SessionID = MalformedSession
		return g.seal(ctx, &refused, ev.Input, deny(CodeMalformed, "session id %q is reserved to joule's own records", ev.SessionID), nil)
	}
	chain, isDefault, err := g.activeChainAt(ctx, ev.SessionID, ev.Cwd)
	if err != nil {
		return g.chainRefused(ctx, ev, err)
	}
	if err := g.team.check(ctx, g.TeamWitness, g.now()); errors.Is(err, store.ErrRolledBack) {
		return storeFailure(err)
	}
	if contain != nil && g.Files != nil && contain.Config != (core.ID{}) && contain.Config != g.Files.Config {
		// Read apart from the configuration this gate checked: one of
		// the two was changed in between.
		return g.seal(ctx, ev, ev.Input, deny(CodeConfigUnsigned, "config.json changed while this decision was being made (its containment settings are not the ones checked against the home's signed record): 'joule trust' shows the difference"), chain)
	}
	policy, err := g.Policy(chain)
	if err != nil {
		return g.seal(ctx, ev, ev.Input, deny(CodeGrantInvalid, "%v", err), chain)
	}
	sent := ev.Input // the receipt digests what the host sent
	ev = contain.unwrap(ev)
	policy.Contained = ev.Tool == "Bash" && contain.confines()
	v := Decide(ev, policy)
	if !isDefault && v.Code == CodeNotGranted && strings.Contains(v.Reason, allowHint) {
		// Not the default grant (a workspace's or the session's): the
		// command names it, so that it extends this one wherever it is run.
		v.Reason += " --grant " + chain.Leaf().ID.String()
	}
	if v.Decision == Ask && cannotAsk != "" {
		v = deny(v.Code, "the grant says to ask a person, but %s cannot ask from a hook, so joule denies: %s", cannotAsk, v.Reason)
	}
	v, updated := contain.rewrite(ev, v, policy)
	res := g.seal(ctx, ev, sent, v, chain)
	if res.Decision == Rewrite {
		res.UpdatedInput = updated
	}
	return res
}

// chainRefused seals (or, for a store that cannot take a receipt, only
// returns) the deny of an event whose active chain could not be loaded.
func (g *Gate) chainRefused(ctx context.Context, ev *Event, err error) Result {
	if v, sealed, ok := trustRefusal(err); ok {
		if !sealed {
			return Result{Decision: v.Decision, Code: v.Code, Reason: v.Reason}
		}
		return g.seal(ctx, ev, ev.Input, v, nil)
	}
	code := CodeNoActiveGrant
	switch {
	case errors.Is(err, store.ErrRevoked):
		code = CodeGrantRevoked
	case errors.Is(err, errInvalidGrant):
		code = CodeGrantInvalid
	case isStoreFailure(err):
		return storeFailure(err)
	}
	return g.seal(ctx, ev, ev.Input, deny(code, "%v", err), nil)
}

// Policy builds the decision policy for a chain.
func (g *Gate) Policy(chain grant.Chain) (*Policy, error) {
	var roots []string
	if len(chain) > 0 {
		roots = chain.Leaf().Grant.Roots
	}
	home, jh, protected := resolvedPaths(g.Home, g.JouleHome, roots, g.Hosts, time.Now())
	costs := g.Costs
	if costs == nil {
		costs = DefaultCosts
	}
	p, err := NewPolicy(chain, home, protected, costs, g.now())
	if err != nil {
		return nil, err
	}
	p.Private = []string{jh}
	return p, nil
}

// Resolving the protected paths lstats every component of a few dozen
// paths, which was a quarter of a resident server's CPU per decision. They
// name the user's own configuration, outside any workspace a grant opens,
// so a resident gate re-resolves them at most every pathsTTL.
const pathsTTL = 2 * time.Second

type resolved struct {
	home, jouleHome string
	protected       []string
	at              time.Time
}

var pathCache sync.Map // key → resolved

func resolvedPaths(home, jouleHome string, roots []string, hosts ConfigPaths, now time.Time) (string, string, []string) {
	key := keyOf(home, jouleHome, roots, hosts)
	if v, ok := pathCache.Load(key); ok {
		r := v.(resolved)
		if d := now.Sub(r.at); d >= 0 && d < pathsTTL {
			return r.home, r.jouleHome, slices.Clip(r.protected)
		}
	}
	r := resolved{home: resolveOr(home), jouleHome: resolveOr(jouleHome), at: now}
	for _, p := range ProtectedPaths(r.jouleHome, r.home, roots, hosts) {
		r.protected = append(r.protected, resolveOr(p))
	}
	if len(hosts.Walk) > 0 {
		var resolvedRoots []string
		for _, root := range roots {
			resolvedRoots = append(resolvedRoots, resolveOr(root))
		}
		for _, p := range AncestorPaths(r.home, resolvedRoots, hosts.Walk, exists) {
			r.protected = append(r.protected, resolveOr(p))
		}
	}
	pathCache.Store(key, r)
	return r.home, r.jouleHome, slices.Clip(r.protected)
}

// pathsKey names everything the protected paths are built from. The host
// lists are the registry's, some hundred and twenty paths: they enter as a seeded
// hash, not as a string of every path rebuilt on each decision (which cost
// about 5 µs and 7 kB a decision, a tenth of the decision's budget).
type pathsKey struct {
	home, jouleHome, roots string
	hosts                  uint64
}

var hostsSeed = maphash.MakeSeed()

func keyOf(home, jouleHome string, roots []string, hosts ConfigPaths) pathsKey {
	var h maphash.Hash
	h.SetSeed(hostsSeed)
	for _, list := range [][]string{hosts.Project, hosts.Walk, hosts.User, hosts.Abs} {
		for _, s := range list {
			h.WriteString(s)
			h.WriteByte(0)
		}
		h.WriteByte(1)
	}
	return pathsKey{home: home, jouleHome: jouleHome, roots: strings.Join(roots, "\x00"), hosts: h.Sum64()}
}

// exists reports a path that is there, a dangling symbolic link included:
// a host opening it follows the link, and writing it writes where it leads.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func resolveOr(p string) string {
	if p == "" {
		return ""
	}
	if r, err := rule.Resolve("/", p); err == nil {
		return r
	}
	return p
}

var errInvalidGrant = errors.New("invalid grant")

// ActiveChain loads the grant the signed trust chain makes active for
// session (its own, else the one for every session) and its ancestors,
// verifying each against the trusted issuers.
func (g *Gate) ActiveChain(ctx context.Context, session string) (grant.Chain, error) {
	return g.ActiveChainAt(ctx, session, "")
}

// ActiveChainAt is ActiveChain for an action of session run in directory
// cwd: the session's own grant, else the one active for the longest
// workspace root holding cwd, else the one for every session.
func (g *Gate) ActiveChainAt(ctx context.Context, session, cwd string) (grant.Chain, error) {
	chain, _, err := g.activeChainAt(ctx, session, cwd)
	return chain, err
}

// activeChainAt is ActiveChainAt, and whether the grant is the one for
// every session.
func (g *Gate) activeChainAt(ctx context.Context, session, cwd string) (grant.Chain, bool, error) {
	ts, err := g.trustState(ctx)
	if err != nil {
		return nil, false, err
	}
	id := activeAt(ts, session, cwd)
	if id == "" {
		if cwd != "" {
			return nil, false, fmt.Errorf("no active grant for %s: no grant is active for a workspace holding it, nor for every session: run 'joule init' in its repository, or 'joule grant use ID --workspace DIR'", cwd)
		}
		return nil, false, errors.New("no active grant: run 'joule init' or 'joule grant use ID'")
	}
	chain, err := g.loadChain(ctx, id, ts)
	return chain, id == ts.Default(), err
}

// activeAt is ts.ActiveAt with cwd's symbolic links resolved, which only
// a trust state with workspace choices needs.
func activeAt(ts *trust.Grants, session, cwd string) string {
	if !ts.HasWorkspaces() {
		cwd = ""
	}
	id, _ := ts.ActiveAt(session, resolveOr(cwd))
	return id
}

// LoadChain loads grant id and its ancestors, root first. Everything a
// decision reads of a grant (rules, roots, expiry, budget, parent) comes
// from its verified envelope; a budget_uj or parent column that disagrees
// with it is a *store.GrantFaultError. Whether each was issued and is
// revoked comes from the signed trust chain: a grant it records no issue
// of is an *UnrecordedError.
func (g *Gate) LoadChain(ctx context.Context, id string) (grant.Chain, error) {
	ts, err := g.trustState(ctx)
	if err != nil {
		return nil, err
	}
	return g.loadChain(ctx, id, ts)
}

func (g *Gate) loadChain(ctx context.Context, id string, ts *trust.Grants) (grant.Chain, error) {
	g.checkStore()
	var chain grant.Chain
	for depth := 0; id != ""; depth++ {
		if depth > 16 {
			return nil, fmt.Errorf("%w: delegation chain deeper than 16", errInvalidGrant)
		}
		rec, err := g.Store.Grant(ctx, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("%w: grant %s is not in the store", errInvalidGrant, id)
			}
			return nil, err
		}
		if ts.Revoked(id) {
			return nil, fmt.Errorf("grant %s: %w (session %s seq %d)", id, store.ErrRevoked, trust.GrantsSession, ts.RevokedAt(id))
		}
		if !ts.Issued(id) {
			return nil, unrecorded(id)
		}
		if rec.Revoked {
			// The row says more than the chain: refused all the same.
			return nil, fmt.Errorf("grant %s: %w (its row says so, the trust chain does not: run 'joule store check')", id, store.ErrRevoked)
		}
		s, err := g.open(rec.Signed)
		if err != nil {
			return nil, fmt.Errorf("%w: grant %s: %v", errInvalidGrant, id, err)
		}
		if s.ID.String() != id {
			return nil, fmt.Errorf("%w: stored grant %s has id %s", errInvalidGrant, id, s.ID)
		}
		if err := columnsMatch(rec, s); err != nil {
			return nil, err
		}
		chain = append(grant.Chain{s}, chain...)
		id = s.Grant.Parent
	}
	return chain, nil
}

// columnsMatch reports a grant row whose budget or parent column
// disagrees with its verified envelope (LoadChain has checked the
// envelope's id already).
func columnsMatch(rec store.GrantRecord, s *grant.Signed) error {
	if fault := rec.ColumnFault(rec.ID, SignedFacts(s)); fault != "" {
		return &store.GrantFaultError{GrantID: rec.ID, Reason: fault}
	}
	return nil
}

// SignedFacts is what s signs of the facts the store decides on.
func SignedFacts(s *grant.Signed) store.SignedGrant {
	return store.SignedGrant{Parent: s.Grant.Parent, BudgetUJ: s.Grant.BudgetUJ}
}

// checkStore installs, once per store, the gate's envelope check on the
// store's decision paths (store.CheckGrantsWith), so that a debit or a
// reservation reads a grant's budget from its verified envelope, sharing
// the gate's cache of verified envelopes.
func (g *Gate) checkStore() {
	if g.Store == nil || g.checking.Load() == g.Store {
		return
	}
	g.Store.CheckGrantsWith(g.CheckGrant)
	g.checking.Store(g.Store)
}

// CheckGrant is the gate's store.GrantCheck: it verifies a stored grant
// envelope against the trusted issuers (once per envelope) and that id is
// its own.
func (g *Gate) CheckGrant(id string, signed []byte) (store.SignedGrant, error) {
	s, err := g.open(signed)
	if err != nil {
		return store.SignedGrant{}, err
	}
	if s.ID.String() != id {
		return store.SignedGrant{}, fmt.Errorf("the envelope is grant %s", s.ID)
	}
	return SignedFacts(s), nil
}

// grantKeys are the keys that sign grants and the grants' trust chain: a
// team's administrators, else every trusted issuer.
func (g *Gate) grantKeys() grant.Trust {
	if g.Admins != nil {
		return g.Admins
	}
	return g.Trust
}

// open verifies a grant envelope against the trusted issuers, once per
// envelope for as long as its issuer stays trusted with the same key.
func (g *Gate) open(env []byte) (*grant.Signed, error) {
	key := core.Sum(env)
	if v, ok := g.opened.Load(key); ok {
		s := v.(*grant.Signed)
		if k, trusted := g.grantKeys()[s.IssuerName]; trusted && k == s.Grant.Issuer {
			return s, nil
		}
		g.opened.Delete(key)
	}
	s, err := g.grantKeys().Open(env)
	if err != nil {
		return nil, err
	}
	g.opened.Store(key, s)
	return s, nil
}

func isStoreFailure(err error) bool {
	return errors.Is(err, store.ErrStoreMoved) || errors.Is(err, store.ErrLocked) || errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrRolledBack) || errors.Is(err, store.ErrWitnessInvalid) || errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrNotStore) || errors.Is(err, store.ErrTooNew)
}

func storeFailure(err error) Result {
	if v, sealed, ok := trustRefusal(err); ok && !sealed {
		return Result{Decision: v.Decision, Code: v.Code, Reason: v.Reason}
	}
	switch {
	case errors.Is(err, store.ErrRolledBack):
		return Result{Decision: Deny, Code: CodeRolledBack, Reason: "the receipt store was rolled back, so nothing is decided until the loss is accepted ('joule store accept-loss'): " + err.Error()}
	case errors.Is(err, store.ErrWitnessInvalid):
		return Result{Decision: Deny, Code: CodeWitnessInvalid, Reason: "the store's witness cannot be trusted, so nothing is decided until the loss is accepted ('joule store accept-loss'): " + err.Error()}
	}
	return Result{Decision: Deny, Code: CodeStoreError, Reason: "the receipt store is unavailable, so nothing can be allowed: " + err.Error()}
}

// seal records v as a decision receipt, debiting allow and ask from every
// link in the same transaction. A debit that fails turns the decision into
// a deny before it is sealed.
func (g *Gate) seal(ctx context.Context, ev *Event, input []byte, v Verdict, chain grant.Chain) Result {
	ids := chain.IDs()
	// An action is allowed only on a log the witness quorum cosigned; a
	// deny needs no witness.
	req := store.SealRequest{Session: ev.SessionID, RequireWitness: v.Decision != Deny}
	if v.Decision != Deny && v.CostUJ > 0 && len(ids) > 0 {
		req.Debit, req.AmountUJ = ids, v.CostUJ
	}
	now := g.now()
	// Everything that does not depend on the position is computed before
	// the write transaction, which holds the store's lock.
	summary, digest := Summarize(ev), core.Sum(input)
	var final Verdict
	req.Build = func(pos store.Position, debitErr error) ([]byte, bool, error) {
		final = v
		if debitErr != nil {
			final = debitVerdict(debitErr, v.CostUJ)
		}
		if final.Decision == Deny {
			final.CostUJ = 0
		}
		act := receipts.Act{Time: now, Tool: ev.Tool, InputDigest: digest, Summary: summary, Cwd: ev.Cwd,
			Decision: final.Decision, Code: final.Code, Reason: final.Reason, Grants: ids, DebitUJ: final.CostUJ}
		if ev.ContentID != nil {
			act.ContentID = *ev.ContentID
		}
		env, err := receipts.SealDecision(g.Sealer, link(pos), act)
		return env, final.Decision != Deny, err
	}
	e, err := g.Store.Seal(ctx, req)
	if err != nil {
		if w := witnessRefusal(err); w != nil && req.RequireWitness {
			return g.seal(ctx, ev, input, *w, chain)
		}
		return storeFailure(err)
	}
	if final.Decision != Deny && req.RequireWitness {
		// The action runs only once its receipt is witnessed.
		if err := g.Store.AwaitWitness(ctx, e.Index+1); err != nil {
			return g.seal(ctx, ev, input, withdrawn(e, final.Decision, err), chain)
		}
	}
	return Result{Decision: final.Decision, Code: final.Code, Reason: final.Reason, Session: e.Session,
		Sequence: e.Seq, Receipt: core.ID(e.Hash).String(), Grants: ids, DebitUJ: final.CostUJ}
}

func debitVerdict(err error, cost uint64) Verdict {
	var (
		be    *store.BudgetError
		fault *store.GrantFaultError
	)
	switch {
	case errors.As(err, &fault):
		return deny(CodeStoreCorrupt, "%v", err)
	case errors.As(err, &be):
		return deny(CodeBudgetExceeded, "grant %s has %s left; this action costs %s", be.GrantID, grant.FormatEnergy(be.RemainingUJ), grant.FormatEnergy(cost))
	case errors.Is(err, store.ErrRevoked):
		return deny(CodeGrantRevoked, "%v", err)
	}
	return deny(CodeGrantInvalid, "debit failed: %v", err)
}

// link is where pos places a receipt in its session's chain.
func link(pos store.Position) receipts.Link {
	return receipts.Link{Session: pos.Session, Sequence: pos.Seq, Prev: pos.Prev}
}

// ConsultTier gates one consultation of a cascade tier (Joule Code §5.1):
// the tier verb must be in every link, the reference cost is debited from
// every link, and the consultation is sealed, allow or deny.
func (g *Gate) ConsultTier(ctx context.Context, session, cwd string, tier core.Tier) Result {
	ev := &Event{SessionID: session, Tool: "cascade:" + string(tier), Input: json.RawMessage("{}"), Cwd: cwd}
	if trust.Reserved(session) {
		ev.SessionID = MalformedSession
		return g.seal(ctx, ev, ev.Input, deny(CodeMalformed, "session id %q is reserved to joule's own records", session), nil)
	}
	chain, err := g.ActiveChainAt(ctx, session, cwd)
	if err != nil {
		return g.chainRefused(ctx, ev, err)
	}
	return g.seal(ctx, ev, ev.Input, DecideTier(chain, session, tier, g.now()), chain)
}

// DecideTier is the pure tier check of ConsultTier.
func DecideTier(chain grant.Chain, session string, tier core.Tier, now time.Time) Verdict {
	if len(chain) == 0 {
		return deny(CodeNoActiveGrant, "no active grant")
	}
	if err := chain.Check(session, now); err != nil {
		return deny(chainCode(err), "%v", err)
	}
	for _, s := range chain {
		if !s.Grant.HasTier(tier) {
			return deny(CodeNotGranted, "tier %s is not granted: grant %s does not name the verb %s", tier, s.ID, grant.Verb(tier))
		}
	}
	return Verdict{Decision: Allow, Code: CodeAllowed, Reason: fmt.Sprintf("tier %s is granted", tier), CostUJ: TierCosts[tier]}
}

// Summarize gives a receipt's one-line, secret-redacted account of what the
// action was: the command, the path or the URL; never file contents.
func Summarize(ev *Event) string {
	m, err := ev.inputFields()
	if err != nil {
		return ev.Tool
	}
	// Cut long values before redacting (the regexps are linear, but a 10 MB
	// command is not worth scanning for a 300-byte summary).
	get := func(k string) string {
		s, _ := stringField(m, k, false)
		if len(s) > 4096 {
			s = s[:4096]
		}
		return s
	}
	var s string
	switch ev.Tool {
	case "Bash":
		s = "Bash: " + Redact(get("command"))
	case "WebFetch":
		if u, err := url.Parse(get("url")); err == nil {
			u.RawQuery = ""
			s = "WebFetch: " + u.Redacted()
		}
	default:
		if k, ok := pathKeys[ev.Tool]; ok {
			s = ev.Tool + ": " + get(k)
		} else {
			s = ev.Tool
		}
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
