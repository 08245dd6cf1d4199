package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/audit"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

func init() {
	register(&command{name: "receipts", summary: "list, show, verify, export and prove sealed receipts", run: runReceipts})
}

const receiptsUsage = `receipts ls [SESSION] [--since 2h] [--tool T] [--decision D] [-n N] [--json]
       receipts show SESSION SEQ | receipts show INDEX
       receipts verify [SESSION]
       receipts verify --pubkey KEY [--steward S] < export
       receipts export SESSION [--format cbor|jsonl]
       receipts prove INDEX [--size N] | receipts prove --from OLD|witness|FILE [--size N]
       receipts prove --spicy INDEX|ID > receipt.tlog-proof
       receipts verify-proof FILE --key KEY [--witness-key KEY]... [--quorum K] [--issuer-key KEY]...
       receipts checkpoint

ls lists sessions (or one session's receipts, or with --tool or --decision
every session's matching receipts); SESSION may be a unique prefix; show prints one receipt,
decoded, with its envelope and its verification; verify checks every
signature, every session chain, the Merkle log, the ledger and the latest
checkpoint, or, with --pubkey, an exported chain offline, reporting the first
bad position; export writes a session as a CBOR sequence of envelopes or as
JSON lines; prove prints an inclusion proof for log entry INDEX (or a
consistency proof from tree size OLD, from the checkpoint this home's
witness keeps, or from a checkpoint note in FILE, each checked against the
root that checkpoint signed) against a fresh signed checkpoint; with
--spicy, the receipt's tlog proof (c2sp.org/tlog-proof, a "spicy
signature"): the receipt, its inclusion proof and a checkpoint the
witnesses elsewhere cosigned just now. verify-proof checks such a file
offline: the log's key (KEY, or its steward.pub), every witness's
cosignature (all given, or K of them), the inclusion proof and the
receipt's own signature.`

// LogOrigin names the Merkle log in its checkpoints.
func logOrigin(steward string) string { return "joule receipts log " + steward }

func runReceipts(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("receipts: want a subcommand: ls, show, verify, export, prove, verify-proof or checkpoint")
	}
	sub, rest := args[0], args[1:]
	fs := newFlags(e, "receipts "+sub, receiptsUsage)
	format := fs.String("format", "", "export format: cbor (a CBOR sequence of envelopes, export's default) or jsonl; verify tells them apart itself")
	steward := fs.String("steward", "", "verify an export offline: the steward")
	pubkey := fs.String("pubkey", "", "verify an export offline: the steward's public key (base64url or steward.pub)")
	size := fs.Int64("size", 0, "prove: the tree size to prove against (default: the whole log)")
	from := fs.String("from", "", "prove: a consistency proof from this earlier tree size, from 'witness' (the checkpoint kept in $JOULE_HOME/witness) or from a checkpoint note file")
	spicy := fs.Bool("spicy", false, "prove: write the receipt's tlog proof (c2sp.org/tlog-proof) for 'joule receipts verify-proof'")
	logKey := fs.String("key", "", "verify-proof: the log's verifier key, or a file holding it (its steward.pub)")
	var witnessKeys, issuerKeys stringList
	fs.Var(&witnessKeys, "witness-key", "verify-proof: a witness's cosignature key, or a file holding it (repeat for more)")
	fs.Var(&issuerKeys, "issuer-key", "verify-proof: another steward's key that may have sealed the receipt (a team's)")
	quorum := fs.Int("quorum", -1, "verify-proof: how many of the witnesses given must have cosigned (default: all)")
	var filter listFilter
	var since *string
	if sub == "ls" {
		since = filter.register(fs)
	}
	switch sub {
	case "-h", "--help", "help":
		fmt.Fprintf(e.stdout, "usage: joule %s\n", receiptsUsage)
		return nil
	case "ls", "show", "verify", "export", "prove", "checkpoint", "verify-proof":
	default:
		return unknownSub("receipts", sub, "ls", "show", "verify", "export", "prove", "verify-proof", "checkpoint")
	}
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	if since != nil {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return err
		}
		filter.since = t
	}
	switch *format {
	case "":
		if sub != "verify" {
			*format = receipts.ExportCBOR
		}
	case receipts.ExportCBOR, receipts.ExportJSONL:
	default:
		return usagef("receipts: --format must be cbor or jsonl")
	}
	if sub == "verify" && *pubkey != "" {
		return verifyExport(e, *steward, *pubkey, *format)
	}
	if sub == "verify-proof" {
		return verifyProof(e, fs.Args(), *logKey, witnessKeys, issuerKeys, *quorum)
	}
	open := openEndpoint
	if sub == "ls" || sub == "show" || sub == "verify" || sub == "export" {
		open = openReader
	}
	ep, err := open()
	if err != nil {
		return err
	}
	defer ep.Close()
	keys, err := ep.keys()
	if err != nil {
		return err
	}
	args = fs.Args()
	if len(args) > 0 && (sub == "ls" || sub == "verify" || sub == "export" || sub == "show" && len(args) == 2) {
		if args[0], err = resolveSession(ctx, ep, args[0]); err != nil {
			return err
		}
	}
	switch sub {
	case "ls":
		return receiptsList(ctx, e, ep, keys, args, &filter)
	case "show":
		return receiptsShow(ctx, e, ep, keys, args)
	case "verify":
		return receiptsVerify(ctx, e, ep, keys, args)
	case "export":
		if len(args) != 1 {
			return usagef("receipts export: want one session id")
		}
		warnWitness(ctx, e, ep)
		// Everything is written, damaged receipts included, so that an
		// offline verify of the export names the first bad position.
		rows, verdicts, err := audit.SessionVerdicts(ctx, ep.store, keys, args[0])
		if err != nil {
			return err
		}
		w := bufio.NewWriter(e.stdout)
		for i, en := range rows {
			if *format == receipts.ExportCBOR {
				w.Write(en.Envelope)
				continue
			}
			b, _ := json.Marshal(receipts.ExportLine{Session: en.Session, Sequence: en.Seq, Index: en.Index, Hash: core.ID(en.Hash).String(),
				Envelope: core.EncodeBase64(en.Envelope), Verdict: verdicts[i].Verdict, Reason: verdicts[i].Reason})
			fmt.Fprintf(w, "%s\n", b)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if bad, first := receipts.Damaged(verdicts); bad > 0 {
			fmt.Fprintf(e.stderr, "joule: session %s: %d of %d receipts damaged, first at seq %d (%s); all %d exported\n", args[0], bad, len(rows), rows[first].Seq, verdicts[first].Verdict, len(rows))
		}
		return nil
	case "prove":
		if *spicy {
			if *from != "" || *size != 0 {
				return usagef("receipts prove --spicy: --from and --size do not apply")
			}
			return receiptsProveSpicy(ctx, e, ep, fs.Args())
		}
		return receiptsProve(ctx, e, ep, fs.Args(), *size, *from)
	case "checkpoint":
		cp, err := ep.store.Checkpoint(ctx, logOrigin(ep.id.Steward), ep.id.NoteSigner)
		if err != nil {
			return err
		}
		e.stdout.Write(cp)
		return nil
	}
	return nil
}

// listFilter selects what receipts ls prints.
type listFilter struct {
	since          time.Time // zero: no bound
	tool, decision string    // "": any
	last           int       // 0: all; else the last n
	json           bool
}

func (f *listFilter) register(fs *flag.FlagSet) (since *string) {
	since = fs.String("since", "", "only receipts (or sessions active) since a duration ago (90m, 2h) or a time (2026-01-02, RFC 3339)")
	fs.StringVar(&f.tool, "tool", "", "only decision receipts for this tool (Bash, Read, ...), or efficiency receipts of this unit (model-call)")
	fs.StringVar(&f.decision, "decision", "", "only decision receipts with this decision: allow, deny, ask, rewrite")
	fs.IntVar(&f.last, "n", 0, "only the last N receipts (or sessions)")
	fs.BoolVar(&f.json, "json", false, "print JSON (an array of objects) instead of a table")
	return since
}

// parseSince reads --since (receipts.ParseSince), a usage error when bad.
func parseSince(s string, now time.Time) (time.Time, error) {
	t, err := receipts.ParseSince(s, now)
	if err != nil {
		return time.Time{}, usagef("--since %v", err)
	}
	return t, nil
}

// receiptRow is one line of receipts ls, and its JSON.
type receiptRow struct {
	Session  string `json:"session"`
	Seq      uint64 `json:"sequence"`
	Index    int64  `json:"index"`
	Time     string `json:"time"`
	Verdict  string `json:"verdict"`
	Reason   string `json:"verdict_reason,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Tool     string `json:"tool,omitempty"` // a decision's tool, an efficiency receipt's unit
	Decision string `json:"decision,omitempty"`
	Code     string `json:"code,omitempty"`
	EnergyUJ uint64 `json:"energy_uj"` // a decision's debit, an efficiency receipt's estimate
	Summary  string `json:"summary,omitempty"`
	Hash     string `json:"hash"`
	at       time.Time
}

func toRow(en store.StoredEntry, v receipts.Verdict) receiptRow {
	b := v.Receipt.Brief()
	r := receiptRow{Session: en.Session, Seq: en.Seq, Index: en.Index, Time: en.Time.UTC().Format(time.RFC3339), Verdict: v.Verdict, Hash: core.ID(en.Hash).String(), at: en.Time,
		Kind: b.Kind, Tool: b.Tool, Decision: b.Decision, Code: b.Code, EnergyUJ: b.EnergyUJ, Summary: b.Summary}
	if v.Verdict != receipts.VerdictOK {
		r.Reason = v.Reason
	}
	return r
}

func (f *listFilter) keep(r receiptRow) bool {
	switch {
	case !f.since.IsZero() && r.at.Before(f.since):
		return false
	case f.tool != "" && r.Tool != f.tool:
		return false
	case f.decision != "" && r.Decision != f.decision:
		return false
	}
	return true
}

func receiptsList(ctx context.Context, e *env, ep *endpoint, keys receipts.Keys, args []string, f *listFilter) error {
	warnWitness(ctx, e, ep)
	if len(args) > 1 {
		return usagef("receipts ls: want at most one session id")
	}
	if f.decision != "" && f.decision != receipts.Allow && f.decision != receipts.Deny && f.decision != receipts.Ask && f.decision != receipts.Rewrite {
		return usagef("receipts ls: --decision %q: want allow, deny, ask or rewrite", f.decision)
	}
	if f.last < 0 {
		return usagef("receipts ls: -n %d: want a positive number", f.last)
	}
	tw := newTable(e.stdout)
	if len(args) == 0 && f.tool == "" && f.decision == "" {
		sessions, err := ep.store.Sessions(ctx)
		if err != nil {
			return err
		}
		type sessionRow struct {
			ID       string `json:"session"`
			Receipts uint64 `json:"receipts"`
			First    string `json:"first"`
			Last     string `json:"last"`
			Head     string `json:"head"`
		}
		out := []sessionRow{}
		for _, s := range sessions {
			if !f.since.IsZero() && s.Last.Before(f.since) {
				continue
			}
			out = append(out, sessionRow{s.ID, s.Count, s.First.UTC().Format(time.RFC3339), s.Last.UTC().Format(time.RFC3339), core.ID(s.Head).String()})
		}
		if f.last > 0 && len(out) > f.last {
			out = out[len(out)-f.last:]
		}
		if f.json {
			return printJSON(e, out)
		}
		fmt.Fprintln(tw, "SESSION\tRECEIPTS\tFIRST\tLAST\tHEAD")
		for _, s := range out {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", cell(s.ID), s.Receipts, s.First, s.Last, shortID(s.Head))
		}
		return tw.Flush()
	}
	// One session's receipts, or, with --tool or --decision and no
	// session, every session's.
	sessions := args
	if len(args) == 0 {
		all, err := ep.store.Sessions(ctx)
		if err != nil {
			return err
		}
		for _, s := range all {
			if f.since.IsZero() || !s.Last.Before(f.since) {
				sessions = append(sessions, s.ID)
			}
		}
	}
	out := []receiptRow{}
	var bad, total int
	var firstBad *receiptRow
	for _, id := range sessions {
		rows, verdicts, err := audit.SessionVerdicts(ctx, ep.store, keys, id)
		if err != nil {
			return err
		}
		total += len(rows)
		for i, en := range rows {
			r := toRow(en, verdicts[i])
			if r.Verdict != receipts.VerdictOK {
				bad++
				if firstBad == nil {
					firstBad = &r
				}
			}
			if f.keep(r) {
				out = append(out, r)
			}
		}
	}
	if f.last > 0 && len(out) > f.last {
		out = out[len(out)-f.last:]
	}
	if f.json {
		if err := printJSON(e, out); err != nil {
			return err
		}
	} else {
		cols := "SEQ\tINDEX\t" + paint(e, ansiPlain, "VERDICT") + "\tKIND\tTOOL\t" + paint(e, ansiPlain, "DECISION") + "\tCODE\tENERGY\tSUMMARY"
		if len(args) == 0 {
			cols = "SESSION\t" + cols
		}
		fmt.Fprintln(tw, cols)
		for _, r := range out {
			if len(args) == 0 {
				fmt.Fprintf(tw, "%s\t", cell(r.Session))
			}
			why := ""
			if r.Reason != "" {
				why = " [" + r.Reason + "]"
			}
			energy := "-"
			if r.Kind != "" {
				energy = grant.FormatEnergy(r.EnergyUJ)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", r.Seq, r.Index, paintVerdict(e, r.Verdict), dash(r.Kind), cell(dash(r.Tool)), paintDecision(e, cell(dash(r.Decision))), cell(dash(r.Code)), energy, cell(r.Summary), cell(why))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if bad > 0 {
		msg := fmt.Sprintf("%d of %d receipts damaged, first at session %s seq %d (%s)", bad, total, firstBad.Session, firstBad.Seq, firstBad.Verdict)
		if f.json {
			fmt.Fprintf(e.stderr, "joule: %s\n", msg)
		} else {
			fmt.Fprintln(e.stdout, msg)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printJSON prints v indented, with a newline.
func printJSON(e *env, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}

// warnWitness says, on standard error, that the store is not what its
// witness remembers: what a read command shows may be a rolled-back log.
func warnWitness(ctx context.Context, e *env, ep *endpoint) {
	if err := ep.witnessProblem(ctx); err != nil {
		fmt.Fprintf(e.stderr, "joule: warning: %v\n", err)
	}
}

func receiptsShow(ctx context.Context, e *env, ep *endpoint, keys receipts.Keys, args []string) error {
	warnWitness(ctx, e, ep)
	var en store.Entry
	var err error
	switch len(args) {
	case 1:
		idx, perr := strconv.ParseInt(args[0], 10, 64)
		if perr != nil {
			return usagef("receipts show: INDEX must be a number")
		}
		en, err = ep.store.EntryAt(ctx, idx)
	case 2:
		seq, perr := strconv.ParseUint(args[1], 10, 64)
		if perr != nil || seq == 0 {
			return usagef("receipts show: SEQ must be a positive number")
		}
		// The receipt's verdict within its chain, damaged or not.
		rows, verdicts, err := audit.SessionVerdicts(ctx, ep.store, keys, args[0])
		if err != nil {
			return err
		}
		for i, r := range rows {
			if r.Seq == seq {
				return showEntry(e, keys, r.Entry, &verdicts[i], r.Fault)
			}
		}
		return fmt.Errorf("session %q has no receipt with seq %d (%d receipts)", args[0], seq, len(rows))
	default:
		return usagef("receipts show: want SESSION SEQ or INDEX")
	}
	if err != nil {
		return err
	}
	return showEntry(e, keys, en, nil, "")
}

// showEntry prints one receipt, decoded, with its verdict: v when the
// caller judged it within its chain, else its signature alone.
func showEntry(e *env, keys receipts.Keys, en store.Entry, v *receipts.Verdict, fault string) error {
	out := map[string]any{"session": en.Session, "sequence": en.Seq, "index": en.Index, "hash": core.ID(en.Hash).String(), "envelope_hex": fmt.Sprintf("%x", en.Envelope)}
	if v != nil {
		out["verdict"] = v.Verdict
		out["verified"] = v.Verdict == receipts.VerdictOK
		if v.Reason != "" {
			out["error"] = v.Reason
		}
		if v.Receipt != nil {
			out["receipt"] = v.Receipt.Core()
		}
		if fault != "" {
			out["row_fault"] = fault
		}
	} else if a, err := keys.Open(en.Envelope); err != nil {
		out["verified"] = false
		out["error"] = err.Error()
	} else {
		out["verified"] = true
		out["receipt"] = a.Core()
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintf(e.stdout, "%s\n", b)
	return nil
}

func receiptsVerify(ctx context.Context, e *env, ep *endpoint, keys receipts.Keys, args []string) error {
	sessions, err := ep.store.Sessions(ctx)
	if err != nil {
		return err
	}
	failed := 0
	total := 0
	for _, s := range sessions {
		if len(args) > 0 && s.ID != args[0] {
			continue
		}
		rows, verdicts, err := audit.SessionVerdicts(ctx, ep.store, keys, s.ID)
		if err != nil {
			fmt.Fprintf(e.stdout, "FAIL session %s: %v\n", s.ID, err)
			failed++
			continue
		}
		total += len(rows)
		if bad, first := receipts.Damaged(verdicts); bad > 0 {
			r, v := rows[first], verdicts[first]
			fmt.Fprintf(e.stdout, "FAIL session %s seq %d (log index %d): %s: %s", s.ID, r.Seq, r.Index, v.Verdict, v.Reason)
			if bad > 1 {
				fmt.Fprintf(e.stdout, " (%d of %d receipts damaged: joule receipts ls %s)", bad, len(rows), s.ID)
			}
			fmt.Fprintln(e.stdout)
			failed++
			continue
		}
		if uint64(len(rows)) != s.Count {
			fmt.Fprintf(e.stdout, "FAIL session %s: %d receipts stored, but its head says %d\n", s.ID, len(rows), s.Count)
			failed++
			continue
		}
		fmt.Fprintf(e.stdout, "ok   session %s: %d receipts, chain intact\n", s.ID, len(rows))
	}
	if len(args) > 0 && total == 0 {
		return fmt.Errorf("session %q has no receipts", args[0])
	}
	if len(args) == 0 {
		failed += verifySigned(ctx, e, ep, keys)
		if err := verifyLatestCheckpoint(ctx, ep); err != nil {
			fmt.Fprintf(e.stdout, "FAIL checkpoint: %v\n", err)
			failed++
		} else {
			fmt.Fprintln(e.stdout, "ok   checkpoint: signed, and the log extends it")
		}
		if cp, _, err := ep.store.WitnessState(ctx); err != nil {
			fmt.Fprintf(e.stdout, "FAIL witness: %v\n", err)
			failed++
		} else if cp != nil {
			fmt.Fprintf(e.stdout, "ok   witness: the log extends the checkpoint witnessed at size %d\n", cp.Size)
		}
	}
	if failed > 0 {
		fmt.Fprintf(e.stdout, "%d receipts checked, %d failures\n", total, failed)
		return &exitError{1}
	}
	fmt.Fprintf(e.stdout, "%d receipts verified\n", total)
	return nil
}

// verifyLatestCheckpoint checks the last signed checkpoint with this
// endpoint's key (store.Store.VerifyLatestCheckpoint).
func verifyLatestCheckpoint(ctx context.Context, ep *endpoint) error {
	nv, err := note.NewVerifier(ep.id.VerifierKey)
	if err != nil {
		return err
	}
	return ep.store.VerifyLatestCheckpoint(ctx, nv)
}

func receiptsProve(ctx context.Context, e *env, ep *endpoint, args []string, size int64, fromArg string) error {
	from := int64(-1)
	var witnessed *store.Checkpoint
	var witnessNote []byte
	if fromArg != "" {
		n, perr := strconv.ParseInt(fromArg, 10, 64)
		switch {
		case perr == nil:
			from = n
		default:
			cp, msg, err := readCheckpointArg(ep, fromArg)
			if err != nil {
				return err
			}
			witnessed, witnessNote, from = cp, msg, cp.Size
		}
	}
	cp, err := ep.store.Checkpoint(ctx, logOrigin(ep.id.Steward), ep.id.NoteSigner)
	if err != nil {
		return err
	}
	out := map[string]any{"checkpoint": string(cp), "verifier_key": ep.id.VerifierKey}
	tree := func(size int64, root tlog.Hash) { out["tree_size"], out["root"] = size, root.String() }
	switch {
	case witnessed != nil:
		c, err := ep.store.ProveExtends(ctx, *witnessed, fromArg, size)
		if err != nil {
			return err
		}
		tree(c.Size, c.Root)
		out["old_size"], out["old_root"], out["consistency_proof"], out["old_checkpoint"] = c.OldSize, c.OldRoot.String(), hashStrings(c.Proof), string(witnessNote)
	case from >= 0:
		c, err := ep.store.ProveConsistency(ctx, from, size)
		if err != nil {
			return err
		}
		tree(c.Size, c.Root)
		out["old_size"], out["old_root"], out["consistency_proof"] = c.OldSize, c.OldRoot.String(), hashStrings(c.Proof)
	case len(args) == 1:
		idx, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			return usagef("receipts prove: INDEX must be a number")
		}
		in, err := ep.store.ProveInclusion(ctx, idx, size)
		if err != nil {
			return err
		}
		tree(in.Size, in.Root)
		out["index"], out["leaf_hash"], out["inclusion_proof"], out["envelope_hex"] = in.Index, in.Leaf.String(), hashStrings(in.Proof), fmt.Sprintf("%x", in.Envelope)
	default:
		return usagef("receipts prove: want INDEX or --from OLD")
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintf(e.stdout, "%s\n", b)
	return nil
}

// readCheckpointArg reads the checkpoint `prove --from` names: "witness"
// for the newest this home's witness keeps, else a file holding a signed
// checkpoint note, verified with this endpoint's key.
func readCheckpointArg(ep *endpoint, arg string) (*store.Checkpoint, []byte, error) {
	w := ep.store.Witness()
	if w == nil {
		return nil, nil, errors.New("receipts prove: the store has no witness")
	}
	var files []string // the witness's own
	if arg != "witness" {
		files = []string{arg}
	}
	cp, msg, err := w.Newest(files...)
	switch {
	case err != nil:
		return nil, nil, err
	case cp == nil && arg == "witness":
		return nil, nil, fmt.Errorf("no witness yet in %s (the next receipt starts it)", w.Files[0])
	case cp == nil:
		return nil, nil, fmt.Errorf("receipts prove --from: %s does not exist (want a tree size, 'witness' or a checkpoint note file)", arg)
	}
	return cp, msg, nil
}

func hashStrings(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

// verifyExport checks an exported chain with only the public key.
func verifyExport(e *env, steward, pubkey, format string) error {
	key, name, err := identity.ParsePublicKey(pubkey)
	if err != nil {
		return err
	}
	if steward == "" {
		steward = name
	}
	if steward == "" {
		return usagef("receipts verify: --steward is required with a raw public key")
	}
	v, err := core.NewVerifier(steward, key[:])
	if err != nil {
		return err
	}
	data, err := readAllLimited(e.stdin)
	if err != nil {
		return err
	}
	if format == "" {
		format = receipts.ExportFormat(data)
	}
	envs, err := receipts.SplitExport(data, format)
	if err != nil {
		return err
	}
	verdicts, err := receipts.Keys{steward: v}.VerifyExport(envs)
	var lastGood uint64
	for _, vd := range verdicts {
		if vd.Verdict == receipts.VerdictOK {
			lastGood = vd.Receipt.Sequence
			continue
		}
		where := fmt.Sprintf("receipt %d of the export", vd.Position)
		if vd.Receipt != nil {
			where += fmt.Sprintf(" (seq %d)", vd.Receipt.Sequence)
		} else if lastGood > 0 {
			where += fmt.Sprintf(" (after seq %d)", lastGood)
		}
		fmt.Fprintf(e.stdout, "FAIL %s: %s: %s\n", where, vd.Verdict, vd.Reason)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "verified: session %s, %d receipts, chain intact, sealed by %s\n", verdicts[0].Receipt.Session, len(envs), steward)
	return nil
}

// resolveSession turns a unique prefix of a session id into the id
// (store.Store.SessionID), with a hint when the prefix is ambiguous.
func resolveSession(ctx context.Context, ep *endpoint, arg string) (string, error) {
	id, err := ep.store.SessionID(ctx, arg)
	if err != nil {
		return "", withHint(errors.New(strings.TrimPrefix(err.Error(), "store: ")), "give more of the session id ('joule receipts ls' lists them)")
	}
	return id, nil
}
