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
       receipts verify --steward S --pubkey KEY [--format cbor|jsonl] < export
       receipts export SESSION [--format cbor|jsonl]
       receipts prove INDEX [--size N] | receipts prove --from OLD|witness|FILE [--size N]
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
root that checkpoint signed) against a fresh signed checkpoint.`

// LogOrigin names the Merkle log in its checkpoints.
func logOrigin(steward string) string { return "joule receipts log " + steward }

func runReceipts(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("receipts: want a subcommand: ls, show, verify, export, prove or checkpoint")
	}
	sub, rest := args[0], args[1:]
	fs := newFlags(e, "receipts "+sub, receiptsUsage)
	format := fs.String("format", "cbor", "export format: cbor (a CBOR sequence of envelopes) or jsonl")
	steward := fs.String("steward", "", "verify an export offline: the steward")
	pubkey := fs.String("pubkey", "", "verify an export offline: the steward's public key (base64url or steward.pub)")
	size := fs.Int64("size", 0, "prove: the tree size to prove against (default: the whole log)")
	from := fs.String("from", "", "prove: a consistency proof from this earlier tree size, from 'witness' (the checkpoint kept in $JOULE_HOME/witness) or from a checkpoint note file")
	var filter listFilter
	var since *string
	if sub == "ls" {
		since = filter.register(fs)
	}
	switch sub {
	case "-h", "--help", "help":
		fmt.Fprintf(e.stdout, "usage: joule %s\n", receiptsUsage)
		return nil
	case "ls", "show", "verify", "export", "prove", "checkpoint":
	default:
		return usagef("receipts: unknown subcommand %q", sub)
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
	if *format != receipts.ExportCBOR && *format != receipts.ExportJSONL {
		return usagef("receipts: --format must be cbor or jsonl")
	}
	if sub == "verify" && *pubkey != "" {
		return verifyExport(e, *steward, *pubkey, *format)
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
		rows, verdicts, err := sessionVerdicts(ctx, ep, keys, args[0])
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

// parseSince reads --since: a duration back from now or a date or time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usagef("--since %s: want a positive duration, e.g. 2h", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("--since %q: want a duration (90m, 2h) or a time (2026-01-02, 2026-01-02T15:04:05Z)", s)
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
	r := receiptRow{Session: en.Session, Seq: en.Seq, Index: en.Index, Time: en.Time.UTC().Format(time.RFC3339), Verdict: v.Verdict, Hash: core.ID(en.Hash).String(), at: en.Time}
	if v.Verdict != receipts.VerdictOK {
		r.Reason = v.Reason
	}
	switch a := v.Receipt; {
	case a == nil:
	case a.Decision != nil:
		d := a.Decision
		r.Kind, r.Tool, r.Decision, r.Code, r.EnergyUJ, r.Summary = "decision", d.Tool, d.Decision, d.Code, d.DebitUJ, d.Summary
	default:
		// An efficiency receipt decides nothing: its status and coverage
		// go in the summary, not the DECISION and CODE columns.
		f := a.Efficiency
		r.Kind, r.Tool, r.EnergyUJ = "efficiency", f.Unit, f.EstimatedUJ
		if f.MeasuredUJ != nil {
			r.EnergyUJ = *f.MeasuredUJ
		}
		r.Summary = strings.TrimSpace(f.Unit+" "+f.Model) + " (" + f.Status + ", " + f.Coverage + ")"
		if len(f.Calls) > 0 {
			r.Summary = fmt.Sprintf("%d × %s", len(f.Calls), r.Summary)
		}
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
		rows, verdicts, err := sessionVerdicts(ctx, ep, keys, id)
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

// sessionVerdicts reads a session's rows as stored, damaged ones
// included, and judges each receipt on its own (receipts.Keys.Verdicts),
// adding what only the row can tell (receipts.Verdict.CheckRow).
func sessionVerdicts(ctx context.Context, ep *endpoint, keys receipts.Keys, session string) ([]store.StoredEntry, []receipts.Verdict, error) {
	rows, err := ep.store.SessionRows(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	envs := make([][]byte, len(rows))
	for i, r := range rows {
		envs[i] = r.Envelope
	}
	verdicts := keys.Verdicts(envs)
	for i, r := range rows {
		verdicts[i].CheckRow(r.Seq, r.Prev, r.Fault)
	}
	return rows, verdicts, nil
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
		rows, verdicts, err := sessionVerdicts(ctx, ep, keys, args[0])
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
		rows, verdicts, err := sessionVerdicts(ctx, ep, keys, s.ID)
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

// verifyLatestCheckpoint checks the last signed checkpoint's signature and
// that the current log is consistent with it.
func verifyLatestCheckpoint(ctx context.Context, ep *endpoint) error {
	text, err := ep.store.LatestCheckpoint(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	nv, err := note.NewVerifier(ep.id.VerifierKey)
	if err != nil {
		return err
	}
	n, err := note.Open(text, note.VerifierList(nv))
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	cp, err := store.ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return err
	}
	size, err := ep.store.LogSize(ctx)
	if err != nil {
		return err
	}
	if cp.Size > size {
		return fmt.Errorf("checkpoint of size %d is ahead of the log (%d)", cp.Size, size)
	}
	if cp.Size == 0 {
		return nil // every log extends the empty one
	}
	proof, err := ep.store.ProveTree(ctx, cp.Size, size)
	if err != nil {
		return err
	}
	head, err := ep.store.TreeHash(ctx, size)
	if err != nil {
		return err
	}
	return tlog.CheckTree(proof, size, head, cp.Size, cp.Root)
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
	logSize, err := ep.store.LogSize(ctx)
	if err != nil {
		return err
	}
	if size == 0 {
		size = logSize
	}
	root, err := ep.store.TreeHash(ctx, size)
	if err != nil {
		return err
	}
	out := map[string]any{"checkpoint": string(cp), "tree_size": size, "root": root.String(), "verifier_key": ep.id.VerifierKey}
	switch {
	case witnessed != nil:
		// The old root is the one the witness signed, never the store's
		// own idea of it.
		if from > size {
			return fmt.Errorf("%w: the checkpoint of %s is of log size %d, but the store holds %d receipts", store.ErrRolledBack, fromArg, from, size)
		}
		var proof tlog.TreeProof
		if from > 0 {
			if proof, err = ep.store.ProveTree(ctx, from, size); err != nil {
				return err
			}
			if err := tlog.CheckTree(proof, size, root, from, witnessed.Root); err != nil {
				return fmt.Errorf("%w: the log of size %d is not an extension of the checkpoint of %s (size %d, root %s): %v", store.ErrRolledBack, size, fromArg, from, witnessed.Root, err)
			}
		}
		out["old_size"], out["old_root"], out["consistency_proof"], out["old_checkpoint"] = from, witnessed.Root.String(), hashStrings(proof), string(witnessNote)
	case from >= 0:
		proof, err := ep.store.ProveTree(ctx, from, size)
		if err != nil {
			return err
		}
		oldRoot, err := ep.store.TreeHash(ctx, from)
		if err != nil {
			return err
		}
		if err := tlog.CheckTree(proof, size, root, from, oldRoot); err != nil {
			return err
		}
		out["old_size"], out["old_root"], out["consistency_proof"] = from, oldRoot.String(), hashStrings(proof)
	case len(args) == 1:
		idx, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			return usagef("receipts prove: INDEX must be a number")
		}
		en, err := ep.store.EntryAt(ctx, idx)
		if err != nil {
			return err
		}
		proof, err := ep.store.ProveRecord(ctx, idx, size)
		if err != nil {
			return err
		}
		if err := tlog.CheckRecord(proof, size, root, idx, tlog.RecordHash(en.Envelope)); err != nil {
			return err
		}
		out["index"], out["leaf_hash"], out["inclusion_proof"], out["envelope_hex"] = idx, tlog.RecordHash(en.Envelope).String(), hashStrings(proof), fmt.Sprintf("%x", en.Envelope)
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
	files := []string{arg}
	if arg == "witness" {
		files = w.Files
	}
	var best *store.Checkpoint
	var bestMsg []byte
	for _, f := range files {
		cp, msg, err := store.ReadWitnessFile(f, w.Origin, w.Verifier)
		if err != nil {
			return nil, nil, err
		}
		if cp != nil && (best == nil || cp.Size > best.Size) {
			best, bestMsg = cp, msg
		}
	}
	if best == nil {
		if arg == "witness" {
			return nil, nil, fmt.Errorf("no witness yet in %s (the next receipt starts it)", w.Files[0])
		}
		return nil, nil, fmt.Errorf("receipts prove --from: %s does not exist (want a tree size, 'witness' or a checkpoint note file)", arg)
	}
	return best, bestMsg, nil
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

// resolveSession turns a unique prefix of a session id into the id. A
// prefix of none is passed on as typed, so that the command reports the
// session as it does any unknown one.
func resolveSession(ctx context.Context, ep *endpoint, arg string) (string, error) {
	id, err := ep.store.ResolveSession(ctx, arg)
	switch {
	case err == nil:
		return id, nil
	case errors.Is(err, store.ErrAmbiguous):
		return "", withHint(errors.New(strings.TrimPrefix(err.Error(), "store: ")), "give more of the session id ('joule receipts ls' lists them)")
	}
	return arg, nil
}
