package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
	"github.com/joulehook/joule/tiers/config"
)

func init() {
	register(&command{name: "trust", summary: "show or record the signed trust state: trusted issuers, config.json, grants, the store", run: runTrust})
}

const trustUsage = `trust [status] | trust accept | trust add-issuer KEY | trust remove-issuer NAME

The gate decides only from signed state. This home's own chain (session
joule-home:NAME+HASH) records which issuers it trusts and config.json's
trust settings (costs, exec_fallback, the witness); the grants' chain
(session ` + gate.GrantsSession + `) records which grants were issued,
revoked and made active; the witness binds the home to its store.

status (the default) compares the files with what is signed, and the
store with the one the home is bound to; exit status 1 when they differ.
accept records the issuers file and config.json as they are now, after
you have reviewed a change made by hand.
add-issuer trusts the grants and receipts of another key (a steward.pub
line, NAME+HASH+KEY) and remove-issuer stops trusting NAME: each seals
its receipt, then writes the issuers file.`

func runTrust(ctx context.Context, e *env, args []string) error {
	sub := "status"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlags(e, "trust "+sub, trustUsage)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch sub {
	case "status", "accept":
		if err := noArgs(fs); err != nil {
			return err
		}
	case "add-issuer", "remove-issuer":
		if fs.NArg() != 1 {
			return usagef("trust %s: want one %s", sub, map[string]string{"add-issuer": "verifier key NAME+HASH+KEY", "remove-issuer": "issuer NAME"}[sub])
		}
	default:
		return usagef("trust: unknown subcommand %q (want status, accept, add-issuer or remove-issuer)", sub)
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	switch sub {
	case "accept":
		return trustAccept(ctx, e, ep)
	case "add-issuer", "remove-issuer":
		return trustIssuer(ctx, e, ep, sub, fs.Arg(0))
	}
	return trustStatus(ctx, e, ep)
}

// filesReason says in words what the files record: the trusted issuers
// and the trust settings of config.json.
func filesReason(ep *endpoint, issuers []string) string {
	var names []string
	for _, line := range issuers {
		name, rest, _ := strings.Cut(line, "+")
		hash, _, _ := strings.Cut(rest, "+")
		names = append(names, name+"+"+hash)
	}
	who := "none"
	if len(names) > 0 {
		who = strings.Join(names, ", ")
	}
	cfg, err := config.Load(ep.home)
	settings := "unreadable"
	if err == nil {
		var w []string
		for _, c := range cfg.Witness.Witnesses {
			w = append(w, c.Name)
		}
		fallback := cfg.ExecFallback
		if fallback == "" {
			fallback = "refuse"
		}
		settings = fmt.Sprintf("%d cost(s) set, exec_fallback %s, %d witness file(s), witness command %t, witnesses [%s] with quorum %d",
			len(cfg.Costs), fallback, len(cfg.Witness.Files), len(cfg.Witness.Command) > 0, strings.Join(w, ", "), cfg.Witness.Quorum)
	}
	return fmt.Sprintf("trusted issuers besides this endpoint: %s; config.json: %s", who, settings)
}

// recordFilesIfChanged seals the home's files as its signed state when
// they are not what it records: the entry sealed, or nil when they were.
func recordFilesIfChanged(ctx context.Context, ep *endpoint, tool, why string) (*store.Entry, error) {
	gt, _, err := ep.grants()
	if err != nil {
		return nil, err
	}
	_, err = gt.HomeState(ctx)
	if err == nil {
		return nil, nil
	}
	if !errors.Is(err, trust.ErrIssuersUnsigned) && !errors.Is(err, trust.ErrConfigUnsigned) {
		return nil, err
	}
	en, err := gt.RecordFiles(ctx, tool, why+"; "+filesReason(ep, ep.issuers))
	if err != nil {
		return nil, err
	}
	return &en, nil
}

func trustAccept(ctx context.Context, e *env, ep *endpoint) error {
	en, err := recordFilesIfChanged(ctx, ep, "joule trust accept", "accepted by hand")
	if err != nil {
		return err
	}
	if en == nil {
		fmt.Fprintln(e.stdout, "nothing to record: the issuers file and config.json are what this home's chain signs")
		return nil
	}
	fmt.Fprintf(e.stdout, "recorded %s\n", filesReason(ep, ep.issuers))
	fmt.Fprintf(e.stdout, "receipt  session %s seq %d\n", en.Session, en.Seq)
	return nil
}

// trustIssuer adds or removes one issuer: its receipt first, then the
// file.
func trustIssuer(ctx context.Context, e *env, ep *endpoint, sub, arg string) error {
	gt, _, err := ep.grants()
	if err != nil {
		return err
	}
	if _, err := gt.HomeState(ctx); err != nil {
		return withHint(err, "the issuers file or config.json already differs from what this home signs: review it with 'joule trust', then 'joule trust accept' or undo the change")
	}
	path := filepath.Join(ep.home, IssuersFile)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var text string
	lines := slices.Clone(ep.issuers)
	switch sub {
	case "add-issuer":
		arg = strings.TrimSpace(arg)
		_, name, err := identity.ParsePublicKey(arg)
		if err != nil || name == "" {
			return usagef("trust add-issuer: %q is not a signed-note verifier key NAME+HASH+KEY (a steward.pub line)", arg)
		}
		if name == ep.id.Steward {
			return usagef("trust add-issuer: %s is this endpoint's own steward", name)
		}
		for _, l := range lines {
			if _, n, _ := identity.ParsePublicKey(l); n == name {
				return fmt.Errorf("trust add-issuer: %s is trusted already (%s); remove it first to change its key", name, l)
			}
		}
		lines = append(lines, arg)
		text = string(old)
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += arg + "\n"
	case "remove-issuer":
		var kept []string
		var out strings.Builder
		found := false
		for _, raw := range strings.SplitAfter(string(old), "\n") {
			line := strings.TrimSpace(raw)
			if _, n, err := identity.ParsePublicKey(line); err == nil && n == arg {
				found = true
				continue
			}
			out.WriteString(raw)
		}
		for _, l := range lines {
			if _, n, _ := identity.ParsePublicKey(l); n != arg {
				kept = append(kept, l)
			}
		}
		if !found {
			return fmt.Errorf("trust remove-issuer: %s is not in %s", arg, path)
		}
		lines, text = kept, out.String()
	}
	files := ep.files
	files.Issuers = trust.IssuersDigest(lines)
	gt.Files = &files
	en, err := gt.RecordFiles(ctx, "joule trust "+sub, fmt.Sprintf("%s %s; %s", strings.TrimSuffix(sub, "-issuer"), arg, filesReason(ep, lines)))
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("the receipt is sealed (session %s seq %d), but %s could not be written: %w; write it by hand, or run 'joule trust accept' on what it holds", en.Session, en.Seq, path, err)
	}
	verb := "trusts"
	if sub == "remove-issuer" {
		verb = "no longer trusts"
	}
	fmt.Fprintf(e.stdout, "this home %s %s\nreceipt  session %s seq %d\n", verb, arg, en.Session, en.Seq)
	return nil
}

// writeFileAtomic replaces path with data: a temp file beside it, renamed
// over it.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// trustStatus prints the signed trust state beside what the files and
// the store say; exit status 1 when they differ.
func trustStatus(ctx context.Context, e *env, ep *endpoint) error {
	gt, _, err := ep.grants()
	if err != nil {
		return err
	}
	failed := false
	fail := func(format string, args ...any) {
		failed = true
		fmt.Fprintf(e.stdout, "FAIL     "+format+"\n", args...)
	}
	home, herr := gt.HomeState(ctx)
	switch {
	case home == nil:
		fail("home: %v", herr)
	default:
		recorded := "nothing recorded: the defaults (no issuers, no config.json)"
		if home.Seq > 0 {
			recorded = fmt.Sprintf("recorded at session %s seq %d", home.Session, home.Seq)
			if es, err := ep.store.Session(ctx, home.Session); err == nil && len(es) > 0 {
				if k, err := ep.keys(); err == nil {
					if r, err := k.Open(es[len(es)-1].Envelope); err == nil && r.Decision != nil {
						recorded += ": " + r.Decision.Reason
					}
				}
			}
		}
		fmt.Fprintf(e.stdout, "home     %s\n", recorded)
		fmt.Fprintf(e.stdout, "issuers  %s: %s\n", filepath.Join(ep.home, IssuersFile), filesReason(ep, ep.issuers))
		switch {
		case errors.Is(herr, trust.ErrIssuersUnsigned):
			fail("the issuers file is not the signed list: %v\n         if the change is yours, run 'joule trust accept'; else undo it", herr)
		case errors.Is(herr, trust.ErrConfigUnsigned):
			fail("config.json's trust settings are not the signed ones: %v\n         if the change is yours, run 'joule trust accept'; else undo it", herr)
		case herr != nil:
			fail("%v", herr)
		default:
			fmt.Fprintln(e.stdout, "ok       the issuers file and config.json are what this home's chain signs")
		}
	}
	ts, err := gt.TrustState(ctx)
	switch {
	case errors.Is(err, trust.ErrIssuersUnsigned) || errors.Is(err, trust.ErrConfigUnsigned):
		// Said above.
	case err != nil:
		fail("grants: %v", gate.ChainError(err))
	default:
		active := ts.Default()
		if active == "" {
			active = "none"
		}
		fmt.Fprintf(e.stdout, "grants   session %s: %d receipts; active for every session: %s; %d workspace(s) and %d session(s) with their own\n", gate.GrantsSession, ts.Seq, active, len(ts.Workspaces()), len(ts.Sessions()))
		for _, root := range ts.Workspaces() {
			fmt.Fprintf(e.stdout, "         workspace %s: grant %s\n", root, ts.WorkspaceGrant(root))
		}
	}
	if _, _, err := ep.store.WitnessState(ctx); err != nil {
		fail("store: %v", err)
	} else {
		fmt.Fprintf(e.stdout, "store    %s, the store this home is bound to\n", showStore(ep.loc))
	}
	if failed {
		return &exitError{1}
	}
	return nil
}
