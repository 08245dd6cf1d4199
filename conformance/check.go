package conformance

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

// Result is the verdict on one vector.
type Result struct {
	File string
	Name string
	Err  error  // nil when the vector passed
	Note string // for a passing negative vector, why it was rejected
}

// Report collects the results of a pack.
type Report struct {
	Results []Result
}

// Passed and Failed count the results.
func (r *Report) Passed() int { return len(r.Results) - r.Failed() }

func (r *Report) Failed() int {
	n := 0
	for _, res := range r.Results {
		if res.Err != nil {
			n++
		}
	}
	return n
}

// Write prints one line per vector, then "N passed, M failed".
func (r *Report) Write(w io.Writer) {
	for _, res := range r.Results {
		switch {
		case res.Err != nil:
			fmt.Fprintf(w, "FAIL %s %s: %v\n", res.File, res.Name, res.Err)
		case res.Note != "":
			fmt.Fprintf(w, "ok   %s %s (%s)\n", res.File, res.Name, res.Note)
		default:
			fmt.Fprintf(w, "ok   %s %s\n", res.File, res.Name)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", r.Passed(), r.Failed())
}

// checker checks one vector file; it adds one result per vector.
type checker struct {
	file  string
	check func(data []byte, add func(name string, note string, err error)) error
}

// Checkers lists the vector files a pack may hold and how each is checked.
// Extra classes (the gated cascade) register here too.
var checkers = []checker{
	{FileCodingOps, checkCodingOps},
	{FileSignatures, checkSignatures},
	{FileReceipts, checkReceipts},
	{FileCascade, checkCascade},
	{FileTree, checkTrees},
}

// Register adds a vector file kind to the checker. It is for packages that
// implement further conformance classes.
func Register(file string, check func(data []byte, add func(name, note string, err error)) error) {
	checkers = append(checkers, checker{file, check})
}

// Check checks every vector file in dir. A missing file of the five core
// classes is a failure; a missing registered extra class is skipped.
func Check(dir string) (*Report, error) {
	rep := &Report{}
	found := 0
	for i, c := range checkers {
		data, err := os.ReadFile(filepath.Join(dir, c.file))
		if errors.Is(err, os.ErrNotExist) {
			if i < 5 {
				rep.Results = append(rep.Results, Result{File: c.file, Name: "(file)", Err: errors.New("missing from the pack")})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		found++
		add := func(name, note string, err error) {
			rep.Results = append(rep.Results, Result{File: c.file, Name: name, Note: note, Err: err})
		}
		if err := c.check(data, add); err != nil {
			rep.Results = append(rep.Results, Result{File: c.file, Name: "(file)", Err: err})
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("%s holds no conformance vector files", dir)
	}
	return rep, nil
}

// decodeFile decodes a vector file strictly: unknown fields are errors, so
// a misspelt key cannot silently skip a check.
func decodeFile(data []byte, v any) error {
	if err := noNulls(data); err != nil {
		return fmt.Errorf("malformed vector file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed vector file: %w", err)
	}
	if dec.More() {
		return errors.New("malformed vector file: trailing data")
	}
	return nil
}

// nullable are the only keys WIRE.md lets be null ("closing_tier":
// "L0".."L4"|null). Everywhere else a field that is absent is omitted, and
// an array is an array: encoding/json would take "stages": null for an
// empty list.
var nullable = map[string]bool{"closing_tier": true, "gated_closing_tier": true}

// noNulls rejects a null anywhere but under a nullable key.
func noNulls(data []byte) error {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	var walk func(v any, at string) error
	walk = func(v any, at string) error {
		switch v := v.(type) {
		case nil:
			return fmt.Errorf("%s is null: WIRE.md omits an absent field and never writes null there", at)
		case map[string]any:
			for k, e := range v {
				if e == nil && nullable[k] {
					continue
				}
				if err := walk(e, at+"."+k); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range v {
				if err := walk(e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(doc, "$")
}

func checkVersion(v int) error {
	if v != 1 {
		return fmt.Errorf("unsupported pack version %d (want 1)", v)
	}
	return nil
}

func checkCodingOps(data []byte, add func(string, string, error)) error {
	var f CodingOpFile
	if err := decodeFile(data, &f); err != nil {
		return err
	}
	if err := checkVersion(f.Version); err != nil {
		return err
	}
	for _, v := range f.Vectors {
		add(v.Name, "", checkCodingOp(&v))
	}
	return nil
}

func checkCodingOp(v *CodingOpVector) error {
	want, err := hex.DecodeString(v.CanonicalCBORHex)
	if err != nil {
		return fmt.Errorf("canonical_cbor_hex: %w", err)
	}
	got, err := v.Op.Canonical()
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("canonical CBOR differs:\n got  %x\n want %x", got, want)
	}
	if id := core.Sum(got); id != v.OpID {
		return fmt.Errorf("op_id %s, want %s", id, v.OpID)
	}
	op, err := core.DecodeOp(want)
	if err != nil {
		return fmt.Errorf("decoding the canonical bytes: %w", err)
	}
	if id, _ := op.ID(); id != v.OpID {
		return fmt.Errorf("decoded op has op_id %s, want %s", id, v.OpID)
	}
	return nil
}

func keyFromSeedHex(s string) (ed25519.PrivateKey, error) {
	seed, err := hex.DecodeString(s)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("seed_hex %q is not 32 hex-encoded bytes", s)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

func checkSignatures(data []byte, add func(string, string, error)) error {
	var f SignatureFile
	if err := decodeFile(data, &f); err != nil {
		return err
	}
	if err := checkVersion(f.Version); err != nil {
		return err
	}
	for _, v := range f.Vectors {
		note, err := checkSignature(&v)
		add(v.Name, note, err)
	}
	return nil
}

func checkSignature(v *SignatureVector) (string, error) {
	signed, err := hex.DecodeString(v.SignedOpCBORHex)
	if err != nil {
		return "", fmt.Errorf("signed_op_cbor_hex: %w", err)
	}
	_, id, openErr := core.OpenSignedOp(signed)
	if !v.Valid {
		if openErr == nil {
			return "", fmt.Errorf("accepted a negative vector (expected: %s)", v.Reason)
		}
		return "rejected: " + openErr.Error(), nil
	}
	if openErr != nil {
		return "", fmt.Errorf("rejected a valid signed op: %w", openErr)
	}
	if id != v.OpID {
		return "", fmt.Errorf("op_id %s, want %s", id, v.OpID)
	}
	// Reproduce: Ed25519 is deterministic, so the seed gives the same bytes.
	key, err := keyFromSeedHex(v.SeedHex)
	if err != nil {
		return "", err
	}
	s, err := core.SignOp(key, &v.Op)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	if !bytes.Equal(s.Sig, v.Signature) {
		return "", errors.New("reproduced signature differs")
	}
	enc, err := s.Encode()
	if err != nil {
		return "", err
	}
	if !bytes.Equal(enc, signed) {
		return "", fmt.Errorf("reproduced signed op differs:\n got  %x\n want %x", enc, signed)
	}
	return "", nil
}

func checkReceipts(data []byte, add func(string, string, error)) error {
	var f ReceiptFile
	if err := decodeFile(data, &f); err != nil {
		return err
	}
	if err := checkVersion(f.Version); err != nil {
		return err
	}
	verifier, err := core.NewVerifier(f.Steward, f.PublicKey[:])
	if err != nil {
		return err
	}
	key, err := keyFromSeedHex(f.SeedHex)
	if err != nil {
		return err
	}
	if !bytes.Equal(key.Public().(ed25519.PublicKey), f.PublicKey[:]) {
		return errors.New("seed_hex does not give public_key")
	}
	sealer, err := core.NewSealer(f.Steward, key)
	if err != nil {
		return err
	}
	for _, v := range f.Vectors {
		note, err := checkReceipt(&v, verifier, sealer)
		add(v.Name, note, err)
	}
	return nil
}

func checkReceipt(v *ReceiptVector, verifier *core.Verifier, sealer *core.Sealer) (string, error) {
	env, err := hex.DecodeString(v.COSESign1Hex)
	if err != nil {
		return "", fmt.Errorf("cose_sign1_hex: %w", err)
	}
	got, verr := verifier.Verify(env)
	if !v.Valid {
		if verr == nil {
			return "", fmt.Errorf("accepted a negative vector (expected: %s)", v.Reason)
		}
		return "rejected: " + verr.Error(), nil
	}
	if verr != nil {
		return "", fmt.Errorf("rejected a valid envelope: %w", verr)
	}
	want, err := v.Core.Canonical()
	if err != nil {
		return "", fmt.Errorf("the vector's core: %w", err)
	}
	payload, _ := got.Canonical()
	if !bytes.Equal(payload, want) {
		return "", fmt.Errorf("payload is not the core's canonical form:\n got  %x\n want %x", payload, want)
	}
	// Reproduce the envelope from the core and the seed.
	r := v.Core
	again, err := sealer.Seal(&r)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(again, env) {
		return "", fmt.Errorf("resealed envelope differs:\n got  %x\n want %x", again, env)
	}
	return "", nil
}

// scripted is a stage with a fixed outcome, for the cascade vectors.
type scripted struct {
	tier    core.Tier
	outcome string
}

func (s scripted) Tier() core.Tier { return s.tier }

func (s scripted) TryResolve(context.Context, *tiers.Request) (*tiers.Resolution, error) {
	switch s.outcome {
	case "close":
		return &tiers.Resolution{Answer: "closed at " + string(s.tier)}, nil
	case "error":
		return nil, errors.New("scripted error")
	}
	return nil, nil
}

func checkCascade(data []byte, add func(string, string, error)) error {
	var f CascadeFile
	if err := decodeFile(data, &f); err != nil {
		return err
	}
	if err := checkVersion(f.Version); err != nil {
		return err
	}
	for _, v := range f.Vectors {
		add(v.Name, "", checkCascadeVector(&v))
	}
	return nil
}

func checkCascadeVector(v *CascadeVector) error {
	stages := make([]tiers.Stage, len(v.Stages))
	for i, s := range v.Stages {
		switch s.Outcome {
		case "close", "miss", "error":
		default:
			return fmt.Errorf("stage %d: unknown outcome %q", i, s.Outcome)
		}
		stages[i] = scripted{s.Tier, s.Outcome}
	}
	c, err := tiers.New(stages...)
	if err != nil {
		return err
	}
	res, err := c.Run(context.Background(), &tiers.Request{})
	if err != nil {
		return err
	}
	var closing *core.Tier
	if res.Closed() {
		closing = &res.Closing
	}
	if (closing == nil) != (v.ClosingTier == nil) || closing != nil && *closing != *v.ClosingTier {
		return fmt.Errorf("closing tier %v, want %v", tierOrNull(closing), tierOrNull(v.ClosingTier))
	}
	consulted := make([]core.Tier, len(res.Consulted))
	for i, c := range res.Consulted {
		consulted[i] = c.Tier
	}
	if !slices.Equal(consulted, v.Consulted) {
		return fmt.Errorf("consulted %v, want %v", consulted, v.Consulted)
	}
	return nil
}

func tierOrNull(t *core.Tier) string {
	if t == nil {
		return "null"
	}
	return string(*t)
}

func checkTrees(data []byte, add func(string, string, error)) error {
	var f TreeFile
	if err := decodeFile(data, &f); err != nil {
		return err
	}
	if err := checkVersion(f.Version); err != nil {
		return err
	}
	for _, v := range f.Vectors {
		add(v.Name, "", checkTree(&v))
	}
	return nil
}

func checkTree(v *TreeVector) error {
	files := core.Files{}
	for p, b := range v.Files {
		files[p] = b
	}
	t, err := files.Tree()
	if err != nil {
		return err
	}
	got, err := t.Canonical()
	if err != nil {
		return err
	}
	want, err := hex.DecodeString(v.CanonicalCBORHex)
	if err != nil {
		return fmt.Errorf("canonical_cbor_hex: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("canonical CBOR differs:\n got  %x\n want %x", got, want)
	}
	if id := t.ID(); id != v.TreeID {
		return fmt.Errorf("tree_id %s, want %s", id, v.TreeID)
	}
	back, err := core.DecodeTree(want)
	if err != nil {
		return fmt.Errorf("decoding the canonical bytes: %w", err)
	}
	if back.ID() != v.TreeID {
		return errors.New("decoded tree has another id")
	}
	return nil
}
