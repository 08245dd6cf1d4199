package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/audit"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
	"github.com/joulehook/joule/tiers/config"
)

func init() {
	register(&command{name: "store", summary: "migrate or check the store (SQLite file or shared PostgreSQL database)", run: runStore})
}

func runStore(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "store", "store migrate [--team]|check|accept-loss [--store PATH|URL] | store backup FILE | store restore FILE\n\nmigrate brings the store's schema up to this joule's version (run it as\nthe database owner before rolling out a new joule to a team); with --team\nit also sets up the team's roles (docs/team.md).\ncheck verifies the whole store: every session chain, the Merkle log,\nevery checkpoint, every grant envelope's signature and id, every column\na decision reads against the envelope, every ledger figure against the\nsigned receipts, every reservation against its grant, and the store\nagainst the checkpoint witnessed outside it. Each finding names the\ngrant, session and SEQ. Exit status 1 if anything is wrong.\naccept-loss is the way out of a store refused by its witness (wiped,\nrolled back or replaced): it seals a receipt recording what was witnessed\nand what the store holds now, and re-anchors the witness there.\nbackup writes a consistent copy of a SQLite store to the new FILE while\nit is in use (SQLite's online backup); restore checks FILE is a whole\nstore and replaces the store's contents by it. A restore goes back in\ntime, which the witness notices: accept it with 'joule store accept-loss'.\nA PostgreSQL store is backed up with pg_dump (docs/team.md).\n\nThe store is --store, else $JOULE_STORE, else config.json's \"store\",\nelse joule.db in $JOULE_HOME.")
	loc := fs.String("store", "", "the store: a file path or a postgres:// URL")
	asJSON := fs.Bool("json", false, "check: print the report as one JSON object (exit status 1 still means something is wrong)")
	team := fs.Bool("team", false, "migrate: also give a PostgreSQL store the team's roles, privileges and append checks, so that members (joule_members) only append and only administrators (joule_admins) write grants and the trust chain (docs/team.md); run as the database owner")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *asJSON && fs.Arg(0) != "check" {
		return usagef("store: --json is for store check")
	}
	if *team && fs.Arg(0) != "migrate" {
		return usagef("store: --team is for store migrate")
	}
	if sub := fs.Arg(0); sub == "backup" || sub == "restore" {
		if fs.NArg() != 2 {
			return usagef("store %s: want one FILE", sub)
		}
		if *loc != "" {
			return usagef("store %s: works on the home's configured store; set $JOULE_STORE instead of --store", sub)
		}
		return storeBackup(ctx, e, sub, fs.Arg(1))
	}
	if fs.NArg() != 1 || fs.Arg(0) != "migrate" && fs.Arg(0) != "check" && fs.Arg(0) != "accept-loss" {
		return usagef("store: want 'migrate', 'check', 'accept-loss', 'backup FILE' or 'restore FILE' (run 'joule store -h')")
	}
	if fs.Arg(0) == "accept-loss" {
		if *loc != "" {
			return usagef("store accept-loss: works on the home's configured store; set $JOULE_STORE instead of --store")
		}
		ep, err := openEndpoint()
		if err != nil {
			return err
		}
		defer ep.Close()
		return acceptLoss(ctx, e, ep)
	}
	home, err := identity.Home()
	if err != nil {
		return err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return err
	}
	configured := *loc == ""
	if configured {
		if *loc, err = config.StoreLocation(home, cfg); err != nil {
			return err
		}
	} else if _, err := config.StoreLocation("/", &config.Config{Store: *loc}); err != nil {
		return err
	} else if !store.IsURL(*loc) {
		// --store is relative to the working directory; the witness is
		// named after the absolute path.
		if *loc, err = filepath.Abs(*loc); err != nil {
			return err
		}
	}
	if cur, err := config.StoreLocation(home, cfg); err == nil && !configured && boundLocation(home, cur) == boundLocation(home, *loc) {
		configured = true // --store names the configured store
	}
	// Open migrates: migrate is Open plus a report, check is Open plus
	// Verify.
	st, err := store.Open(*loc)
	if err != nil {
		if *asJSON {
			return writeCheckJSON(e, checkReport{Error: err.Error()})
		}
		return err
	}
	defer st.Close()
	if fs.Arg(0) == "migrate" {
		fmt.Fprintf(e.stdout, "store   %s (%s)\nschema  version %d\n", st.Path(), st.Backend(), store.SchemaVersion())
		if *team {
			if err := st.SetupTeam(ctx); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "team    %s append only; %s also write grants and the trust chain\n", store.TeamMembers, store.TeamAdmins)
		}
		return nil
	}
	rep := checkStore(ctx, e, st, home, *loc, configured, cfg)
	if *asJSON {
		return writeCheckJSON(e, rep)
	}
	fmt.Fprintf(e.stdout, "store   %s (%s)\nschema  version %d\n", rep.Store, rep.Backend, rep.Schema)
	for _, l := range rep.Witness {
		fmt.Fprintln(e.stdout, l)
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(e.stdout, "FAIL    %s\n", f.Text)
	}
	switch {
	case rep.Error != "":
		fmt.Fprintf(e.stdout, "check   FAILED\n")
		return errors.New(rep.Error)
	case len(rep.Findings) > 0:
		fmt.Fprintf(e.stdout, "check   FAILED: %d findings\n", len(rep.Findings))
		return &exitError{1}
	case rep.WitnessFailed:
		fmt.Fprintf(e.stdout, "check   FAILED: the store is not what its witness remembers\n")
		return &exitError{1}
	}
	fmt.Fprintf(e.stdout, "log     %d receipts in %d sessions, root %s\n", rep.LogSize, rep.Sessions, rep.Root)
	if !rep.SignaturesChecked {
		fmt.Fprintf(e.stdout, "grants  %d, every one matching its ledger; signatures NOT checked: %s\n", rep.Grants, rep.NotChecked)
	} else {
		fmt.Fprintf(e.stdout, "grants  %d, every envelope verified and every column, ledger figure and reservation matching what is signed\n", rep.Grants)
	}
	fmt.Fprintf(e.stdout, "check   ok\n")
	return nil
}

// checkReport is what store check found, printed as text or, with --json,
// as one object.
type checkReport struct {
	OK                bool           `json:"ok"`
	Store             string         `json:"store,omitempty"`
	Backend           string         `json:"backend,omitempty"`
	Schema            int            `json:"schema,omitempty"`
	Witness           []string       `json:"witness"`
	WitnessFailed     bool           `json:"witness_failed"`
	Findings          []checkFinding `json:"findings"`
	LogSize           int64          `json:"log_size"`
	Sessions          int            `json:"sessions"`
	Grants            int            `json:"grants"`
	Root              string         `json:"root,omitempty"`
	SignaturesChecked bool           `json:"signatures_checked"`
	NotChecked        string         `json:"signatures_not_checked,omitempty"` // why
	Error             string         `json:"error,omitempty"`
}

// checkFinding is one problem, with the grant, session and SEQ it names.
type checkFinding struct {
	Grant   string `json:"grant,omitempty"`
	Session string `json:"session,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	Index   int64  `json:"index"`
	Problem string `json:"problem"`
	Text    string `json:"text"`
}

func writeCheckJSON(e *env, rep checkReport) error {
	if rep.Witness == nil {
		rep.Witness = []string{}
	}
	if rep.Findings == nil {
		rep.Findings = []checkFinding{}
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	if !rep.OK {
		return &exitError{1}
	}
	return nil
}

// checkStore runs every check of store check on st.
func checkStore(ctx context.Context, e *env, st *store.Store, home, loc string, configured bool, cfg *config.Config) checkReport {
	rep := checkReport{Store: st.Path(), Backend: st.Backend(), Schema: store.SchemaVersion()}
	var witness strings.Builder
	rep.WitnessFailed = checkWitness(ctx, &env{stdin: e.stdin, stdout: &witness, stderr: e.stderr}, st, home, loc, configured, cfg)
	for _, l := range strings.Split(strings.TrimRight(witness.String(), "\n"), "\n") {
		if l != "" {
			rep.Witness = append(rep.Witness, l)
		}
	}
	trust, keys, files, why := checkKeys(cfg)
	if strings.HasPrefix(why, errIssuersFile.Error()) {
		// Not a home without a key: one whose trust cannot be read.
		rep.Error = why
		return rep
	}
	if !configured {
		files = nil // another store: this home's files are not its business
	}
	if why != "" {
		// Only the structure can be checked.
		rep.NotChecked = why
		if err := st.Verify(ctx); err != nil {
			rep.Error = err.Error()
			return rep
		}
	} else {
		rep.SignaturesChecked = true
		findings, err := audit.Check(ctx, st, trust, keys)
		if err != nil {
			rep.Error = err.Error()
			return rep
		}
		tf, err := audit.Trust(ctx, st, grantKeys(trust, cfg), files)
		if err != nil {
			rep.Error = err.Error()
			return rep
		}
		findings = append(findings, tf...)
		for _, f := range findings {
			rep.Findings = append(rep.Findings, checkFinding{Grant: f.Grant, Session: f.Session, Seq: f.Seq, Index: f.Index, Problem: f.Problem, Text: f.String()})
		}
		if len(findings) > 0 {
			return rep
		}
	}
	if rep.WitnessFailed {
		return rep
	}
	sum, err := st.Summarize(ctx)
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	rep.LogSize, rep.Sessions, rep.Grants, rep.Root, rep.OK = sum.LogSize, sum.Sessions, sum.Grants, sum.Root.String(), true
	return rep
}

// checkKeys loads the trusted grant issuers and receipt keys of
// $JOULE_HOME and what its files say (cfg is its config.json), or says why
// it cannot (no endpoint key there).
func checkKeys(cfg *config.Config) (grant.Trust, receipts.Keys, *trust.Files, string) {
	home, err := identity.Home()
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	id, err := identity.Load(home)
	if err != nil {
		return nil, nil, nil, fmt.Sprintf("no endpoint key in %s (%v)", home, err)
	}
	tr, lines, err := loadTrust(home, id)
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	keys, err := receipts.NewKeys(tr)
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	files := homeFiles(id, lines, cfg)
	return tr, keys, &files, ""
}

// grantKeys are the keys the grants' trust chain is verified with: a
// team's administrators (config.json's team.admins), else every trusted
// issuer, as the gate does (gate.Gate.Admins).
func grantKeys(tr grant.Trust, cfg *config.Config) grant.Trust {
	if cfg != nil && cfg.TeamAdmins != nil {
		return cfg.TeamAdmins
	}
	return tr
}

// verifySigned is the store half of 'receipts verify': the store's own
// structure and everything a decision reads, against what is signed
// (core/audit). It prints one FAIL line per finding and returns how many.
func verifySigned(ctx context.Context, e *env, ep *endpoint, keys receipts.Keys) int {
	findings, err := audit.Check(ctx, ep.store, ep.trust, keys)
	if err == nil {
		var tf []audit.Finding
		tf, err = audit.Trust(ctx, ep.store, grantKeys(ep.trust, ep.cfg), &ep.files)
		findings = append(findings, tf...)
	}
	if err != nil {
		fmt.Fprintf(e.stdout, "FAIL store: %v\n", err)
		return 1
	}
	for _, f := range findings {
		fmt.Fprintf(e.stdout, "FAIL store: %s\n", f)
	}
	if len(findings) == 0 {
		fmt.Fprintln(e.stdout, "ok   store: log hashes, checkpoints, grant envelopes, ledger, reservations and the trust chains match what is signed")
	}
	return len(findings)
}

// storeBackup runs store backup FILE or store restore FILE on the home's
// store.
func storeBackup(ctx context.Context, e *env, sub, file string) error {
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	noOnline := func(err error) error {
		if errors.Is(err, store.ErrNoOnlineBackup) {
			return withHint(fmt.Errorf("store %s: %w", sub, store.ErrNoOnlineBackup), "run pg_dump --format=custom --file=joule.dump --dbname=\"$JOULE_STORE\"; restore into a new database with pg_restore and check it with 'joule store check --store URL' (docs/team.md, \"Backup and restore\")")
		}
		return err
	}
	if sub == "backup" {
		if err := ep.store.Backup(ctx, file); err != nil {
			return noOnline(err)
		}
		size, err := ep.store.LogSize(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "backup   %s: the store at log size %d (mode 0600)\n", file, size)
		fmt.Fprintln(e.stdout, "restore  joule store restore "+file)
		return nil
	}
	// The restore is recorded before it takes effect: in the store it
	// replaces, whose witness (and any witness elsewhere) keeps it; then
	// accept-loss records it in the store restored.
	if ep.store.Backend() == "postgres" {
		return noOnline(store.ErrNoOnlineBackup)
	}
	if err := store.CheckBackup(ctx, file); err != nil {
		return fmt.Errorf("store restore from %s: %w", file, err)
	}
	sealer, err := ep.id.Sealer()
	if err != nil {
		return err
	}
	size, err := ep.store.LogSize(ctx)
	if err != nil {
		return err
	}
	if _, err := (&gate.Gate{Store: ep.store, Sealer: sealer}).SealRecord(ctx, gate.Record{Session: trust.StoreSession, Tool: "joule store restore",
		Code: gate.CodeStoreRestored, Cwd: ep.home, Summary: fmt.Sprintf("store contents replaced by the backup %s; the log held %d receipts before", file, size),
		Reason: "restored from a backup: what was sealed after it is gone from the store, and nothing is decided until 'joule store accept-loss' records it", Input: []byte(file)}); err != nil {
		return fmt.Errorf("store restore: recording the restore: %w", err)
	}
	if err := ep.store.Restore(ctx, file); err != nil {
		return noOnline(err)
	}
	size, err = ep.store.LogSize(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "restored %s: the store is now at log size %d\n", file, size)
	if err := ep.witnessProblem(ctx); err != nil {
		fmt.Fprintf(e.stdout, "witness  %v\n", errors.Unwrap(err))
		fmt.Fprintln(e.stdout, "next     nothing is decided until the loss is accepted: run 'joule store accept-loss'")
	}
	return nil
}
