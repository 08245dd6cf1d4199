package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/witness"
)

// A receipt's tlog proof ("spicy signature", c2sp.org/tlog-proof) is the
// receipt itself (in the extra line), its inclusion proof, and a
// checkpoint of the log signed by this home and cosigned by the
// witnesses elsewhere: whoever holds the log's key and the witnesses'
// keys can check the one receipt offline, with nothing else.

// receiptsProveSpicy writes the tlog proof of the receipt arg names (a
// log index, or the receipt's id, the hash 'joule gate' prints).
func receiptsProveSpicy(ctx context.Context, e *env, ep *endpoint, args []string) error {
	if len(args) != 1 {
		return usagef("receipts prove --spicy: want one receipt: its log INDEX or its id")
	}
	var (
		en  store.Entry
		err error
	)
	if idx, perr := strconv.ParseInt(args[0], 10, 64); perr == nil {
		en, err = ep.store.EntryAt(ctx, idx)
	} else if id, ierr := core.ParseID(args[0]); ierr == nil {
		en, err = ep.store.EntryByHash(ctx, id)
	} else {
		return usagef("receipts prove --spicy: %q is neither a log index nor a receipt id", args[0])
	}
	if err != nil {
		return err
	}
	w := ep.store.Witness()
	// Have the witnesses cosign the log as it is now, so the proof is of
	// a checkpoint they saw.
	if err := ep.store.Cosign(ctx); err != nil {
		fmt.Fprintf(e.stderr, "joule: warning: %v\n", err)
	}
	msg, cp, names, err := ep.store.Cosigned(en.Index + 1)
	if err != nil {
		return err
	}
	if msg == nil {
		if w != nil && len(w.Cosigners) > 0 {
			fmt.Fprintln(e.stderr, "joule: warning: no witness has cosigned a log that holds this receipt: the proof carries the log's own signature alone")
		}
		if msg, err = ep.store.Checkpoint(ctx, logOrigin(ep.id.Steward), ep.id.NoteSigner); err != nil {
			return err
		}
		v, err := note.NewVerifier(ep.id.VerifierKey)
		if err != nil {
			return err
		}
		n, err := note.Open(msg, note.VerifierList(v))
		if err != nil {
			return err
		}
		c, err := store.ParseCheckpoint([]byte(n.Text))
		if err != nil {
			return err
		}
		cp = &c
	}
	in, err := ep.store.ProveInclusion(ctx, en.Index, cp.Size)
	if err != nil {
		return err
	}
	if in.Root != cp.Root {
		return fmt.Errorf("the store's root at size %d is not the one cosigned: %w", cp.Size, store.ErrRolledBack)
	}
	p := witness.Proof{Extra: en.Envelope, Index: en.Index, Inclusion: in.Proof, Checkpoint: msg}
	if _, err := e.stdout.Write(p.Marshal()); err != nil {
		return err
	}
	by := "no witness"
	if len(names) > 0 {
		by = strings.Join(names, ", ")
	}
	fmt.Fprintf(e.stderr, "joule: receipt %s (log index %d) proved against the log of size %d, cosigned by %s; check it with 'joule receipts verify-proof FILE --key %s/%s%s'\n",
		core.ID(en.Hash), en.Index, cp.Size, by, ep.home, identity.PubKeyFile, witnessKeyFlags(w, names))
	return nil
}

func witnessKeyFlags(w *store.Witness, names []string) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range w.Cosigners {
		v := c.Verifier()
		for _, n := range names {
			if n == v.Name() {
				fmt.Fprintf(&b, " --witness-key %s", shellQuote(fmt.Sprint(v)))
			}
		}
	}
	return b.String()
}

// verifyProof checks a tlog proof of one receipt offline: the log's key
// (a signed-note verifier key, or a file holding one such as
// steward.pub), the witnesses' keys and how many must have cosigned.
func verifyProof(e *env, args []string, logKey string, witnessKeys, issuerKeys []string, quorum int) error {
	if len(args) != 1 {
		return usagef("receipts verify-proof: want one FILE (- for standard input)")
	}
	if logKey == "" {
		return usagef("receipts verify-proof: want --key, the log's verifier key or its steward.pub file")
	}
	b, err := readArgFile(e, args[0], witness.MaxProofSize)
	if err != nil {
		return err
	}
	p, err := witness.ParseProof(b)
	if err != nil {
		return err
	}
	keyText, err := keyArg(logKey)
	if err != nil {
		return err
	}
	logV, err := note.NewVerifier(keyText)
	if err != nil {
		return fmt.Errorf("--key: %v", err)
	}
	pol := witness.Policy{Origin: logOrigin(logV.Name()), Log: logV, Quorum: quorum}
	for _, k := range witnessKeys {
		text, err := keyArg(k)
		if err != nil {
			return err
		}
		v, err := witness.NewVerifier(text)
		if err != nil {
			return fmt.Errorf("--witness-key: %v", err)
		}
		pol.Witnesses = append(pol.Witnesses, v)
	}
	if quorum < 0 {
		pol.Quorum = len(pol.Witnesses)
	}
	if pol.Quorum > len(pol.Witnesses) {
		return usagef("receipts verify-proof: --quorum %d with %d --witness-key", pol.Quorum, len(pol.Witnesses))
	}
	if p.Extra == nil {
		return errors.New("the proof carries no receipt (no extra line): not a receipt's proof")
	}
	v, err := p.Verify(p.Extra, pol)
	if err != nil {
		fmt.Fprintf(e.stdout, "FAIL %v\n", err)
		return &exitError{1}
	}
	// The receipt's own signature, by the log's key or an issuer's.
	stewards := map[string]core.PublicKey{}
	for _, k := range append([]string{keyText}, issuerKeys...) {
		text, err := keyArg(k)
		if err != nil {
			return err
		}
		pub, name, err := identity.ParsePublicKey(text)
		if err != nil || name == "" {
			return fmt.Errorf("key %q: want a signed-note verifier key NAME+HASH+KEY", clipArg(text))
		}
		stewards[name] = pub
	}
	keys, err := receipts.NewKeys(stewards)
	if err != nil {
		return err
	}
	a, err := keys.Open(p.Extra)
	if err != nil {
		fmt.Fprintf(e.stdout, "FAIL the receipt: %v\n", err)
		return &exitError{1}
	}
	fmt.Fprintf(e.stdout, "verified: receipt %s is entry %d of %q (log size %d, root %s)\n", core.ID(core.Sum(p.Extra)), p.Index, v.Checkpoint.Origin, v.Checkpoint.Size, v.Checkpoint.Root)
	fmt.Fprintf(e.stdout, "signed   by the log's key %s\n", logV.Name())
	if len(v.Cosigned) == 0 {
		fmt.Fprintln(e.stdout, "cosigned by no witness given")
	}
	for _, c := range v.Cosigned {
		fmt.Fprintf(e.stdout, "cosigned by %s at %s\n", c.Witness, c.Time.Format("2006-01-02T15:04:05Z"))
	}
	br := a.Brief()
	fmt.Fprintf(e.stdout, "receipt  session %s seq %d, sealed by %s: %s", a.Session, a.Sequence, a.Steward, br.Kind)
	if br.Decision != "" {
		fmt.Fprintf(e.stdout, " %s (%s)", br.Decision, br.Code)
	}
	if br.Tool != "" && br.Summary == "" {
		fmt.Fprintf(e.stdout, " %s", br.Tool)
	}
	if br.Summary != "" {
		fmt.Fprintf(e.stdout, ": %s", cell(br.Summary))
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// keyArg is a key given on the command line, or the first line of the
// file it names.
func keyArg(s string) (string, error) {
	if _, err := os.Stat(s); err != nil {
		return strings.TrimSpace(s), nil
	}
	b, err := os.ReadFile(s)
	if err != nil {
		return "", fmt.Errorf("key file %s: %v", s, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}

func clipArg(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// readArgFile reads the file path names, or standard input for "-", up to
// limit bytes.
func readArgFile(e *env, path string, limit int64) ([]byte, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}
