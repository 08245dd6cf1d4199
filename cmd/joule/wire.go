package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
)

func init() {
	register(&command{name: "tree-id", summary: "print the tree state id of a directory", run: runTreeID})
	register(&command{name: "op-id", summary: "print the op_id of a CodingOp read as JSON on stdin", run: runOpID})
	register(&command{name: "receipt", summary: "verify a receipt envelope: receipt verify --steward S --pubkey KEY", run: runReceipt})
	register(&command{name: "keygen", summary: "create the endpoint's Ed25519 key in $JOULE_HOME", run: runKeygen})
}

// maxInput bounds what a command reads from stdin.
const maxInput = 64 << 20

func readAllLimited(r io.Reader) ([]byte, error) { return readAllLimitedN(r, maxInput) }

// readAllLimitedN reads r up to limit bytes; more is an error, not a cut.
func readAllLimitedN(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("input exceeds %d MiB", limit>>20)
	}
	return b, nil
}

func runTreeID(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "tree-id", "tree-id [-cbor] DIR\n\nPrints the content address of DIR's tree state: every regular file, .git skipped.")
	asCBOR := fs.Bool("cbor", false, "print the canonical CBOR of the tree state as hex instead")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("tree-id: want exactly one directory")
	}
	t, err := core.TreeOfDir(fs.Arg(0))
	if err != nil {
		return err
	}
	if *asCBOR {
		b, err := t.Canonical()
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, hex.EncodeToString(b))
		return nil
	}
	fmt.Fprintln(e.stdout, t.ID())
	return nil
}

func runOpID(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "op-id", "op-id [-cbor] < op.json\n\nReads a CodingOp as JSON (the shape of coding_op_vectors.json: bytes as\nunpadded base64url) and prints its op_id.")
	asCBOR := fs.Bool("cbor", false, "print the canonical CBOR as hex instead")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	b, err := readAllLimited(e.stdin)
	if err != nil {
		return err
	}
	var op core.CodingOp
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&op); err != nil {
		return withHint(fmt.Errorf("op-id: reading the op: %w", err), `stdin wants {"prior","edits":[{"path","anchor":{"range":[s,e]}|{"hunk"},"replacement"}],"author","intent","tier"}`)
	}
	c, err := op.Canonical()
	if err != nil {
		return err
	}
	if *asCBOR {
		fmt.Fprintln(e.stdout, hex.EncodeToString(c))
		return nil
	}
	fmt.Fprintln(e.stdout, core.Sum(c))
	return nil
}

// readEnvelope reads an envelope from r: hex text, or else raw CBOR bytes.
func readEnvelope(r io.Reader) ([]byte, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errors.New("no envelope on stdin")
	}
	if raw, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil && len(raw) > 0 {
		return raw, nil
	}
	return b, nil
}

func runReceipt(_ context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] != "verify" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(e.stdout, "usage: joule receipt verify --steward S --pubkey KEY < envelope")
			return nil
		}
		return usagef("receipt: want 'receipt verify --steward S --pubkey KEY < envelope'")
	}
	fs := newFlags(e, "receipt verify", "receipt verify --steward S --pubkey KEY < envelope\n\nVerifies one receipt, a JCR-1 receipt (joule-code/1) or a session receipt\n(joule-decision/1, efficiency/1: the envelope_hex 'joule receipts show'\nprints), tagged COSE_Sign1, raw or hex on stdin, against\nthe steward and its Ed25519 public key, and prints the receipt core as JSON.\nKEY is the raw key as unpadded base64url, or a signed-note verifier key\n(the content of steward.pub), whose name then gives the steward.")
	steward := fs.String("steward", "", "the expected steward (the COSE kid)")
	pubkey := fs.String("pubkey", "", "the steward's public key")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *pubkey == "" {
		return usagef("receipt verify: --pubkey is required")
	}
	key, name, err := identity.ParsePublicKey(*pubkey)
	if err != nil {
		return err
	}
	if *steward == "" {
		*steward = name
	}
	if *steward == "" {
		return usagef("receipt verify: --steward is required with a raw public key")
	}
	v, err := core.NewVerifier(*steward, key[:])
	if err != nil {
		return err
	}
	env, err := readEnvelope(e.stdin)
	if err != nil {
		return err
	}
	var r any
	kind := "JCR-1 receipt"
	jcr, err := v.Verify(env)
	r = jcr
	if err != nil {
		// A decision or efficiency receipt (what receipts show prints).
		a, aerr := receipts.Open(v, *steward, env)
		if aerr != nil {
			if n := exportLength(env); n > 0 {
				return withHint(fmt.Errorf("stdin holds an export of a session's chain (%d receipts), not one envelope", n),
					"verify a chain with: joule receipts verify --pubkey KEY < FILE")
			}
			return fmt.Errorf("%w (nor is it a decision or efficiency receipt: %v)", err, aerr)
		}
		r, kind = a.Core(), "session receipt"
	}
	out, _ := json.MarshalIndent(r, "", "  ")
	w := bufio.NewWriter(e.stdout)
	fmt.Fprintf(w, "%s\n", out)
	fmt.Fprintf(w, "verified: %s %s sealed by %s\n", kind, core.Sum(env), *steward)
	if kind == "session receipt" {
		fmt.Fprintln(w, "note: this checks its signature alone; its place in its session's chain is checked by 'joule receipts export SESSION | joule receipts verify --steward S --pubkey KEY'")
	}
	return w.Flush()
}

// exportLength is the number of envelopes in data when it is an export of
// 'joule receipts export' (JSON lines, or a CBOR sequence of more than one
// envelope), else 0.
func exportLength(data []byte) int {
	format := receipts.ExportFormat(data)
	envs, err := receipts.SplitExport(data, format)
	if err != nil || len(envs) == 0 || format == receipts.ExportCBOR && len(envs) < 2 {
		return 0
	}
	return len(envs)
}

func runKeygen(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "keygen", "keygen [--steward NAME] [--force]\n\nCreates the endpoint's Ed25519 key in $JOULE_HOME (default\n~/.local/share/joule): steward.key (mode 0600) and steward.pub.")
	steward := fs.String("steward", "", "the endpoint identity named in every receipt (default: joule@HOSTNAME)")
	force := fs.Bool("force", false, "replace an existing key (receipts sealed with the old key stay verifiable with the old public key only)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	home, err := identity.Home()
	if err != nil {
		return err
	}
	if *steward == "" {
		*steward = defaultSteward()
	}
	id, err := identity.Create(home, *steward, *force)
	if errors.Is(err, identity.ErrExists) {
		return withHint(err, "use --force to replace it, or set JOULE_HOME to another directory")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "steward:    %s\npublic key: %s\nnote key:   %s\nhome:       %s\n", id.Steward, id.Public(), id.VerifierKey, home)
	return nil
}
