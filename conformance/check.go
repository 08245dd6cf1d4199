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
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

// Result is the verdict on one vector.
type Result struct {
	File string
	Name string
	Err  error  // nil when the vector passed
	Note string // for a passing negative vector, why it was rejected
	// Warnings name what the checker read but could not judge (a key
	// WIRE.md does not define): printed, never counted as a failure.
	Warnings []string
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

// Warnings counts the warnings of every result.
func (r *Report) Warnings() int {
	n := 0
	for _, res := range r.Results {
		n += len(res.Warnings)
	}
	return n
}

// Write prints one line per vector and one per warning, then "N passed, M
// failed".
func (r *Report) Write(w io.Writer) {
	for _, res := range r.Results {
		for _, warn := range res.Warnings {
			fmt.Fprintf(w, "warn %s %s: %s\n", res.File, res.Name, warn)
		}
		switch {
		case res.Err != nil:
			fmt.Fprintf(w, "FAIL %s %s: %v\n", res.File, res.Name, res.Err)
		case res.Note != "":
			fmt.Fprintf(w, "ok   %s %s (%s)\n", res.File, res.Name, res.Note)
		case res.Name == fileResult:
			// a file-level warning only: the vectors have their own lines
		default:
			fmt.Fprintf(w, "ok   %s %s\n", res.File, res.Name)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", r.Passed(), r.Failed())
}

// fileResult names a result about a whole file rather than one vector.
const fileResult = "(file)"

// Verdict is what a file checker says about one vector.
type Verdict struct {
	Name     string
	Note     string
	Err      error
	Warnings []string
}

// FileCheck checks one vector file: it reports one verdict per vector, and
// returns an error only when the file itself lacks WIRE.md's shape (not a
// JSON object, no version 1, no array of vectors), so no vector can be
// judged. Its warnings are about the file's own keys.
type FileCheck func(data []byte, report func(Verdict)) (warnings []string, err error)

// checker checks one vector file.
type checker struct {
	file  string
	check FileCheck
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
func Register(file string, check FileCheck) {
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
				rep.Results = append(rep.Results, Result{File: c.file, Name: fileResult, Err: errors.New("missing from the pack")})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		found++
		var vectors []Result
		warnings, err := c.check(data, func(v Verdict) {
			vectors = append(vectors, Result{File: c.file, Name: v.Name, Note: v.Note, Err: v.Err, Warnings: v.Warnings})
		})
		if err != nil || len(warnings) > 0 {
			rep.Results = append(rep.Results, Result{File: c.file, Name: fileResult, Err: err, Warnings: warnings})
		}
		rep.Results = append(rep.Results, vectors...)
	}
	if found == 0 {
		return nil, fmt.Errorf("%s holds no conformance vector files", dir)
	}
	return rep, nil
}

// object is one JSON object of a vector file, member by member, so that
// each vector is judged on its own and only on the members that its
// verdict depends on: a malformed member fails the vector that needs it,
// never the file, and a member nobody reads is a warning that names it.
type object struct {
	at      string
	raw     json.RawMessage
	members map[string]json.RawMessage
	order   []string
}

// parseObject reads data as one JSON object; at names it in errors.
func parseObject(data []byte, at string) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is not a JSON object", at)
	}
	o := &object{at: at, raw: data, members: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", at, key, err)
		}
		if _, dup := o.members[key]; dup {
			return nil, fmt.Errorf("%s: key %q appears twice", at, key)
		}
		o.members[key] = raw
		o.order = append(o.order, key)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the object", at)
	}
	return o, nil
}

func (o *object) has(key string) bool { _, ok := o.members[key]; return ok }

// get decodes member key into v: strictly (unknown fields inside it are
// errors, integers exact) and never from null, which WIRE.md writes only
// where nullable says.
func (o *object) get(key string, v any) error {
	raw, ok := o.members[key]
	if !ok {
		return fmt.Errorf("%s has no %q", o.at, key)
	}
	if err := noNulls(raw, o.at+"."+key); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s.%s: %w", o.at, key, err)
	}
	return nil
}

// into decodes the whole object into v, whose fields are the members
// known to the caller; the others are left to unknown's warnings.
func (o *object) into(v any) error {
	if err := noNulls(o.raw, o.at); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(o.raw))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", o.at, err)
	}
	return nil
}

// unknown lists, as warnings, the members that are not among known.
func (o *object) unknown(known ...string) []string {
	var out []string
	for _, k := range o.order {
		if !slices.Contains(known, k) {
			out = append(out, fmt.Sprintf("unknown key %q is not part of WIRE.md's shape and was not judged", k))
		}
	}
	return out
}

// vectorFile reads a vector file's top level: version 1 and an array of
// objects. A file without that shape cannot be judged at all. extra names
// the file's other top-level keys.
func vectorFile(data []byte, extra ...string) (top *object, vectors []*object, warnings []string, err error) {
	top, err = parseObject(data, "$")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("malformed vector file: %w", err)
	}
	var version json.Number
	if err := top.get("version", &version); err != nil {
		return nil, nil, nil, fmt.Errorf("malformed vector file: %w", err)
	}
	if version.String() != "1" {
		return nil, nil, nil, fmt.Errorf("unsupported pack version %s (want 1)", version)
	}
	// Each vector's own members are checked for nulls when it is judged,
	// and only those its verdict reads: a negative vector's tampered object
	// may hold anything.
	raw, ok := top.members["vectors"]
	if !ok {
		return nil, nil, nil, errors.New("malformed vector file: $ has no \"vectors\"")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil || raws == nil {
		return nil, nil, nil, errors.New("malformed vector file: $.vectors is not an array (it is null, or another type)")
	}
	for i, raw := range raws {
		v, err := parseObject(raw, fmt.Sprintf("vectors[%d]", i))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("malformed vector file: %w", err)
		}
		vectors = append(vectors, v)
	}
	return top, vectors, top.unknown(append([]string{"version", "vectors"}, extra...)...), nil
}

// name is a vector's name, or its place in the file when it has none.
func (o *object) name() string {
	var n string
	if err := o.get("name", &n); err != nil || n == "" {
		return o.at
	}
	return n
}

// valid reads a vector's "valid" member: absent means a positive vector.
func (o *object) valid() (bool, error) {
	if !o.has("valid") {
		return true, nil
	}
	var v bool
	err := o.get("valid", &v)
	return v, err
}

// reason is a negative vector's expected rejection, free text (decision 8).
func (o *object) reason() string {
	var r string
	o.get("reason", &r)
	return r
}

// negative judges a vector that must be refused: refuse is nil when the
// implementation accepted it.
func negative(o *object, refuse error) (string, error) {
	if refuse == nil {
		if r := o.reason(); r != "" {
			return "", fmt.Errorf("accepted a negative vector (expected: %s)", r)
		}
		return "", errors.New("accepted a negative vector")
	}
	return "rejected: " + refuse.Error(), nil
}

// nullable are the only keys WIRE.md lets be null ("closing_tier":
// "L0".."L4"|null). Everywhere else a field that is absent is omitted, and
// an array is an array: encoding/json would take "stages": null for an
// empty list.
var nullable = map[string]bool{"closing_tier": true, "gated_closing_tier": true}

// noNulls rejects a null anywhere in data but under a nullable key.
func noNulls(data []byte, at string) error {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	if doc == nil && !nullable[at[strings.LastIndexByte(at, '.')+1:]] {
		return fmt.Errorf("%s is null: WIRE.md omits an absent field and never writes null there", at)
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
	if doc == nil {
		return nil
	}
	return walk(doc, at)
}

// hexMember decodes a _hex member.
func hexMember(o *object, key string) ([]byte, error) {
	var s string
	if err := o.get(key, &s); err != nil {
		return nil, err
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}

// judge runs each vector of a file through one verdict function.
func judge(vectors []*object, known []string, report func(Verdict), verdict func(o *object) (string, error)) {
	for _, o := range vectors {
		note, err := "", error(nil)
		// A positive vector is WIRE.md's shape throughout, so a null
		// anywhere in it is an error; a negative one is judged only on
		// the members its verdict reads.
		if valid, verr := o.valid(); verr == nil && valid {
			err = noNulls(o.raw, o.at)
		}
		if err == nil {
			note, err = verdict(o)
		}
		report(Verdict{Name: o.name(), Note: note, Err: err, Warnings: o.unknown(known...)})
	}
}

func checkCodingOps(data []byte, report func(Verdict)) ([]string, error) {
	_, vectors, warnings, err := vectorFile(data)
	if err != nil {
		return nil, err
	}
	judge(vectors, []string{"name", "op", "canonical_cbor_hex", "op_id", "valid", "reason"}, report, checkCodingOp)
	return warnings, nil
}

// checkCodingOp judges one coding op vector. A negative one (which WIRE.md's
// file shape does not list, but a peer may add as the other files do) must
// be refused: its canonical_cbor_hex when it has one, else its op.
func checkCodingOp(o *object) (string, error) {
	valid, err := o.valid()
	if err != nil {
		return "", err
	}
	if !valid {
		if o.has("canonical_cbor_hex") {
			b, err := hexMember(o, "canonical_cbor_hex")
			if err != nil {
				return "", err
			}
			_, refuse := core.DecodeOp(b)
			return negative(o, refuse)
		}
		var op core.CodingOp
		if err := o.get("op", &op); err != nil {
			return negative(o, err)
		}
		_, refuse := op.Canonical()
		return negative(o, refuse)
	}
	var op core.CodingOp
	var opID core.ID
	if err := o.get("op", &op); err != nil {
		return "", err
	}
	if err := o.get("op_id", &opID); err != nil {
		return "", err
	}
	want, err := hexMember(o, "canonical_cbor_hex")
	if err != nil {
		return "", err
	}
	got, err := op.Canonical()
	if err != nil {
		return "", err
	}
	if !bytes.Equal(got, want) {
		return "", fmt.Errorf("canonical CBOR differs:\n got  %x\n want %x", got, want)
	}
	if id := core.Sum(got); id != opID {
		return "", fmt.Errorf("op_id %s, want %s", id, opID)
	}
	back, err := core.DecodeOp(want)
	if err != nil {
		return "", fmt.Errorf("decoding the canonical bytes: %w", err)
	}
	if id, _ := back.ID(); id != opID {
		return "", fmt.Errorf("decoded op has op_id %s, want %s", id, opID)
	}
	return "", nil
}

func keyFromSeedHex(s string) (ed25519.PrivateKey, error) {
	seed, err := hex.DecodeString(s)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("seed_hex %q is not 32 hex-encoded bytes", s)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

func checkSignatures(data []byte, report func(Verdict)) ([]string, error) {
	_, vectors, warnings, err := vectorFile(data)
	if err != nil {
		return nil, err
	}
	judge(vectors, []string{"name", "seed_hex", "op", "op_id", "signature", "signed_op_cbor_hex", "valid", "reason"}, report, checkSignature)
	return warnings, nil
}

// checkSignature judges one signature vector. In a negative one only
// signed_op_cbor_hex is judged (decision 9): op, op_id and signature
// describe the tampered object, may be anything, and are not read.
func checkSignature(o *object) (string, error) {
	valid, err := o.valid()
	if err != nil {
		return "", err
	}
	signed, err := hexMember(o, "signed_op_cbor_hex")
	if err != nil {
		return "", err
	}
	_, id, openErr := core.OpenSignedOp(signed)
	if !valid {
		return negative(o, openErr)
	}
	if openErr != nil {
		return "", fmt.Errorf("rejected a valid signed op: %w", openErr)
	}
	var (
		op      core.CodingOp
		opID    core.ID
		sig     core.Bytes
		seedHex string
	)
	for key, v := range map[string]any{"op": &op, "op_id": &opID, "signature": &sig, "seed_hex": &seedHex} {
		if err := o.get(key, v); err != nil {
			return "", err
		}
	}
	if id != opID {
		return "", fmt.Errorf("op_id %s, want %s", id, opID)
	}
	// Reproduce: Ed25519 is deterministic, so the seed gives the same bytes.
	key, err := keyFromSeedHex(seedHex)
	if err != nil {
		return "", err
	}
	s, err := core.SignOp(key, &op)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	if !bytes.Equal(s.Sig, sig) {
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

func checkReceipts(data []byte, report func(Verdict)) ([]string, error) {
	top, vectors, warnings, err := vectorFile(data, "steward", "public_key", "seed_hex")
	if err != nil {
		return nil, err
	}
	var (
		steward string
		pubKey  core.PublicKey
		seedHex string
	)
	if err := top.get("steward", &steward); err != nil {
		return nil, fmt.Errorf("malformed vector file: %w", err)
	}
	if err := top.get("public_key", &pubKey); err != nil {
		return nil, fmt.Errorf("malformed vector file: %w", err)
	}
	verifier, err := core.NewVerifier(steward, pubKey[:])
	if err != nil {
		return nil, err
	}
	// The seed only reproduces positive vectors: a bad one fails those,
	// while the negative ones are still judged by the public key.
	var sealer *core.Sealer
	sealErr := top.get("seed_hex", &seedHex)
	if sealErr == nil {
		key, err := keyFromSeedHex(seedHex)
		switch {
		case err != nil:
			sealErr = err
		case !bytes.Equal(key.Public().(ed25519.PublicKey), pubKey[:]):
			sealErr = errors.New("seed_hex does not give public_key")
		default:
			sealer, sealErr = core.NewSealer(steward, key)
		}
	}
	judge(vectors, []string{"name", "core", "cose_sign1_hex", "valid", "reason"}, report, func(o *object) (string, error) {
		return checkReceipt(o, verifier, sealer, sealErr)
	})
	return warnings, nil
}

// checkReceipt judges one receipt vector; in a negative one only
// cose_sign1_hex is judged, its core describes the tampered object.
func checkReceipt(o *object, verifier *core.Verifier, sealer *core.Sealer, sealErr error) (string, error) {
	valid, err := o.valid()
	if err != nil {
		return "", err
	}
	env, err := hexMember(o, "cose_sign1_hex")
	if err != nil {
		return "", err
	}
	got, verr := verifier.Verify(env)
	if !valid {
		return negative(o, verr)
	}
	if verr != nil {
		return "", fmt.Errorf("rejected a valid envelope: %w", verr)
	}
	var r core.OpReceipt
	if err := o.get("core", &r); err != nil {
		return "", err
	}
	want, err := r.Canonical()
	if err != nil {
		return "", fmt.Errorf("the vector's core: %w", err)
	}
	payload, _ := got.Canonical()
	if !bytes.Equal(payload, want) {
		return "", fmt.Errorf("payload is not the core's canonical form:\n got  %x\n want %x", payload, want)
	}
	if sealErr != nil {
		return "", fmt.Errorf("cannot reproduce the envelope: %w", sealErr)
	}
	// Reproduce the envelope from the core and the seed.
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

func checkCascade(data []byte, report func(Verdict)) ([]string, error) {
	_, vectors, warnings, err := vectorFile(data)
	if err != nil {
		return nil, err
	}
	judge(vectors, []string{"name", "stages", "closing_tier", "consulted", "valid", "reason"}, report, checkCascadeVector)
	return warnings, nil
}

// checkCascadeVector judges one cascade vector. A negative one (a peer's
// addition: WIRE.md lists none) names stages the cascade must refuse.
func checkCascadeVector(o *object) (string, error) {
	valid, err := o.valid()
	if err != nil {
		return "", err
	}
	var stages []ScriptedStage
	if err := o.get("stages", &stages); err != nil {
		if !valid {
			return negative(o, err)
		}
		return "", err
	}
	res, runErr := runCascade(stages)
	if !valid {
		return negative(o, runErr)
	}
	if runErr != nil {
		return "", runErr
	}
	var closingTier *core.Tier
	var consultedWant []core.Tier
	if err := o.get("closing_tier", &closingTier); err != nil {
		return "", err
	}
	if err := o.get("consulted", &consultedWant); err != nil {
		return "", err
	}
	var closing *core.Tier
	if res.Closed() {
		closing = &res.Closing
	}
	if (closing == nil) != (closingTier == nil) || closing != nil && *closing != *closingTier {
		return "", fmt.Errorf("closing tier %v, want %v", tierOrNull(closing), tierOrNull(closingTier))
	}
	consulted := make([]core.Tier, len(res.Consulted))
	for i, c := range res.Consulted {
		consulted[i] = c.Tier
	}
	if !slices.Equal(consulted, consultedWant) {
		return "", fmt.Errorf("consulted %v, want %v", consulted, consultedWant)
	}
	return "", nil
}

// runCascade runs scripted stages through the real cascade.
func runCascade(scriptedStages []ScriptedStage) (*tiers.Result, error) {
	stages := make([]tiers.Stage, len(scriptedStages))
	for i, s := range scriptedStages {
		switch s.Outcome {
		case "close", "miss", "error":
		default:
			return nil, fmt.Errorf("stage %d: unknown outcome %q", i, s.Outcome)
		}
		stages[i] = scripted{s.Tier, s.Outcome}
	}
	c, err := tiers.New(stages...)
	if err != nil {
		return nil, err
	}
	return c.Run(context.Background(), &tiers.Request{})
}

func tierOrNull(t *core.Tier) string {
	if t == nil {
		return "null"
	}
	return string(*t)
}

func checkTrees(data []byte, report func(Verdict)) ([]string, error) {
	_, vectors, warnings, err := vectorFile(data)
	if err != nil {
		return nil, err
	}
	judge(vectors, []string{"name", "files", "canonical_cbor_hex", "tree_id", "valid", "reason"}, report, checkTree)
	return warnings, nil
}

// checkTree judges one tree vector. A negative one ("valid": false, the
// convention of the signature and receipt files) must be refused: every
// form it gives, its files and its canonical_cbor_hex, is judged, and
// neither may be accepted; its tree_id describes the refused tree and is
// not read.
func checkTree(o *object) (string, error) {
	valid, err := o.valid()
	if err != nil {
		return "", err
	}
	if !valid {
		return checkNegativeTree(o)
	}
	var files core.Files
	var treeID core.ID
	if err := o.get("files", (*treeFiles)(&files)); err != nil {
		return "", err
	}
	if err := o.get("tree_id", &treeID); err != nil {
		return "", err
	}
	want, err := hexMember(o, "canonical_cbor_hex")
	if err != nil {
		return "", err
	}
	t, err := files.Tree()
	if err != nil {
		return "", err
	}
	got, err := t.Canonical()
	if err != nil {
		return "", err
	}
	if !bytes.Equal(got, want) {
		return "", fmt.Errorf("canonical CBOR differs:\n got  %x\n want %x", got, want)
	}
	if id := t.ID(); id != treeID {
		return "", fmt.Errorf("tree_id %s, want %s", id, treeID)
	}
	back, err := core.DecodeTree(want)
	if err != nil {
		return "", fmt.Errorf("decoding the canonical bytes: %w", err)
	}
	if back.ID() != treeID {
		return "", errors.New("decoded tree has another id")
	}
	return "", nil
}

func checkNegativeTree(o *object) (string, error) {
	var notes []string
	judged := false
	if o.has("files") {
		judged = true
		var files core.Files
		err := o.get("files", (*treeFiles)(&files))
		if err == nil {
			_, err = files.Tree()
		}
		if err == nil {
			return negative(o, nil)
		}
		notes = append(notes, "files: "+err.Error())
	}
	if o.has("canonical_cbor_hex") {
		judged = true
		b, err := hexMember(o, "canonical_cbor_hex")
		if err != nil {
			return "", err
		}
		_, err = core.DecodeTree(b)
		if err == nil {
			return negative(o, nil)
		}
		notes = append(notes, "canonical_cbor_hex: "+err.Error())
	}
	if !judged {
		return "", errors.New("a negative tree vector needs files or canonical_cbor_hex to judge")
	}
	return "rejected: " + strings.Join(notes, "; "), nil
}

// treeFiles decodes a vector's "files" with each path as written: a map
// whose keys the JSON decoder would fold (two spellings of one key) is
// refused, since a tree cannot hold a path twice.
type treeFiles core.Files

func (f *treeFiles) UnmarshalJSON(b []byte) error {
	o, err := parseObject(b, "files")
	if err != nil {
		return err
	}
	out := treeFiles{}
	for _, p := range o.order {
		var c core.Bytes
		if err := json.Unmarshal(o.members[p], &c); err != nil {
			return fmt.Errorf("files[%q]: %w", p, err)
		}
		if c == nil {
			c = core.Bytes{}
		}
		out[p] = []byte(c)
	}
	*f = out
	return nil
}
