package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
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

// keepWorkspaces adds to g's roots those of the grant active for every
// session, when that grant is in force and not delegated, so that joule
// init in a second repository adds a workspace instead of taking the first
// one's grant away. It returns the roots it kept.
func keepWorkspaces(ctx context.Context, ep *endpoint, g *grant.Grant) ([]string, error) {
	gt, _, err := ep.grants()
	if err != nil {
		return nil, err
	}
	ts, err := gt.TrustState(ctx)
	if err != nil || ts.Default() == "" {
		return nil, err
	}
	chain, err := gt.LoadChain(ctx, ts.Default())
	if err != nil || len(chain) != 1 || chain.Check(chain.Leaf().Grant.Subject, time.Now()) != nil {
		return nil, nil // nothing in force to keep
	}
	var kept []string
	for _, old := range chain.Leaf().Grant.Roots {
		if !slices.Contains(g.Roots, old) {
			g.Roots = append(g.Roots, old)
			kept = append(kept, old)
		}
	}
	return kept, nil
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
	fs := newFlags(e, "init", "init [--steward NAME] [--template dev] [grant flags]\n\nCreates the endpoint key (if missing) and the store in $JOULE_HOME, then\nissues a grant scoped to the current project from a template (dev by\ndefault) and makes it active, so a new user is never silently locked out.\nThe workspaces of the grant active before are kept (--only drops them), so\njoule init in a second repository adds it.\nThe project is the root of the git work tree the current directory is in\n(else the current directory); / and the home directory are refused\nwithout --force.")
	var f issueFlags
	f.register(fs, "dev")
	steward := fs.String("steward", "", "the endpoint identity, if a key is created (default: joule@HOSTNAME)")
	force := fs.Bool("force", false, "grant a workspace at / or your home directory all the same")
	only := fs.Bool("only", false, "grant only this workspace: the workspaces of the grant active before are not kept")
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
	var kept []string
	if !*only && f.parent == "" {
		if kept, err = keepWorkspaces(ctx, ep, g); err != nil {
			return err
		}
	}
	s, err := issue(ctx, ep, g, f.parent, true)
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
	if len(kept) > 0 {
		fmt.Fprintf(e.stdout, "kept           %s, the workspaces of the grant active before: this one adds %s (--only replaces them)\n", strings.Join(kept, ", "), strings.Join(f.workspaces, ", "))
	}
	fmt.Fprintln(e.stdout, "active         yes: every session now decides against this grant")
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

const grantUsage = `grant issue [flags] | grant ls | grant show ID | grant use ID [--session S]
       grant allow RULE [--grant ID] | grant renew ID [--ttl D] | grant revoke ID
       grant adopt ID [--use]

issue signs a new grant with the endpoint key and stores it; ls lists grants
with their budgets; show prints one as JSON; use makes one active (for every
session, or one); allow replaces the active one by a grant with one more
allow rule (the rule every 'not granted' deny names); renew replaces one (expired or not) by a new signed grant
with the same rules and what the old one has left, valid from now, active
wherever the old one was; revoke stops one and every grant delegated from it;
adopt records as issued a grant that is in the store without its issue
receipt (signed by a trusted issuer elsewhere, or before joule recorded
issues). Each change seals a receipt into the trust chain (session
` + gate.GrantsSession + `) before it takes effect: the gate reads which grants
exist, which are revoked and which is active from those receipts only.
An ID may be any unique prefix of a grant id, or 'active' for the active
grant.`

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
	session, use := "", false
	if sub == "use" {
		fs.StringVar(&session, "session", "", "make the grant active for this session only")
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

// grantRow is one line of grant ls, and its JSON.
type grantRow struct {
	ID         string   `json:"id"`
	Parent     string   `json:"parent,omitempty"`
	BudgetUJ   uint64   `json:"budget_uj"`
	SpentUJ    uint64   `json:"spent_uj"`
	LeftUJ     uint64   `json:"remaining_uj"`
	Expires    string   `json:"expires,omitempty"`
	State      string   `json:"state"` // ok, expired, revoked, unrecorded, invalid or store-corrupt
	Active     bool     `json:"active"`
	Workspaces []string `json:"workspaces,omitempty"`
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
	active := ""
	if ts != nil {
		active = ts.Default()
	}
	out := []grantRow{}
	for _, r := range recs {
		row := grantRow{ID: r.ID, SpentUJ: r.SpentUJ, State: "ok", Active: r.ID == active}
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
	fmt.Fprintln(tw, "ID\tPARENT\tBUDGET\tSPENT\tLEFT\tEXPIRES\tSTATE\tWORKSPACES")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, shortID(parent), budget, grant.FormatEnergy(r.SpentUJ), left, expires, state, ws)
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
	id, err := gt.ResolveGrant(ctx, arg)
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
	gt, err := ep.gate()
	if err != nil {
		return err
	}
	is, err := grant.NewIssuer(ep.id.Steward, ep.id.Key)
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
	gt, err := ep.gate()
	if err != nil {
		return err
	}
	is, err := grant.NewIssuer(ep.id.Steward, ep.id.Key)
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
