package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/energy/proxy"
)

func init() {
	register(&command{name: "init", summary: "create the key, the store and a default grant for this workspace", run: runInit})
	register(&command{name: "grant", summary: "issue, list, show, use, renew or revoke grants", run: runGrant})
}

// listFlag collects a repeatable flag; commas also separate values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// shortDuration is d without its zero minutes and seconds: 8h, 1h30m.
func shortDuration(d time.Duration) string {
	t := d.Round(time.Second).String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}

// ttlFlag is a --ttl: a Go duration, or whole days ("1d", "2d12h").
type ttlFlag time.Duration

// ttlForm is what a --ttl error shows.
const ttlForm = "a number with its unit: 8h, 90m, 2h30m or 1d"

func (t *ttlFlag) String() string { return time.Duration(*t).String() }
func (t *ttlFlag) Set(v string) error {
	d, err := parseTTL(v)
	if err != nil {
		return fmt.Errorf("want %s", ttlForm)
	}
	*t = ttlFlag(d)
	return nil
}

// parseTTL parses a duration that may start with whole days.
func parseTTL(v string) (time.Duration, error) {
	days, rest, ok := strings.Cut(v, "d")
	if !ok {
		return time.ParseDuration(v)
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(days, "+"), 10, 16)
	if err != nil || days == "" {
		return 0, fmt.Errorf("bad days %q", days)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return 0, fmt.Errorf("bad duration %q", rest)
		}
		d += r
	}
	return d, nil
}

// noTiersNote is said when a grant is issued without tier verbs.
const noTiersNote = "note: this grant names no tier verbs, so 'joule acp' may consult no tier under it (L0 included) and every request resolves to nothing; " +
	"issue it with --tiers l0,l1,l2 (add l3, l4 for a local model and a remote agent) or from --template dev to let the cascade run"

// issueFlags are the flags init and grant issue share.
type issueFlags struct {
	template         string
	allow, ask, deny listFlag
	tiers            string
	budget           string
	ttl              ttlFlag
	parent, subject  string
	workspaces       listFlag
	use              bool
	unmatched        string
}

func (f *issueFlags) register(fs *flag.FlagSet, defTemplate string) {
	fs.StringVar(&f.template, "template", defTemplate, "start from a named template: readonly, dev or ci")
	fs.Var(&f.allow, "allow", "an allow rule, e.g. 'Bash(go test:*)' (repeatable)")
	fs.Var(&f.ask, "ask", "an ask rule: held until a human approves (repeatable)")
	fs.Var(&f.deny, "deny", "a deny rule: wins over allow and ask (repeatable)")
	fs.StringVar(&f.tiers, "tiers", "", "cascade tier verbs, e.g. l0,l1,l2 (default: the template's)")
	fs.StringVar(&f.budget, "budget", "", "joule budget with a case-exact unit: µJ, mJ, J, kJ, MJ, GJ, Wh, kWh, MWh (default: the template's; without a template 30MJ, or with --parent what the parent has left)")
	fs.Var(&f.ttl, "ttl", "how long the grant is valid: 8h, 90m, 2h30m or 1d (default: the template's, or 8h)")
	fs.StringVar(&f.parent, "parent", "", "delegate from this grant: the new grant must attenuate it")
	fs.StringVar(&f.subject, "subject", grant.AnySubject, "the session that may use the grant, or * for any")
	fs.Var(&f.workspaces, "workspace", "a workspace root (repeatable; default: the current directory)")
	fs.BoolVar(&f.use, "use", false, "make the new grant the active one")
	fs.StringVar(&f.unmatched, "unmatched", "deny", "what a command or fetch no rule settles gets: deny, or ask (the host's own prompt decides; an ask rule Bash and WebFetch, below every allow rule)")
}

// build turns the flags into a grant (unsigned), saying what is wrong in
// the flags' terms.
func (f *issueFlags) build(now time.Time) (*grant.Grant, error) {
	spec := grant.Spec{Subject: f.subject, Allow: f.allow, Ask: f.ask, Deny: f.deny, TTL: time.Duration(f.ttl),
		Delegated: f.parent != "", Roots: f.workspaces}
	if f.template != "" {
		tpl, err := grant.LookupTemplate(f.template)
		if err != nil {
			return nil, usagef("%v", err)
		}
		spec.Template = &tpl
	}
	if f.tiers != "" {
		spec.Tiers = grant.ParseTiers(f.tiers)
	}
	switch f.unmatched {
	case "deny", "":
	case "ask":
		spec.Ask = append(slices.Clip(spec.Ask), unmatchedAsk...)
	default:
		return nil, usagef("--unmatched %s: want deny or ask", f.unmatched)
	}
	if f.budget != "" {
		uj, err := grant.ParseBudget(f.budget)
		switch {
		case errors.Is(err, grant.ErrNoBudget):
			return nil, usagef("--budget %s: %v; give an amount, e.g. --budget 30MJ", f.budget, err)
		case err != nil:
			return nil, usagef("--budget: %v", err)
		}
		spec.BudgetUJ = uj
	}
	if spec.BudgetUJ > 0 && spec.BudgetUJ < cheapestAction() {
		return nil, usagef("--budget %s is less than the cheapest action costs (%s, a Read at the default costs): the grant could allow nothing; e.g. --budget 30MJ", f.budget, grant.FormatEnergy(cheapestAction()))
	}
	g, err := spec.Build(now)
	var bad *grant.SpecError
	if errors.As(err, &bad) {
		switch bad.Field {
		case "ttl":
			return nil, usagef("--ttl %s: want a positive duration, %s", time.Duration(f.ttl), ttlForm)
		case "workspace":
			return nil, usagef("--workspace %s is not a directory", bad.Value)
		default:
			return nil, usagef("%v", bad.Err)
		}
	}
	return g, err
}

// unmatchedAsk are the ask rules of --unmatched ask: whole-tool rules,
// which rank below every allow rule that names what it matches.
var unmatchedAsk = []string{"Bash", "WebFetch"}

// initActivation is where joule init made its grant active.
type initActivation struct {
	roots  []string // the workspace roots it is active for
	isDflt bool     // also for every session: the directories in no workspace
	dflt   string   // else the grant that stays active for every session
	dfltAt []string // and its workspaces
}

// activateInit makes grant id active for each of its workspace roots, so
// that joule init in a second repository adds a workspace with its own
// grant instead of taking the first one's away. It also becomes the grant
// for every session (the directories in no workspace of their own) when
// none in force is, or when the one that is was the grant of a root this
// init replaces; else that one stays.
func activateInit(ctx context.Context, ep *endpoint, id string, roots []string) (initActivation, error) {
	var act initActivation
	gt, _, err := ep.grants()
	if err != nil {
		return act, err
	}
	ts, err := gt.TrustState(ctx)
	if err != nil {
		return act, err
	}
	prev := ts.Default()
	replace := prev == ""
	if prev != "" {
		if !inForce(ctx, gt, prev) {
			replace = true // revoked, expired or not usable: nothing to keep
		} else if chain, err := gt.LoadChain(ctx, prev); err == nil {
			replace = ownedBy(ts, prev, roots, chain.Leaf().Grant.Roots)
		}
	}
	if replace {
		// First: a choice for every session drops the workspaces' own,
		// which is what a first init (or one replacing an expired
		// default) means; another workspace's in force stays below.
		kept := map[string]string{}
		for _, root := range ts.Workspaces() {
			if other := ts.WorkspaceGrant(root); other != prev && inForce(ctx, gt, other) {
				kept[root] = other
			}
		}
		if err := gt.Use(ctx, id, ""); err != nil {
			return act, err
		}
		for _, root := range slices.Sorted(maps.Keys(kept)) {
			if err := gt.UseWorkspace(ctx, kept[root], root); err != nil {
				return act, fmt.Errorf("workspace %s: %w", root, err)
			}
		}
		act.isDflt = true
	} else {
		act.dflt, act.dfltAt = prev, ts.ActiveRoots(prev)
	}
	for _, r := range roots {
		root := canonicalDir(r)
		if err := gt.UseWorkspace(ctx, id, root); err != nil {
			return act, fmt.Errorf("workspace %s: %w", root, err)
		}
		act.roots = append(act.roots, root)
	}
	return act, nil
}

// inForce reports whether grant id's chain is recorded, unrevoked and in
// force for its own subject.
func inForce(ctx context.Context, gt *gate.Gate, id string) bool {
	chain, err := gt.LoadChain(ctx, id)
	return err == nil && chain.Check(chain.Leaf().Grant.Subject, time.Now()) == nil
}

// ownedBy reports whether the default grant prev belongs to the roots an
// init replaces: it is the grant of one of them, or (made before
// workspaces had grants of their own) it is active for no workspace and
// every root it opens is one of them.
func ownedBy(ts *trust.Grants, prev string, roots, prevRoots []string) bool {
	for _, r := range roots {
		if ts.WorkspaceGrant(canonicalDir(r)) == prev {
			return true
		}
	}
	if len(ts.ActiveRoots(prev)) > 0 || len(prevRoots) == 0 {
		return false
	}
	for _, pr := range prevRoots {
		if !slices.ContainsFunc(roots, func(r string) bool { return canonicalDir(r) == canonicalDir(pr) }) {
			return false
		}
	}
	return true
}

// canonicalDir is dir absolute, clean and with its symbolic links
// resolved where it exists: the form a workspace choice names, as the
// gate resolves an action's directory before looking it up.
func canonicalDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// cheapestAction is what the cheapest gated action costs by default.
func cheapestAction() uint64 {
	least := uint64(0)
	for _, uj := range gate.DefaultCosts {
		if least == 0 || uj < least {
			least = uj
		}
	}
	return least
}

// modelCallFloor is the least a model call through joule proxy holds:
// the proxy's floor of output tokens at the frontier (Sonnet-class) rate,
// before any input.
func modelCallFloor() uint64 {
	return energy.DefaultRates[energy.Frontier].Of(energy.Usage{Output: proxy.DefaultFloor})
}

// budgetWarnings are what a person should know of a budget too small for
// the work it is meant for, each with the figure.
func budgetWarnings(uj uint64) []string {
	var out []string
	if bash := gate.DefaultCosts.Of("Bash"); uj < bash {
		out = append(out, fmt.Sprintf("warning: the budget, %s, is less than one shell command costs (%s at the default costs): every Bash call would be denied budget-exhausted", grant.FormatEnergy(uj), grant.FormatEnergy(bash)))
	}
	if call := modelCallFloor(); uj < call {
		out = append(out, fmt.Sprintf("warning: the budget, %s, is less than one model call through joule proxy holds (%s: %d output tokens at the Sonnet-class rate, before its input; docs/meter.md): every metered model call would be refused; a day of coding is about 9 MJ (--budget 30MJ)", grant.FormatEnergy(uj), grant.FormatEnergy(call), proxy.DefaultFloor))
	}
	return out
}

// grants is the gate that changes trust state (issue, revoke): it needs the
// store, the key and the trusted issuers, not the costs and host paths a
// decision reads from the configuration.
func (ep *endpoint) grants() (*gate.Gate, *grant.Issuer, error) {
	is, err := grant.NewIssuer(ep.id.Steward, ep.id.Key)
	if err != nil {
		return nil, nil, err
	}
	sealer, err := ep.id.Sealer()
	if err != nil {
		return nil, nil, err
	}
	return &gate.Gate{Store: ep.store, Sealer: sealer, Trust: ep.trust, Admins: ep.cfg.TeamAdmins, JouleHome: ep.home, Files: &ep.files}, is, nil
}

// issue signs g (checking delegation against the stored parent) and stores it.
func issue(ctx context.Context, ep *endpoint, g *grant.Grant, parent string, use bool) (*grant.Signed, error) {
	gt, is, err := ep.grants()
	if err != nil {
		return nil, err
	}
	return gt.Issue(ctx, is, g, parent, use)
}

func runInit(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "init", "init [--steward NAME] [--template dev] [grant flags]\n\nCreates the endpoint key (if missing) and the store in $JOULE_HOME, then\nissues a grant scoped to the current project from a template (dev by\ndefault) and makes it active for that workspace, so a new user is never\nsilently locked out: joule init in a second repository adds a workspace\nwith its own grant and leaves the first one's as it is. The first grant\nissued (or one replacing an expired one) is also the default, for\ndirectories in no workspace.\nThe project is the root of the git work tree the current directory is in\n(else the current directory); / and the home directory are refused\nwithout --force.")
	var f issueFlags
	f.register(fs, "dev")
	steward := fs.String("steward", "", "the endpoint identity, if a key is created (default: joule@HOSTNAME)")
	force := fs.Bool("force", false, "grant a workspace at / or your home directory all the same")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	roots, err := initWorkspaces(e, f.workspaces, *force)
	if err != nil {
		return err
	}
	f.workspaces = roots
	home, err := identity.Home()
	if err != nil {
		return err
	}
	created := false
	if _, err := identity.Load(home); errors.Is(err, identity.ErrNoKey) {
		if *steward == "" {
			*steward = defaultSteward()
		}
		if _, err := identity.Create(home, *steward, false); err != nil {
			return err
		}
		created = true
	} else if err != nil {
		return err
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	// A home whose witness remembers a log the store no longer holds (a
	// deleted or wiped store) is not started over silently.
	if err := ep.witnessProblem(ctx); err != nil {
		return err
	}
	g, err := f.build(time.Now())
	if err != nil {
		return err
	}
	// The issuers file and config.json found here are what the person
	// running init starts from: recorded, unless they are already.
	recorded, err := recordFilesIfChanged(ctx, ep, "joule init", "the files joule init found")
	if err != nil {
		return err
	}
	s, err := issue(ctx, ep, g, f.parent, false)
	if err != nil {
		return err
	}
	act, err := activateInit(ctx, ep, s.ID.String(), g.Roots)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(e.stdout, "created key    %s (%s)\n", ep.id.Steward, ep.id.Public())
	} else {
		fmt.Fprintf(e.stdout, "using key      %s (%s)\n", ep.id.Steward, ep.id.Public())
	}
	fmt.Fprintf(e.stdout, "store          %s\n", ep.store.Path())
	if recorded != nil {
		fmt.Fprintf(e.stdout, "recorded       the issuers file and config.json's trust settings (session %s seq %d)\n", recorded.Session, recorded.Seq)
	}
	printGrantSummary(e, s, g.BudgetUJ)
	fmt.Fprintf(e.stdout, "active         for %s: every session working there decides against this grant\n", strings.Join(act.roots, ", "))
	switch {
	case act.isDflt:
		fmt.Fprintln(e.stdout, "default        yes: a directory in no workspace with a grant of its own is decided by this grant too")
	case len(act.dfltAt) > 0:
		fmt.Fprintf(e.stdout, "default        %s stays the grant for directories in no workspace (and for %s); 'joule grant ls' lists each workspace's\n", act.dflt, strings.Join(act.dfltAt, ", "))
	default:
		fmt.Fprintf(e.stdout, "default        %s stays the grant for directories in no workspace; 'joule grant ls' lists each workspace's\n", act.dflt)
	}
	fmt.Fprintf(e.stdout, "expires        in %s, at %s: then every call is denied grant-expired until 'joule grant renew active'\n",
		shortDuration(time.Unix(g.NotAfter, 0).Sub(time.Unix(g.NotBefore, 0))), time.Unix(g.NotAfter, 0).Local().Format("15:04 MST on Mon 2 Jan"))
	for _, w := range budgetWarnings(g.BudgetUJ) {
		fmt.Fprintln(e.stderr, w)
	}
	return nil
}

func printGrantSummary(e *env, s *grant.Signed, remaining uint64) {
	g := s.Grant
	fmt.Fprintf(e.stdout, "grant          %s\n", s.ID)
	fmt.Fprintf(e.stdout, "workspace      %s\n", strings.Join(g.Roots, ", "))
	fmt.Fprintf(e.stdout, "budget         %s (%s left)\n", grant.FormatEnergy(g.BudgetUJ), grant.FormatEnergy(remaining))
	fmt.Fprintf(e.stdout, "tiers          %s\n", strings.Join(g.Tiers, ","))
	fmt.Fprintf(e.stdout, "valid          %s to %s\n", time.Unix(g.NotBefore, 0).UTC().Format(time.RFC3339), time.Unix(g.NotAfter, 0).UTC().Format(time.RFC3339))
	fmt.Fprintf(e.stdout, "allow          %s\n", strings.Join(g.Allow, " "))
	if len(g.Ask) > 0 {
		fmt.Fprintf(e.stdout, "ask            %s\n", strings.Join(g.Ask, " "))
	}
	if len(g.Deny) > 0 {
		fmt.Fprintf(e.stdout, "deny           %s\n", strings.Join(g.Deny, " "))
	}
}

const grantUsage = `grant issue [flags] | grant ls | grant show ID | grant use ID [--session S | --workspace DIR]
       grant allow RULE [--grant ID] | grant renew ID [--ttl D] | grant revoke ID
       grant adopt ID [--use]

issue signs a new grant with the endpoint key and stores it; ls lists grants
with their budgets and where each is active; show prints one as JSON; use
makes one active (for every session, which replaces the workspaces' own
choices; for one session; or with --workspace DIR for the actions whose
working directory is inside DIR, which the gate prefers to the default); allow replaces the active one by a grant with one more
allow rule (the rule every 'not granted' deny names); renew replaces one (expired or not) by a new signed grant
with the same rules and what the old one has left, valid from now, active
wherever the old one was; revoke stops one and every grant delegated from it;
adopt records as issued a grant that is in the store without its issue
receipt (signed by a trusted issuer elsewhere, or before joule recorded
issues). Each change seals a receipt into the trust chain (session
` + gate.GrantsSession + `) before it takes effect: the gate reads which grants
exist, which are revoked and which is active from those receipts only.
An ID may be any unique prefix of a grant id, or 'active' for the grant
active here (the workspace's holding the current directory, else the
default).`

func runGrant(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("grant: want a subcommand: issue, ls, show, use, allow, renew or revoke")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "-h", "--help", "help":
		fmt.Fprintf(e.stdout, "usage: joule %s\n", grantUsage)
		return nil
	case "issue":
		fs := newFlags(e, "grant issue", "grant issue [--template T] [--allow R]... [--ask R]... [--deny R]... [--tiers l0,l1] [--budget 50J] [--ttl 8h] [--parent ID] [--subject S] [--workspace DIR]... [--use]")
		var f issueFlags
		f.register(fs, "")
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if err := noArgs(fs); err != nil {
			return err
		}
		g, err := f.build(time.Now())
		if err != nil {
			return err
		}
		if f.template == "" && len(f.allow)+len(f.ask) == 0 {
			return usagef("grant issue: give a --template or at least one --allow or --ask rule")
		}
		ep, err := openEndpoint()
		if err != nil {
			return err
		}
		defer ep.Close()
		if f.parent != "" {
			if f.parent, err = resolveGrant(ctx, ep, f.parent); err != nil {
				return err
			}
		}
		s, err := issue(ctx, ep, g, f.parent, f.use)
		if err != nil {
			return err
		}
		printGrantSummary(e, s, g.BudgetUJ)
		if len(g.Tiers) == 0 {
			fmt.Fprintln(e.stderr, noTiersNote)
		}
		for _, w := range budgetWarnings(g.BudgetUJ) {
			fmt.Fprintln(e.stderr, w)
		}
		return nil
	case "renew":
		return grantRenew(ctx, e, rest)
	case "allow":
		return grantAllow(ctx, e, rest)
	case "ls", "show", "use", "revoke", "adopt":
	default:
		return usagef("grant: unknown subcommand %q (want issue, ls, show, use, allow, renew, revoke or adopt)", sub)
	}
	fs := newFlags(e, "grant "+sub, grantUsage)
	session, workspace, use := "", "", false
	if sub == "use" {
		fs.StringVar(&session, "session", "", "make the grant active for this session only")
		fs.StringVar(&workspace, "workspace", "", "make the grant active for the actions whose working directory is inside DIR")
	}
	if sub == "adopt" {
		fs.BoolVar(&use, "use", false, "make the grant the active one too")
	}
	asJSON := false
	if sub == "ls" {
		fs.BoolVar(&asJSON, "json", false, "print JSON (an array of objects) instead of a table")
	}
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	open := openEndpoint
	if sub == "ls" || sub == "show" {
		open = openReader
	}
	ep, err := open()
	if err != nil {
		return err
	}
	defer ep.Close()
	if sub == "ls" {
		if err := noArgs(fs); err != nil {
			return err
		}
		return grantList(ctx, e, ep, asJSON)
	}
	if fs.NArg() != 1 {
		return usagef("grant %s: want one grant id", sub)
	}
	id, err := resolveGrant(ctx, ep, fs.Arg(0))
	if err != nil {
		return err
	}
	rec, err := ep.store.Grant(ctx, id)
	if err != nil {
		return err
	}
	switch sub {
	case "show":
		s, err := ep.trust.Open(rec.Signed)
		if err != nil {
			return err
		}
		gt, _, err := ep.grants()
		if err != nil {
			return err
		}
		out := map[string]any{"id": id, "grant": s.Grant, "issuer_name": s.IssuerName, "spent_uj": rec.SpentUJ,
			"reserved_uj": rec.ReservedUJ, "remaining_uj": rec.RemainingUnder(s.Grant.BudgetUJ), "revoked": rec.Revoked}
		if fault := rec.ColumnFault(s.ID.String(), gate.SignedFacts(s)); fault != "" {
			out["store_fault"] = fault + ": decisions on this grant are denied store-corrupt (run 'joule store check')"
		}
		if ts, err := gt.TrustState(ctx); err != nil {
			out["trust_fault"] = err.Error()
		} else {
			out["revoked"] = ts.Revoked(id) || rec.Revoked
			out["recorded"] = ts.Issued(id)
			if places := ts.Places(id); len(places) > 0 {
				out["active_for"] = places
			}
			if at := ts.IssuedAt(id); at > 0 {
				out["issued_at"] = fmt.Sprintf("session %s seq %d", gate.GrantsSession, at)
			} else {
				out["trust_fault"] = "no issue of this grant is recorded in the trust chain: decisions on it are denied grant-unrecorded; 'joule grant adopt " + id + "' records it"
			}
			if at := ts.RevokedAt(id); at > 0 {
				out["revoked_at"] = fmt.Sprintf("session %s seq %d", gate.GrantsSession, at)
			} else if rec.Revoked {
				out["trust_fault"] = "the row says revoked, the trust chain does not (run 'joule store check')"
			}
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
	case "use":
		gt, err := ep.gate()
		if err != nil {
			return err
		}
		if workspace != "" {
			if session != "" {
				return usagef("grant use: give --session or --workspace, not both")
			}
			return grantUseWorkspace(ctx, e, ep, gt, id, workspace)
		}
		if err := gt.Use(ctx, id, session); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "active grant %s\n", id)
	case "revoke":
		gt, _, err := ep.grants()
		if err != nil {
			return err
		}
		if err := gt.Revoke(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked %s (and every grant delegated from it)\n", id)
	case "adopt":
		gt, _, err := ep.grants()
		if err != nil {
			return err
		}
		s, err := ep.trust.Open(rec.Signed)
		if err != nil {
			return fmt.Errorf("grant %s: %w: only a grant signed by a trusted issuer can be adopted", id, err)
		}
		if ts, err := gt.TrustState(ctx); err != nil {
			return err
		} else if ts.Issued(id) {
			return fmt.Errorf("grant %s is recorded already (session %s seq %d)", id, gate.GrantsSession, ts.IssuedAt(id))
		}
		if err := gt.Adopt(ctx, s, "adopted: signed by "+s.IssuerName+", found in the store without its issue receipt", use); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "adopted %s: its issue is recorded in session %s\n", id, gate.GrantsSession)
		if use {
			fmt.Fprintf(e.stdout, "active grant %s\n", id)
		}
	}
	return nil
}

// grantUseWorkspace is joule grant use ID --workspace DIR: the choice is
// sealed in the trust chain; a grant whose roots do not hold DIR is made
// active all the same, with a warning, since every write there would be
// denied outside-workspace.
func grantUseWorkspace(ctx context.Context, e *env, ep *endpoint, gt *gate.Gate, id, dir string) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usagef("grant use: --workspace %s is not a directory", dir)
	}
	root := canonicalDir(dir)
	if err := gt.UseWorkspace(ctx, id, root); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "active grant %s for the workspace %s\n", id, root)
	rec, err := ep.store.Grant(ctx, id)
	if err != nil {
		return err
	}
	if s, err := ep.trust.Open(rec.Signed); err == nil && !slices.ContainsFunc(s.Grant.Roots, func(r string) bool { return trust.Within(root, canonicalDir(r)) }) {
		fmt.Fprintf(e.stderr, "joule: warning: grant %s opens %s, not %s: every action there is denied outside-workspace ('joule init' there issues a grant for it)\n", id, strings.Join(s.Grant.Roots, ", "), root)
	}
	return nil
}

// grantRow is one line of grant ls, and its JSON.
type grantRow struct {
	ID         string   `json:"id"`
	Parent     string   `json:"parent,omitempty"`
	BudgetUJ   uint64   `json:"budget_uj"`
	SpentUJ    uint64   `json:"spent_uj"`
	LeftUJ     uint64   `json:"remaining_uj"`
	Expires    string   `json:"expires,omitempty"`
	State      string   `json:"state"`                // ok, expired, revoked, unrecorded, invalid or store-corrupt
	Active     bool     `json:"active"`               // active somewhere (ActiveFor)
	ActiveFor  []string `json:"active_for,omitempty"` // "default", workspace roots, "session S"
	Workspaces []string `json:"workspaces,omitempty"` // the roots the grant opens
	valid      bool
}

func grantList(ctx context.Context, e *env, ep *endpoint, asJSON bool) error {
	recs, err := ep.store.Grants(ctx)
	if err != nil {
		return err
	}
	gt, _, err := ep.grants()
	if err != nil {
		return err
	}
	ts, terr := gt.TrustState(ctx)
	if terr != nil {
		fmt.Fprintf(e.stderr, "joule: the trust chain cannot be read, so no grant is shown active: %v\n", terr)
		ts = nil
	}
	out := []grantRow{}
	for _, r := range recs {
		row := grantRow{ID: r.ID, SpentUJ: r.SpentUJ, State: "ok"}
		if ts != nil {
			row.ActiveFor = ts.Places(r.ID)
			row.Active = len(row.ActiveFor) > 0
		}
		s, err := ep.trust.Open(r.Signed)
		if err != nil {
			row.State = "invalid"
		} else {
			row.valid = true
			row.Expires = time.Unix(s.Grant.NotAfter, 0).UTC().Format(time.RFC3339)
			if time.Now().Unix() >= s.Grant.NotAfter {
				row.State = "expired"
			}
			// The signed figures; a column that disagrees is a fault.
			row.BudgetUJ, row.LeftUJ, row.Parent = s.Grant.BudgetUJ, r.RemainingUnder(s.Grant.BudgetUJ), s.Grant.Parent
			row.Workspaces = s.Grant.Roots
		}
		switch {
		case r.Revoked || ts != nil && ts.Revoked(r.ID):
			row.State = "revoked"
		case ts != nil && !ts.Issued(r.ID):
			row.State = "unrecorded"
		}
		if err == nil && r.ColumnFault(s.ID.String(), gate.SignedFacts(s)) != "" {
			row.State = "store-corrupt"
		}
		out = append(out, row)
	}
	if asJSON {
		return printJSON(e, out)
	}
	tw := newTable(e.stdout)
	fmt.Fprintln(tw, "ID\tPARENT\tBUDGET\tSPENT\tLEFT\tEXPIRES\tSTATE\tWORKSPACES\tACTIVE FOR")
	for _, r := range out {
		budget, left, expires, parent := "?", "?", "?", "-"
		if r.valid {
			budget, left, expires = grant.FormatEnergy(r.BudgetUJ), grant.FormatEnergy(r.LeftUJ), r.Expires
		}
		if r.Parent != "" {
			parent = r.Parent
		}
		state := r.State
		if r.Active {
			state += ",active"
		}
		ws := "?"
		if r.valid {
			ws = strings.Join(r.Workspaces, ",")
		}
		activeFor := "-"
		if len(r.ActiveFor) > 0 {
			activeFor = strings.Join(r.ActiveFor, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, shortID(parent), budget, grant.FormatEnergy(r.SpentUJ), left, expires, state, ws, activeFor)
	}
	return tw.Flush()
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

// resolveGrant turns what a user typed for a grant, a whole id, a unique
// prefix of one, or "active", into the grant's id, with a hint where it
// names none or several.
func resolveGrant(ctx context.Context, ep *endpoint, arg string) (string, error) {
	gt, _, err := ep.grants()
	if err != nil {
		return "", err
	}
	// 'active' is the grant that decides here: the workspace's holding
	// the current directory, else the default.
	wd, _ := os.Getwd()
	id, err := gt.ResolveGrantAt(ctx, arg, wd)
	switch {
	case errors.Is(err, gate.ErrNoActiveGrant):
		return "", withHint(err, "run 'joule init' or 'joule grant use ID'")
	case errors.Is(err, store.ErrNotFound):
		return "", withHint(fmt.Errorf("grant %s: not found", arg), "run 'joule grant ls'")
	case errors.Is(err, store.ErrAmbiguous):
		return "", withHint(errors.New(strings.TrimPrefix(err.Error(), "store: ")), "give more of the id ('joule grant ls' lists them)")
	}
	return id, err
}

// grantRenew is joule grant renew: gate.Renew does the renewal.
func grantAllow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "grant allow", "grant allow RULE [--grant ID]\n\nIssues the successor of the active grant (or --grant ID) with one more allow\nrule, e.g. 'Bash(npm install:*)': the same rules, roots and tiers, what the old\none has left, valid until its end; it is active wherever the old one was, one\nreceipt naming both is sealed in session "+gate.GrantsSession+" first, and the old\none is revoked. Every 'not granted' deny names the command that allows it.")
	id := fs.String("grant", gate.ActiveGrant, "the grant to extend: an id, a prefix, or 'active'")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("grant allow: want one rule, e.g. joule grant allow 'Bash(npm install:*)'")
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	old, err := resolveGrant(ctx, ep, *id)
	if err != nil {
		return err
	}
	gt, is, err := ep.issuing()
	if err != nil {
		return err
	}
	r, err := gt.AllowRule(ctx, is, old, fs.Arg(0))
	if err != nil {
		return err
	}
	printGrantSummary(e, r.Grant, r.Grant.Grant.BudgetUJ)
	fmt.Fprintf(e.stdout, "supersedes     %s (now revoked)\n", old)
	if r.Moved > 0 {
		fmt.Fprintf(e.stdout, "active         yes: in the %d place(s) the old grant was\n", r.Moved)
	}
	fmt.Fprintf(e.stdout, "receipt        session %s seq %d\n", r.Receipt.Session, r.Receipt.Seq)
	return nil
}

func grantRenew(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "grant renew", "grant renew ID [--ttl 8h]\n\nIssues a new grant with the rules of grant ID (a prefix, or 'active') and what\nit has left, valid from now, makes it active wherever ID was, seals a receipt\nnaming both in session "+gate.GrantsSession+", and revokes ID (and so the grants\ndelegated from it).")
	var ttlv ttlFlag
	fs.Var(&ttlv, "ttl", "how long the new grant is valid: 8h, 90m, 2h30m or 1d (default: as long as the old one was)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("grant renew: want one grant id")
	}
	ttl := (*time.Duration)(&ttlv)
	if *ttl < 0 {
		return usagef("grant renew: --ttl %s: want a positive duration, %s", *ttl, ttlForm)
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	id, err := resolveGrant(ctx, ep, fs.Arg(0))
	if err != nil {
		return err
	}
	gt, is, err := ep.issuing()
	if err != nil {
		return err
	}
	r, err := gt.Renew(ctx, is, id, *ttl)
	if err != nil {
		return err
	}
	printGrantSummary(e, r.Grant, r.Grant.Grant.BudgetUJ)
	fmt.Fprintf(e.stdout, "renews         %s (now revoked)\n", id)
	if r.Moved > 0 {
		fmt.Fprintf(e.stdout, "active         yes: in the %d place(s) the old grant was\n", r.Moved)
	}
	fmt.Fprintf(e.stdout, "receipt        session %s seq %d\n", r.Receipt.Session, r.Receipt.Seq)
	return nil
}

// shortPrefix is a prefix of a grant id that is long enough to stay
// unique in any store a person keeps.
func shortPrefix(id string) string {
	if len(id) > 10 {
		return id[:10]
	}
	return id
}

// issuing is the gate that seals a grant change and the issuer that signs
// the new grant: this home's steward key.
func (ep *endpoint) issuing() (*gate.Gate, *grant.Issuer, error) {
	gt, err := ep.gate()
	if err != nil {
		return nil, nil, err
	}
	is, err := grant.NewIssuer(ep.id.Steward, ep.id.Key)
	if err != nil {
		return nil, nil, err
	}
	return gt, is, nil
}
