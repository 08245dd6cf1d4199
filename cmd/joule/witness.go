package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
	"github.com/joulehook/joule/core/witness"
	"github.com/joulehook/joule/tiers/config"
)

// WitnessDir holds, in $JOULE_HOME, the newest signed checkpoint of each
// store this home has appended to (docs/receipts.md, "The witness").
const WitnessDir = "witness"

// witnessPath is the home's own witness file for the store at loc: for
// the configured store, wherever it is, witness/checkpoint, the home's
// anchor, which records the store's location, so that a store named
// elsewhere is refused (store.ErrStoreMoved) rather than witnessed
// afresh; for a store opened only to be checked (--store), one named
// after its location (a URL without its password).
func witnessPath(home, loc string, configured bool) string {
	if configured {
		return filepath.Join(home, WitnessDir, "checkpoint")
	}
	sum := sha256.Sum256([]byte(showStore(loc)))
	return filepath.Join(home, WitnessDir, "checkpoint-"+hex.EncodeToString(sum[:8]))
}

// boundLocation is how the witness of home names the store at loc: a
// database's host, port and name (not who logs in, nor how: a team's roles
// reach one store); a file in the home by its name there, so that a home
// moved whole keeps its binding; any other file by its path with its
// directory's symbolic links resolved, so that one store reached by two
// spellings is one location.
func boundLocation(home, loc string) string {
	if store.IsURL(loc) {
		u, err := url.Parse(loc)
		if err != nil {
			return showStore(loc)
		}
		host := u.Host
		if h := u.Query().Get("host"); host == "" && h != "" {
			host = h // a unix socket directory
		}
		return "postgres://" + host + "/" + strings.TrimPrefix(u.Path, "/")
	}
	resolve := func(p string) string {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(dir, filepath.Base(p))
		}
		return filepath.Clean(p)
	}
	path := resolve(loc)
	if h, err := filepath.EvalSymlinks(home); err == nil {
		if rel, err := filepath.Rel(h, path); err == nil && filepath.IsLocal(rel) {
			return "$JOULE_HOME/" + filepath.ToSlash(rel)
		}
	}
	return path
}

// witnessFor is the witness of the store at loc opened from home: the
// home's own file, and for the home's configured store the location it
// is bound to and the files, command and witnesses of config.json. Each
// checkpoint records the heads of the trust chains (core/trust).
func witnessFor(home, loc string, configured bool, cfg *config.Config, signer note.Signer, verifierKey string) (*store.Witness, error) {
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return nil, err
	}
	primary := witnessPath(home, loc, configured)
	w := &store.Witness{
		Origin:   logOrigin(signer.Name()),
		Signer:   signer,
		Verifier: v,
		Files:    []string{primary},
		Chains:   []string{trust.GrantsSession, trust.HomeSession(verifierKey)},
		// The rename is atomic; the fsync before it only closes the
		// power-loss window (docs/receipts.md, "The witness").
		NoSync:  true,
		OnError: func(err error) { fmt.Fprintf(os.Stderr, "joule: %v\n", err) },
	}
	if host, err := os.Hostname(); err == nil {
		w.Marker = host + ":" + primary
	} else {
		w.Marker = primary
	}
	if configured {
		w.Location = boundLocation(home, loc)
	}
	if configured && cfg != nil {
		w.Files = append(w.Files, cfg.Witness.Files...)
		w.Command, w.CommandTimeout = cfg.Witness.Command, cfg.Witness.Timeout
		w.NoSync = !cfg.Witness.Sync
		for _, c := range cfg.Witness.Witnesses {
			cl, err := witness.NewClient(c.URL, c.VKey, cfg.Witness.Timeout)
			if err != nil {
				return nil, err
			}
			w.Cosigners = append(w.Cosigners, cl)
		}
		w.Quorum = cfg.Witness.Quorum
	}
	return w, nil
}

// witnessProblem checks the endpoint's store against its witness: nil, or
// the error (wrapping store.ErrRolledBack or store.ErrWitnessInvalid) to
// report, with the way out.
func (ep *endpoint) witnessProblem(ctx context.Context) error {
	_, _, err := ep.store.WitnessState(ctx)
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrRolledBack) || errors.Is(err, store.ErrWitnessInvalid) {
		return withHint(err, recoverHint)
	}
	return err
}

// recoverHint is the way out of a store refused by its witness.
const recoverHint = "nothing is decided until the loss is accepted: inspect with 'joule store check', then run 'joule store accept-loss' to record the loss as a signed receipt and re-anchor the witness"

// acceptLoss accepts the loss of a store its witness refused
// (gate.AcceptLoss) and says what was found, recorded and kept.
func acceptLoss(ctx context.Context, e *env, ep *endpoint) error {
	before := ep.witnessProblem(ctx)
	sealer, err := ep.id.Sealer()
	if err != nil {
		return err
	}
	loss, err := (&gate.Gate{Store: ep.store, Sealer: sealer}).AcceptLoss(ctx, before, ep.home)
	if err != nil {
		return err
	}
	en := loss.Entry
	if before == nil {
		fmt.Fprintln(e.stdout, "note     the store matched its witness; the witness is re-anchored anyway")
	} else {
		fmt.Fprintf(e.stdout, "found    %v\n", errors.Unwrap(before))
	}
	fmt.Fprintf(e.stdout, "recorded %s\n", loss.Summary)
	fmt.Fprintf(e.stdout, "receipt  session %s seq %d (log index %d), %s\n", en.Session, en.Seq, en.Index, core.ID(en.Hash))
	for _, k := range loss.Kept {
		fmt.Fprintf(e.stdout, "kept     %s (the replaced witness)\n", k)
	}
	fmt.Fprintf(e.stdout, "witness  re-anchored at log size %d\n", en.Index+1)
	// A witness elsewhere cannot be re-anchored: it keeps what it cosigned.
	var qe *store.QuorumError
	if err := ep.store.Cosign(ctx); errors.As(err, &qe) {
		for _, f := range qe.Failures {
			var ce *store.CosignerError
			if errors.As(f, &ce) && errors.Is(f, store.ErrRolledBack) {
				fmt.Fprintf(e.stdout, "witness  %s refuses this log: %v\n         it keeps what it cosigned, and never cosigns this log again: restore the lost receipts ('joule store restore FILE'), or take it out of config.json's witness.witnesses (the loss stays on record there)\n", ce.Witness, ce.Err)
			} else if errors.As(f, &ce) {
				fmt.Fprintf(e.stdout, "witness  %s: %v\n", ce.Witness, ce.Err)
			}
		}
	}
	if gs, err := ep.store.Grants(ctx); err == nil && len(gs) == 0 {
		fmt.Fprintln(e.stdout, "grants   none left in the store: run 'joule init' to issue one")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// checkWitness reports, for `store check`, the store against each witness
// file of this home: whether the store extends the checkpoint witnessed,
// by a consistency proof from the witnessed size and root to the log now.
// It returns whether any finding fails.
func checkWitness(ctx context.Context, e *env, st *store.Store, home, loc string, configured bool, cfg *config.Config) bool {
	id, err := identity.Load(home)
	if err != nil {
		fmt.Fprintf(e.stdout, "witness not checked: %v\n", err)
		return false
	}
	w, err := witnessFor(home, loc, configured, cfg, id.NoteSigner, id.VerifierKey)
	if err == nil {
		err = st.SetWitness(w)
	}
	if err != nil {
		fmt.Fprintf(e.stdout, "witness FAILED: %v\n", err)
		return true
	}
	failed, found := false, false
	size, err := st.LogSize(ctx)
	if err != nil {
		fmt.Fprintf(e.stdout, "witness FAILED: %v\n", err)
		return true
	}
	for _, f := range w.Files {
		cp, _, err := store.ReadWitnessFile(f, w.Origin, w.Verifier)
		switch {
		case err != nil:
			fmt.Fprintf(e.stdout, "witness FAILED: %v\n", err)
			failed = true
		case cp == nil:
			fmt.Fprintf(e.stdout, "witness %s: none yet (the next receipt starts it)\n", f)
		default:
			found = true
			err := w.CheckLocation(cp, f)
			if err == nil {
				err = proveExtends(ctx, st, cp, size)
			}
			if err == nil {
				err = st.CheckChains(ctx, cp, f)
			}
			if err != nil {
				fmt.Fprintf(e.stdout, "witness FAILED: %s: %v\n", f, err)
				failed = true
				continue
			}
			behind := ""
			if size > cp.Size {
				behind = fmt.Sprintf("; %d receipts since", size-cp.Size)
			}
			fmt.Fprintf(e.stdout, "witness %s: log size %d, and the store (size %d) extends it: consistency proof checked%s\n", f, cp.Size, size, behind)
		}
	}
	if !found && !failed {
		// No witness file at all: refused if the store records one.
		if _, _, err := st.WitnessState(ctx); err != nil {
			fmt.Fprintf(e.stdout, "witness FAILED: %v\n", err)
			failed = true
		}
	}
	cosFailed := checkCosigners(ctx, e, st, w, size)
	return checkTeamLogs(ctx, e, st, w, home, id) || cosFailed || failed
}

// teamLogs are the logs of a team's machines as its witnesses know them:
// this home's steward's and each trusted issuer's (lines, the issuers
// file's keys).
func teamLogs(id *identity.Identity, lines []string) []witness.TeamLog {
	var logs []witness.TeamLog
	for _, line := range append([]string{id.VerifierKey}, lines...) {
		v, err := note.NewVerifier(line)
		if err != nil {
			continue // an issuer key that is not a note key signs no log
		}
		logs = append(logs, witness.TeamLog{Origin: logOrigin(v.Name()), Key: v})
	}
	return logs
}

// teamWitness is the gate's check of the store against what the witnesses
// cosigned of every machine of the team (gate.Gate.TeamWitness): only on a
// team (an issuers file) whose configuration requires a witness quorum,
// where a decision already depends on reaching the witnesses; nil
// otherwise.
func teamWitness(st *store.Store, id *identity.Identity, lines []string, cfg *config.Config) func(context.Context) error {
	w := st.Witness()
	if len(lines) == 0 || cfg.Witness.Quorum < 1 || w == nil {
		return nil
	}
	logs := teamLogs(id, lines)
	return func(ctx context.Context) error {
		for _, c := range w.Cosigners {
			if client, ok := c.(*witness.Client); ok {
				if _, err := witness.CheckTeam(ctx, st, client, logs, false); err != nil {
					return fmt.Errorf("witness %s: the team's logs: %w", client.Key.Name(), err)
				}
			}
		}
		return nil
	}
}

// checkTeamLogs reports, for `store check`, the store against what each
// witness elsewhere cosigned of every machine of the team (this home's
// steward and each trusted issuer's): on a shared store each machine
// witnesses the log as its own, so a rollback that took out another
// machine's receipts is seen here only this way; and every cosigned
// checkpoint the machines keep in the store is verified.
func checkTeamLogs(ctx context.Context, e *env, st *store.Store, w *store.Witness, home string, id *identity.Identity) bool {
	_, lines, err := loadTrust(home, id)
	if err != nil {
		fmt.Fprintf(e.stdout, "witness FAILED: %v\n", err)
		return true
	}
	if len(lines) == 0 {
		return false // one machine: its own cosigned checkpoint is checked above
	}
	logs := teamLogs(id, lines)
	failed := false
	for _, c := range w.Cosigners {
		client, ok := c.(*witness.Client)
		if !ok {
			continue
		}
		n, err := witness.CheckTeam(ctx, st, client, logs, true)
		if err != nil {
			fmt.Fprintf(e.stdout, "witness FAILED: %s: the team's logs: %v\n", client.Key.Name(), err)
			failed = true
			continue
		}
		fmt.Fprintf(e.stdout, "witness %s: the team's logs: %d of %d cosigned, and the store extends each\n", client.Key.Name(), n, len(logs))
	}
	return failed
}

// checkCosigners reports, for `store check`, the store against what each
// witness elsewhere cosigned: the checkpoint kept in this home, then the
// witness itself, asked to cosign the log as it is now (it refuses a log
// that does not extend what it cosigned, whatever this home's files say).
// A witness that cannot be reached fails the check when a quorum is
// required.
func checkCosigners(ctx context.Context, e *env, st *store.Store, w *store.Witness, size int64) bool {
	if len(w.Cosigners) == 0 {
		return false
	}
	failed := false
	for _, c := range w.Cosigners {
		name := c.Verifier().Name()
		cp, msg, err := store.ReadCosignedFile(w.CosignedFile(c), w.Origin, w.Verifier, c.Verifier())
		switch {
		case err != nil:
			fmt.Fprintf(e.stdout, "witness FAILED: %s: %v\n", name, err)
			failed = true
		case cp == nil:
			fmt.Fprintf(e.stdout, "witness %s: nothing cosigned kept in this home\n", name)
		default:
			if err := proveExtends(ctx, st, cp, size); err != nil {
				fmt.Fprintf(e.stdout, "witness FAILED: %s: the log it cosigned at %s: %v\n", name, cosignedAt(msg, c.Verifier()), err)
				failed = true
				continue
			}
			fmt.Fprintf(e.stdout, "witness %s: cosigned log size %d at %s, and the store (size %d) extends it: consistency proof checked\n", name, cp.Size, cosignedAt(msg, c.Verifier()), size)
		}
	}
	if failed {
		return true // asking the witnesses would only say it again
	}
	err := st.Cosign(ctx)
	var qe *store.QuorumError
	if err != nil && !errors.As(err, &qe) {
		fmt.Fprintf(e.stdout, "witness FAILED: %v\n", err)
		return true
	}
	bad := map[string]error{}
	if qe != nil {
		for _, f := range qe.Failures {
			var ce *store.CosignerError
			if errors.As(f, &ce) {
				bad[ce.Witness] = ce.Err
			}
		}
	}
	for _, c := range w.Cosigners {
		name := c.Verifier().Name()
		err, ok := bad[name]
		switch {
		case !ok:
			fmt.Fprintf(e.stdout, "witness %s: cosigns the log as it is now (size %d)\n", name, size)
		case errors.Is(err, store.ErrRolledBack) || w.Quorum > 0:
			fmt.Fprintf(e.stdout, "witness FAILED: %s: %v\n", name, err)
			failed = true
		default:
			fmt.Fprintf(e.stdout, "witness %s: warning: %v\n", name, err)
		}
	}
	if qe != nil && !qe.Met() {
		fmt.Fprintf(e.stdout, "witness FAILED: %v\n", qe)
		failed = true
	}
	return failed
}

// proveExtends checks, with a consistency proof, that the store's log of
// size extends the witnessed checkpoint cp.
func proveExtends(ctx context.Context, st *store.Store, cp *store.Checkpoint, size int64) error {
	if cp.Size > size {
		return fmt.Errorf("%w: the witness remembers %d receipts, the store holds %d", store.ErrRolledBack, cp.Size, size)
	}
	head, err := st.TreeHash(ctx, size)
	if err != nil {
		return err
	}
	if cp.Size == 0 {
		return nil
	}
	if cp.Size == size {
		if head != cp.Root {
			return fmt.Errorf("%w: the store's root at size %d is %s, the witness's %s", store.ErrRolledBack, size, head, cp.Root)
		}
		return nil
	}
	proof, err := st.ProveTree(ctx, cp.Size, size)
	if err != nil {
		return err
	}
	if err := tlog.CheckTree(proof, size, head, cp.Size, cp.Root); err != nil {
		return fmt.Errorf("%w: the store's log is not an extension of the witnessed one: %v", store.ErrRolledBack, err)
	}
	return nil
}
