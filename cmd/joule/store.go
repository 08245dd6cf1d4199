package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
)

func init() {
	register(&command{name: "store", summary: "migrate or check the store (SQLite file or shared PostgreSQL database)", run: runStore})
}

func runStore(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "store", "store migrate|check|accept-loss [--store PATH|URL]\n\nmigrate brings the store's schema up to this joule's version (run it as\nthe database owner before rolling out a new joule to a team).\ncheck verifies the whole store: every session chain, the Merkle log,\nevery grant against its ledger and every checkpoint, and the store\nagainst the checkpoint witnessed outside it. Exit status 1 if anything\nis wrong.\naccept-loss is the way out of a store refused by its witness (wiped,\nrolled back or replaced): it seals a receipt recording what was witnessed\nand what the store holds now, and re-anchors the witness there.\n\nThe store is --store, else $JOULE_STORE, else config.json's \"store\",\nelse joule.db in $JOULE_HOME.")
	loc := fs.String("store", "", "the store: a file path or a postgres:// URL")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) != "migrate" && fs.Arg(0) != "check" && fs.Arg(0) != "accept-loss" {
		return usagef("store: want 'migrate', 'check' or 'accept-loss' (run 'joule store -h')")
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
	cfg, err := loadConfig(home)
	if err != nil {
		return err
	}
	configured := *loc == ""
	if configured {
		if *loc, err = storeLocation(home, cfg); err != nil {
			return err
		}
	} else if _, err := storeLocation("/", &config{Store: *loc}); err != nil {
		return err
	} else if !store.IsURL(*loc) {
		// --store is relative to the working directory; the witness is
		// named after the absolute path.
		if *loc, err = filepath.Abs(*loc); err != nil {
			return err
		}
	}
	// Open migrates: migrate is Open plus a report, check is Open plus
	// Verify.
	st, err := store.Open(*loc)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(e.stdout, "store   %s (%s)\nschema  version %d\n", st.Path(), st.Backend(), store.SchemaVersion())
	if fs.Arg(0) == "migrate" {
		return nil
	}
	witnessFailed := checkWitness(ctx, e, st, home, *loc, configured, cfg)
	if err := st.Verify(ctx); err != nil {
		fmt.Fprintf(e.stdout, "check   FAILED\n")
		return err
	}
	if witnessFailed {
		fmt.Fprintf(e.stdout, "check   FAILED: the store is not what its witness remembers\n")
		return &exitError{1}
	}
	size, err := st.LogSize(ctx)
	if err != nil {
		return err
	}
	sessions, err := st.Sessions(ctx)
	if err != nil {
		return err
	}
	grants, err := st.Grants(ctx)
	if err != nil {
		return err
	}
	root, err := st.TreeHash(ctx, size)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "log     %d receipts in %d sessions, root %s\ngrants  %d, every one matching its ledger\ncheck   ok\n", size, len(sessions), root, len(grants))
	return nil
}
