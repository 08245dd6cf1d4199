package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/fxamacker/cbor/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

func init() {
	register(&command{name: "receipts", summary: "list, show, verify, export and prove sealed receipts", run: runReceipts})
}

const receiptsUsage = `receipts ls [SESSION]
       receipts show SESSION SEQ | receipts show INDEX
       receipts verify [SESSION]
       receipts verify --steward S --pubkey KEY [--format cbor|jsonl] < export
       receipts export SESSION [--format cbor|jsonl]
       receipts prove INDEX [--size N] | receipts prove --from OLD [--size N]
       receipts checkpoint

ls lists sessions (or one session's receipts); show prints one receipt,
decoded, with its envelope and its verification; verify checks every
signature, every session chain, the Merkle log, the ledger and the latest
checkpoint, or, with --pubkey, an exported chain offline, reporting the first
bad position; export writes a session as a CBOR sequence of envelopes or as
JSON lines; prove prints an inclusion proof for log entry INDEX (or a
consistency proof from tree size OLD) against a fresh signed checkpoint.`

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
	from := fs.Int64("from", -1, "prove: a consistency proof from this earlier tree size")
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
	if *format != "cbor" && *format != "jsonl" {
		return usagef("receipts: --format must be cbor or jsonl")
	}
	if sub == "verify" && *pubkey != "" {
		return verifyExport(e, *steward, *pubkey, *format)
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	keys, err := ep.keys()
	if err != nil {
		return err
	}
	switch sub {
	case "ls":
		return receiptsList(ctx, e, ep, keys, fs.Args())
	case "show":
		return receiptsShow(ctx, e, ep, keys, fs.Args())
	case "verify":
		return receiptsVerify(ctx, e, ep, keys, fs.Args())
	case "export":
		if fs.NArg() != 1 {
			return usagef("receipts export: want one session id")
		}
		entries, err := ep.store.Session(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return fmt.Errorf("session %q has no receipts", fs.Arg(0))
		}
		w := bufio.NewWriter(e.stdout)
		for _, en := range entries {
			if *format == "cbor" {
				w.Write(en.Envelope)
				continue
			}
			b, _ := json.Marshal(map[string]any{"session": en.Session, "sequence": en.Seq, "index": en.Index, "hash": core.ID(en.Hash).String(), "envelope": core.EncodeBase64(en.Envelope)})
			fmt.Fprintf(w, "%s\n", b)
		}
		return w.Flush()
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

func receiptsList(ctx context.Context, e *env, ep *endpoint, keys receipts.Keys, args []string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if len(args) == 0 {
		sessions, err := ep.store.Sessions(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "SESSION\tRECEIPTS\tFIRST\tLAST\tHEAD")
		for _, s := range sessions {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.ID, s.Count, s.First.UTC().Format("2006-01-02T15:04:05Z"), s.Last.UTC().Format("2006-01-02T15:04:05Z"), shortID(core.ID(s.Head).String()))
		}
		return tw.Flush()
	}
	entries, err := ep.store.Session(ctx, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintln(tw, "SEQ\tINDEX\tKIND\tDECISION\tCODE\tDEBIT\tSUMMARY")
	for _, en := range entries {
		a, err := keys.Open(en.Envelope)
		if err != nil {
			fmt.Fprintf(tw, "%d\t%d\tINVALID\t\t\t\t%v\n", en.Seq, en.Index, err)
			continue
		}
		if d := a.Decision; d != nil {
			fmt.Fprintf(tw, "%d\t%d\tdecision\t%s\t%s\t%d µJ\t%s\n", en.Seq, en.Index, d.Decision, d.Code, d.DebitUJ, d.Summary)
		} else {
			f := a.Efficiency
			fmt.Fprintf(tw, "%d\t%d\tefficiency\t%s\t%s\t%d µJ\t%s %s\n", en.Seq, en.Index, f.Status, f.Coverage, f.EstimatedUJ, f.Unit, f.Model)
		}
	}
	return tw.Flush()
}

func receiptsShow(ctx context.Context, e *env, ep *endpoint, keys receipts.Keys, args []string) error {
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
		var entries []store.Entry
		entries, err = ep.store.Session(ctx, args[0])
		if err == nil && seq > uint64(len(entries)) {
			err = fmt.Errorf("session %q has %d receipts", args[0], len(entries))
		}
		if err == nil {
			en = entries[seq-1]
		}
	default:
		return usagef("receipts show: want SESSION SEQ or INDEX")
	}
	if err != nil {
		return err
	}
	out := map[string]any{"session": en.Session, "sequence": en.Seq, "index": en.Index, "hash": core.ID(en.Hash).String(), "envelope_hex": fmt.Sprintf("%x", en.Envelope)}
	if a, err := keys.Open(en.Envelope); err != nil {
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
		entries, err := ep.store.Session(ctx, s.ID)
		if err != nil {
			fmt.Fprintf(e.stdout, "FAIL session %s: %v\n", s.ID, err)
			failed++
			continue
		}
		envs := make([][]byte, len(entries))
		for i, en := range entries {
			envs[i] = en.Envelope
		}
		total += len(envs)
		if _, err := keys.VerifyChain(envs); err != nil {
			fmt.Fprintf(e.stdout, "FAIL session %s: %v\n", s.ID, err)
			failed++
			continue
		}
		fmt.Fprintf(e.stdout, "ok   session %s: %d receipts, chain intact\n", s.ID, len(envs))
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

func receiptsProve(ctx context.Context, e *env, ep *endpoint, args []string, size, from int64) error {
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
	envs, err := splitExport(data, format)
	if err != nil {
		return err
	}
	got, err := receipts.VerifyChain(v, steward, envs)
	if err != nil {
		return err
	}
	if len(got) == 0 {
		return errors.New("the export holds no receipts")
	}
	fmt.Fprintf(e.stdout, "verified: session %s, %d receipts, chain intact, sealed by %s\n", got[0].Session, len(got), steward)
	return nil
}

// splitExport splits a CBOR sequence or JSON lines into envelopes.
func splitExport(data []byte, format string) ([][]byte, error) {
	var envs [][]byte
	if format == "jsonl" {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var line struct {
				Envelope string `json:"envelope"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			b, err := base64.RawURLEncoding.Strict().DecodeString(line.Envelope)
			if err != nil {
				return nil, fmt.Errorf("line %d: envelope: %v", n, err)
			}
			envs = append(envs, b)
		}
		return envs, sc.Err()
	}
	dec := cbor.NewDecoder(bytes.NewReader(data))
	for {
		var raw cbor.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return envs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("receipt %d of the CBOR sequence: %v", len(envs)+1, err)
		}
		envs = append(envs, []byte(raw))
	}
}
