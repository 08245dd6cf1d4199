package conformance

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/joulehook/joule/core"
)

// The pack is generated from fixed seeds and fixed nonces, so regenerating
// it gives the same bytes: `joule conformance gen` is reproducible and its
// output is checked in as conformance/v1.

// Steward is the endpoint identity of the generated receipt vectors.
const Steward = "conformance.joule.example"

// seed derives a fixture key seed from a label.
func seed(label string) []byte {
	s := sha256.Sum256([]byte("joule conformance v1 seed: " + label))
	return s[:]
}

func fixtureKey(label string) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(seed(label)) }

func pub(k ed25519.PrivateKey) core.PublicKey {
	var p core.PublicKey
	copy(p[:], k.Public().(ed25519.PublicKey))
	return p
}

// fixtureFiles is the base workspace most vectors build on.
func fixtureFiles() core.Files {
	return core.Files{
		"README.md":              []byte("# joule\n\nA gate, a meter, and receipts.\n"),
		"go.mod":                 []byte("module example.com/demo\n\ngo 1.26\n"),
		"main.go":                []byte("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greeting())\n}\n"),
		"greet/greet.go":         []byte("package greet\n\n// Hello returns a greeting.\nfunc Hello(name string) string {\n\treturn \"hello, \" + name\n}\n"),
		"docs/naïve/ünïcödé.txt": []byte("ça marche\n"),
		"assets/blob.bin":        {0x00, 0xff, 0x10, 0x80, 0x7f, 0x00},
		"empty.txt":              {},
	}
}

func mustTreeID(f core.Files) core.ID {
	t, err := f.Tree()
	if err != nil {
		panic("conformance: internal error: " + err.Error())
	}
	return t.ID()
}

// Gen writes a deterministic vector pack for C1–C4 into dir.
func Gen(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct {
		name string
		make func() (any, error)
	}{
		{FileCodingOps, genCodingOps},
		{FileSignatures, genSignatures},
		{FileReceipts, genReceipts},
		{FileCascade, genCascade},
		{FileTree, genTrees},
	}
	for _, f := range files {
		v, err := f.make()
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := writeJSON(filepath.Join(dir, f.name), v); err != nil {
			return err
		}
	}
	for _, g := range genExtra {
		if err := g(dir); err != nil {
			return err
		}
	}
	return nil
}

// genExtra lets further conformance classes add their files to Gen.
var genExtra []func(dir string) error

// RegisterGen adds a generator run after the core files by Gen.
func RegisterGen(gen func(dir string) error) { genExtra = append(genExtra, gen) }

func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// opCases are the C1 operations, each on the fixture base unless noted.
func opCases() []struct {
	name string
	op   core.CodingOp
} {
	base := fixtureFiles()
	prior := mustTreeID(base)
	author := pub(fixtureKey("author-1"))
	readme := base["README.md"]
	mainGo := base["main.go"]
	many := make([]core.Edit, 40)
	for i := range many {
		// Forty single-byte insertions at the start of one file, each on
		// the content the edits before it left.
		many[i] = core.Edit{Path: "empty.txt", Anchor: core.RangeAnchor(0, 0), Replacement: core.Bytes{byte('a' + i%26)}}
	}
	type c = struct {
		name string
		op   core.CodingOp
	}
	return []c{
		{"range-edit-L0", core.CodingOp{Prior: prior, Author: author, Intent: "retitle the readme", Tier: core.L0,
			Edits: []core.Edit{{Path: "README.md", Anchor: core.RangeAnchor(2, 7), Replacement: core.Bytes("Joule")}}}},
		{"hunk-edit-L1", core.CodingOp{Prior: prior, Author: author, Intent: "rename Hello to Greet", Tier: core.L1,
			Edits: []core.Edit{{Path: "greet/greet.go", Anchor: core.HunkAnchor([]byte("func Hello(name string) string {\n")), Replacement: core.Bytes("func Greet(name string) string {\n")}}}},
		{"two-files-sequential-L1", core.CodingOp{Prior: prior, Author: author, Intent: "two files, two edits each", Tier: core.L1,
			Edits: []core.Edit{
				{Path: "main.go", Anchor: core.RangeAnchor(0, 12), Replacement: core.Bytes("package demo")},
				{Path: "main.go", Anchor: core.HunkAnchor([]byte("demo")), Replacement: core.Bytes("main")},
				{Path: "README.md", Anchor: core.RangeAnchor(uint64(len(readme)), uint64(len(readme))), Replacement: core.Bytes("\nMore.\n")},
				{Path: "README.md", Anchor: core.RangeAnchor(0, 1), Replacement: core.Bytes("#")},
			}}},
		{"create-file-L2", core.CodingOp{Prior: prior, Author: author, Intent: "add a licence file", Tier: core.L2,
			Edits: []core.Edit{{Path: "LICENSE", Anchor: core.RangeAnchor(0, 0), Replacement: core.Bytes("Apache-2.0\n")}}}},
		{"delete-bytes-L3", core.CodingOp{Prior: prior, Author: author, Intent: "drop the import", Tier: core.L3,
			Edits: []core.Edit{{Path: "main.go", Anchor: core.RangeAnchor(14, uint64(bytes.Index(mainGo, []byte("func")))), Replacement: core.Bytes{}}}}},
		{"non-ascii-path-and-intent-L4", core.CodingOp{Prior: prior, Author: author, Intent: "corriger « ça » — 修正", Tier: core.L4,
			Edits: []core.Edit{{Path: "docs/naïve/ünïcödé.txt", Anchor: core.HunkAnchor([]byte("ça")), Replacement: core.Bytes("ça")}}}},
		{"binary-replacement-L1", core.CodingOp{Prior: prior, Author: author, Intent: "patch the blob", Tier: core.L1,
			Edits: []core.Edit{{Path: "assets/blob.bin", Anchor: core.RangeAnchor(1, 3), Replacement: core.Bytes{0x00, 0x00, 0xfe, 0xff, 0x80}}}}},
		{"offsets-need-8-byte-heads-L2", core.CodingOp{Prior: prior, Author: author, Intent: "offsets at 2^32 and 2^64-1 (synthetic)", Tier: core.L2,
			Edits: []core.Edit{
				{Path: "huge.bin", Anchor: core.RangeAnchor(1<<32, 1<<32+1), Replacement: core.Bytes("x")},
				{Path: "huge.bin", Anchor: core.RangeAnchor(math.MaxUint64, math.MaxUint64), Replacement: core.Bytes("y")},
			}}},
		{"offsets-at-head-boundaries-L3", core.CodingOp{Prior: prior, Author: author, Intent: "23, 24, 255, 256, 65535, 65536", Tier: core.L3,
			Edits: []core.Edit{
				{Path: "big.bin", Anchor: core.RangeAnchor(23, 24), Replacement: core.Bytes("a")},
				{Path: "big.bin", Anchor: core.RangeAnchor(255, 256), Replacement: core.Bytes("b")},
				{Path: "big.bin", Anchor: core.RangeAnchor(65535, 65536), Replacement: core.Bytes("c")},
			}}},
		{"forty-edits-one-file-L4", core.CodingOp{Prior: prior, Author: author, Intent: "forty insertions", Tier: core.L4, Edits: many}},
		{"long-intent-and-replacement-L0", core.CodingOp{Prior: prior, Author: author, Intent: strings.Repeat("make the receipts honest; ", 40), Tier: core.L0,
			Edits: []core.Edit{{Path: "README.md", Anchor: core.RangeAnchor(0, 0), Replacement: core.Bytes(strings.Repeat("0123456789abcdef", 300))}}}},
		{"empty-prior-L1", core.CodingOp{Prior: mustTreeID(core.Files{}), Author: author, Intent: "first file of an empty tree", Tier: core.L1,
			Edits: []core.Edit{{Path: "a/b/c.txt", Anchor: core.RangeAnchor(0, 0), Replacement: core.Bytes("c\n")}}}},
		{"empty-intent-and-hunk-of-empty-bytes-L2", core.CodingOp{Prior: prior, Author: author, Intent: "", Tier: core.L2,
			Edits: []core.Edit{{Path: "empty.txt", Anchor: core.HunkAnchor(nil), Replacement: core.Bytes("now not empty\n")}}}},
	}
}

func genCodingOps() (any, error) {
	f := CodingOpFile{Version: 1}
	for _, c := range opCases() {
		b, err := c.op.Canonical()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		f.Vectors = append(f.Vectors, CodingOpVector{Name: c.name, Op: c.op, CanonicalCBORHex: hex.EncodeToString(b), OpID: core.Sum(b)})
	}
	return f, nil
}

// rawMap encodes a CBOR map whose entries are already-encoded key and value
// pairs, in the order given: for building non-canonical negatives.
func rawMap(pairs ...[]byte) []byte {
	out := head(5, uint64(len(pairs)/2))
	for _, p := range pairs {
		out = append(out, p...)
	}
	return out
}

// head encodes a CBOR major type and argument in shortest form.
func head(major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return []byte{m | byte(n)}
	case n <= math.MaxUint8:
		return []byte{m | 24, byte(n)}
	case n <= math.MaxUint16:
		return []byte{m | 25, byte(n >> 8), byte(n)}
	case n <= math.MaxUint32:
		return []byte{m | 26, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return []byte{m | 27, byte(n >> 56), byte(n >> 48), byte(n >> 40), byte(n >> 32), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}

func enc(v any) []byte {
	b, err := core.Canonical(v)
	if err != nil {
		panic("conformance: internal error: " + err.Error())
	}
	return b
}

type sigCase struct {
	name   string
	seed   []byte
	op     core.CodingOp
	mutate func(s *core.SignedOp) []byte // nil: valid
	reason string
}

func genSignatures() (any, error) {
	ops := opCases()
	rfc1, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	rfc3, _ := hex.DecodeString("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7")
	withAuthor := func(op core.CodingOp, s []byte) core.CodingOp {
		op.Author = pub(ed25519.NewKeyFromSeed(s))
		return op
	}
	other := seed("author-2")
	cases := []sigCase{
		{name: "valid-rfc8032-test1-seed-range-edit", seed: rfc1, op: withAuthor(ops[0].op, rfc1)},
		{name: "valid-rfc8032-test3-seed-hunk-edit", seed: rfc3, op: withAuthor(ops[1].op, rfc3)},
		{name: "valid-non-ascii", seed: seed("author-1"), op: ops[5].op},
		{name: "valid-large-offsets", seed: seed("author-1"), op: ops[7].op},
		{name: "valid-empty-prior", seed: seed("author-1"), op: ops[11].op},
		{name: "valid-forty-edits", seed: other, op: withAuthor(ops[9].op, other)},
		{name: "neg-replayed-onto-other-prior", seed: seed("author-1"), op: ops[0].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			s.Op.Prior = mustTreeID(core.Files{})
			return enc(s)
		}},
		{name: "neg-tampered-replacement", seed: seed("author-1"), op: ops[0].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			s.Op.Edits[0].Replacement = core.Bytes("joule")
			return enc(s)
		}},
		{name: "neg-tampered-intent", seed: seed("author-1"), op: ops[1].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			s.Op.Intent += "!"
			return enc(s)
		}},
		{name: "neg-tampered-tier", seed: seed("author-1"), op: ops[1].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			s.Op.Tier = core.L4
			return enc(s)
		}},
		{name: "neg-alg-2", seed: seed("author-1"), op: ops[0].op, reason: "unsupported-alg", mutate: func(s *core.SignedOp) []byte {
			s.Alg = 2
			return enc(s)
		}},
		{name: "neg-alg-0", seed: seed("author-1"), op: ops[0].op, reason: "unsupported-alg", mutate: func(s *core.SignedOp) []byte {
			s.Alg = 0
			return enc(s)
		}},
		{name: "neg-alg-missing", seed: seed("author-1"), op: ops[0].op, reason: "unsupported-alg", mutate: func(s *core.SignedOp) []byte {
			return rawMap(enc("op"), enc(s.Op), enc("sig"), enc(s.Sig))
		}},
		{name: "neg-alg-non-shortest", seed: seed("author-1"), op: ops[0].op, reason: "non-canonical", mutate: func(s *core.SignedOp) []byte {
			return rawMap(enc("op"), enc(s.Op), enc("alg"), []byte{0x18, 0x01}, enc("sig"), enc(s.Sig))
		}},
		{name: "neg-author-swapped", seed: seed("author-1"), op: ops[0].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			s.Op.Author = pub(fixtureKey("author-2"))
			return enc(s)
		}},
		{name: "neg-signature-63-bytes", seed: seed("author-1"), op: ops[0].op, reason: "sig-not-64-bytes", mutate: func(s *core.SignedOp) []byte {
			s.Sig = s.Sig[:63]
			return enc(s)
		}},
		{name: "neg-signature-65-bytes", seed: seed("author-1"), op: ops[0].op, reason: "sig-not-64-bytes", mutate: func(s *core.SignedOp) []byte {
			s.Sig = append(s.Sig, 0)
			return enc(s)
		}},
		{name: "neg-signed-op-id-only", seed: seed("author-1"), op: ops[0].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			id, _ := s.Op.ID()
			s.Sig = ed25519.Sign(fixtureKey("author-1"), id[:])
			return enc(s)
		}},
		{name: "neg-signed-prior-then-op-id", seed: seed("author-1"), op: ops[0].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			id, _ := s.Op.ID()
			s.Sig = ed25519.Sign(fixtureKey("author-1"), append(append([]byte{}, s.Op.Prior[:]...), id[:]...))
			return enc(s)
		}},
		{name: "neg-s-not-reduced", seed: seed("author-1"), op: ops[0].op, reason: "bad-signature", mutate: func(s *core.SignedOp) []byte {
			s.Sig = addL(s.Sig)
			return enc(s)
		}},
		{name: "neg-keys-out-of-order", seed: seed("author-1"), op: ops[0].op, reason: "non-canonical", mutate: func(s *core.SignedOp) []byte {
			return rawMap(enc("sig"), enc(s.Sig), enc("op"), enc(s.Op), enc("alg"), enc(s.Alg))
		}},
		{name: "neg-duplicate-key", seed: seed("author-1"), op: ops[0].op, reason: "non-canonical", mutate: func(s *core.SignedOp) []byte {
			return rawMap(enc("op"), enc(s.Op), enc("alg"), enc(s.Alg), enc("alg"), enc(s.Alg), enc("sig"), enc(s.Sig))
		}},
		{name: "neg-unknown-key", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: func(s *core.SignedOp) []byte {
			return rawMap(enc("op"), enc(s.Op), enc("alg"), enc(s.Alg), enc("sig"), enc(s.Sig), enc("note"), enc("hi"))
		}},
		{name: "neg-indefinite-length-map", seed: seed("author-1"), op: ops[0].op, reason: "non-canonical", mutate: func(s *core.SignedOp) []byte {
			b := []byte{0xbf}
			b = append(b, enc("op")...)
			b = append(b, enc(s.Op)...)
			b = append(b, enc("alg")...)
			b = append(b, enc(s.Alg)...)
			b = append(b, enc("sig")...)
			b = append(b, enc(s.Sig)...)
			return append(b, 0xff)
		}},
		{name: "neg-trailing-byte", seed: seed("author-1"), op: ops[0].op, reason: "non-canonical", mutate: func(s *core.SignedOp) []byte {
			return append(enc(s), 0x00)
		}},
		{name: "neg-anchor-with-range-and-hunk", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: func(s *core.SignedOp) []byte {
			h := core.Sum([]byte("x"))
			s.Op.Edits[0].Anchor.Hunk = &h
			// Signed honestly over the malformed op: only the schema rejects it.
			b, _ := encAnyOp(&s.Op)
			id := core.Sum(b)
			s.Sig = ed25519.Sign(fixtureKey("author-1"), append(append([]byte{}, id[:]...), s.Op.Prior[:]...))
			return enc(s)
		}},
		{name: "neg-empty-edits", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: func(s *core.SignedOp) []byte {
			s.Op.Edits = []core.Edit{}
			b, _ := encAnyOp(&s.Op)
			id := core.Sum(b)
			s.Sig = ed25519.Sign(fixtureKey("author-1"), append(append([]byte{}, id[:]...), s.Op.Prior[:]...))
			return enc(s)
		}},
		{name: "neg-edit-path-dot-dot", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: signedAnyway(func(op *core.CodingOp) {
			op.Edits[0].Path = "../main.go"
		})},
		{name: "neg-edit-path-leading-slash", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: signedAnyway(func(op *core.CodingOp) {
			op.Edits[0].Path = "/main.go"
		})},
		{name: "neg-range-start-after-end", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: signedAnyway(func(op *core.CodingOp) {
			op.Edits[0].Anchor = core.RangeAnchor(9, 3)
		})},
		{name: "neg-tier-L5", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: signedAnyway(func(op *core.CodingOp) {
			op.Tier = "L5"
		})},
		{name: "neg-anchor-empty", seed: seed("author-1"), op: ops[0].op, reason: "schema", mutate: signedAnyway(func(op *core.CodingOp) {
			op.Edits[0].Anchor = core.Anchor{}
		})},
	}
	f := SignatureFile{Version: 1}
	for _, c := range cases {
		key := ed25519.NewKeyFromSeed(c.seed)
		op := cloneOp(c.op)
		s, err := core.SignOp(key, &op)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		v := SignatureVector{Name: c.name, SeedHex: hex.EncodeToString(c.seed), Valid: c.mutate == nil, Reason: c.reason}
		var signed []byte
		if c.mutate == nil {
			signed, err = s.Encode()
			if err != nil {
				return nil, err
			}
		} else {
			signed = c.mutate(s)
		}
		v.Op, v.Signature, v.SignedOpCBORHex = s.Op, s.Sig, hex.EncodeToString(signed)
		if b, err := encAnyOp(&s.Op); err == nil {
			v.OpID = core.Sum(b)
		}
		f.Vectors = append(f.Vectors, v)
	}
	return f, nil
}

// signedAnyway breaks the op with mutate and signs it honestly, as an
// author who skipped validation would: only the schema can reject it.
func signedAnyway(mutate func(op *core.CodingOp)) func(s *core.SignedOp) []byte {
	return func(s *core.SignedOp) []byte {
		mutate(&s.Op)
		b, _ := encAnyOp(&s.Op)
		id := core.Sum(b)
		s.Sig = ed25519.Sign(fixtureKey("author-1"), append(append([]byte{}, id[:]...), s.Op.Prior[:]...))
		return enc(s)
	}
}

// encAnyOp encodes an op canonically without validating it, so negative
// vectors can carry ops that break the schema.
func encAnyOp(op *core.CodingOp) ([]byte, error) { return core.Canonical(op) }

func cloneOp(op core.CodingOp) core.CodingOp {
	op.Edits = append([]core.Edit(nil), op.Edits...)
	return op
}

// addL returns the signature with S replaced by S + L, the group order: the
// same point equation, but a non-canonical S that RFC 8032 rejects.
func addL(sig []byte) []byte {
	l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}
	out := append([]byte(nil), sig...)
	var carry uint16
	for i := 0; i < 32; i++ {
		sum := uint16(out[32+i]) + uint16(l[i]) + carry
		out[32+i] = byte(sum)
		carry = sum >> 8
	}
	return out
}

type receiptCase struct {
	name   string
	core   core.OpReceipt
	forge  func(r *core.OpReceipt) []byte // nil: sealed honestly
	reason string
}

func u64(v uint64) *uint64 { return &v }

func genReceipts() (any, error) {
	key := fixtureKey("steward")
	sealer, err := core.NewSealer(Steward, key)
	if err != nil {
		return nil, err
	}
	ops := opCases()
	opID := func(i int) string {
		id, _ := ops[i].op.ID()
		return id.String()
	}
	base := func(i int, tier core.Tier, prov core.Provenance, est uint64, measured *uint64, seq uint64) core.OpReceipt {
		n := sha256.Sum256([]byte(fmt.Sprintf("nonce %d", seq)))
		return core.OpReceipt{Profile: core.Profile, OpID: opID(i), Tier: tier, EstimatedUJ: est, MeasuredUJ: measured,
			Provenance: prov, Sequence: seq, Nonce: hex.EncodeToString(n[:16]), Steward: Steward}
	}
	ph := func(pairs ...[]byte) []byte { return enc(rawMap(pairs...)) }
	goodPH := ph(enc(1), enc(-8), enc(4), enc([]byte(Steward)))
	payloadOf := func(r *core.OpReceipt) []byte { return enc(r) }
	cases := []receiptCase{
		{name: "valid-estimator", core: base(0, core.L0, core.Estimator, 1, nil, 1)},
		{name: "valid-modelbased", core: base(1, core.L1, core.ModelBased, 10, nil, 2)},
		{name: "valid-hwshunt-with-measured", core: base(2, core.L2, core.HwShunt, 1000, u64(987), 3)},
		{name: "valid-hwshunt-measured-zero", core: base(3, core.L3, core.HwShunt, 1_000_000, u64(0), 4)},
		{name: "valid-l4-above-2^32", core: base(4, core.L4, core.Estimator, 1<<33+7, nil, 1<<32)},
		{name: "valid-uint64-max", core: base(5, core.L1, core.HwShunt, math.MaxUint64, u64(math.MaxUint64), math.MaxUint64)},
		{name: "valid-sequence-zero", core: base(6, core.L2, core.Estimator, 0, nil, 0)},
		{name: "neg-alg-es256", core: base(0, core.L0, core.Estimator, 1, nil, 10), reason: "alg-not-eddsa", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, ph(enc(1), enc(-7), enc(4), enc([]byte(Steward))), payloadOf(r), true, nil)
		}},
		{name: "neg-alg-missing", core: base(0, core.L0, core.Estimator, 1, nil, 11), reason: "missing-alg", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, ph(enc(4), enc([]byte(Steward))), payloadOf(r), true, nil)
		}},
		{name: "neg-kid-missing", core: base(0, core.L0, core.Estimator, 1, nil, 12), reason: "kid-mismatch", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, ph(enc(1), enc(-8)), payloadOf(r), true, nil)
		}},
		{name: "neg-kid-other-steward", core: base(0, core.L0, core.Estimator, 1, nil, 13), reason: "kid-mismatch", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, ph(enc(1), enc(-8), enc(4), enc([]byte("other.joule.example"))), payloadOf(r), true, nil)
		}},
		{name: "neg-extra-protected-label", core: base(0, core.L0, core.Estimator, 1, nil, 14), reason: "envelope-schema", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, ph(enc(1), enc(-8), enc(3), enc(60), enc(4), enc([]byte(Steward))), payloadOf(r), true, nil)
		}},
		{name: "neg-payload-steward-differs", core: base(0, core.L0, core.Estimator, 1, nil, 15), reason: "steward-mismatch", forge: func(r *core.OpReceipt) []byte {
			r.Steward = "other.joule.example"
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-hwshunt-without-measured", core: base(0, core.L0, core.HwShunt, 1, nil, 16), reason: "provenance-coupling", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-estimator-with-measured", core: base(0, core.L0, core.Estimator, 1, u64(1), 17), reason: "provenance-coupling", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-modelbased-with-measured", core: base(0, core.L0, core.ModelBased, 1, u64(0), 18), reason: "provenance-coupling", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-flipped-signature-bit", core: base(0, core.L0, core.Estimator, 1, nil, 19), reason: "bad-signature", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, goodPH, payloadOf(r), true, func(sig []byte) { sig[10] ^= 0x01 })
		}},
		{name: "neg-signed-by-other-key", core: base(0, core.L0, core.Estimator, 1, nil, 20), reason: "bad-signature", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(fixtureKey("intruder"), goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-payload-keys-out-of-order", core: base(0, core.L0, core.Estimator, 1, nil, 21), reason: "non-canonical-payload", forge: func(r *core.OpReceipt) []byte {
			p := rawMap(enc("steward"), enc(r.Steward), enc("tier"), enc(r.Tier), enc("nonce"), enc(r.Nonce), enc("op_id"), enc(r.OpID),
				enc("sequence"), enc(r.Sequence), enc("jc_receipt"), enc(r.Profile), enc("estimated_uj"), enc(r.EstimatedUJ), enc("energy_provenance"), enc(r.Provenance))
			return signCOSE(key, goodPH, p, true, nil)
		}},
		{name: "neg-payload-non-shortest-integer", core: base(0, core.L0, core.Estimator, 1, nil, 22), reason: "non-canonical-payload", forge: func(r *core.OpReceipt) []byte {
			p := rawMap(enc("tier"), enc(r.Tier), enc("nonce"), enc(r.Nonce), enc("op_id"), enc(r.OpID), enc("steward"), enc(r.Steward),
				enc("sequence"), []byte{0x19, 0x00, 0x16}, enc("jc_receipt"), enc(r.Profile), enc("estimated_uj"), enc(r.EstimatedUJ), enc("energy_provenance"), enc(r.Provenance))
			return signCOSE(key, goodPH, p, true, nil)
		}},
		{name: "neg-payload-unknown-key", core: base(0, core.L0, core.Estimator, 1, nil, 23), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			p := rawMap(enc("tier"), enc(r.Tier), enc("extra"), enc(1), enc("nonce"), enc(r.Nonce), enc("op_id"), enc(r.OpID), enc("steward"), enc(r.Steward),
				enc("sequence"), enc(r.Sequence), enc("jc_receipt"), enc(r.Profile), enc("estimated_uj"), enc(r.EstimatedUJ), enc("energy_provenance"), enc(r.Provenance))
			return signCOSE(key, goodPH, p, true, nil)
		}},
		{name: "neg-payload-measured-null", core: base(0, core.L0, core.HwShunt, 1, nil, 24), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			p := rawMap(enc("tier"), enc(r.Tier), enc("nonce"), enc(r.Nonce), enc("op_id"), enc(r.OpID), enc("steward"), enc(r.Steward),
				enc("sequence"), enc(r.Sequence), enc("jc_receipt"), enc(r.Profile), enc("measured_uj"), []byte{0xf6}, enc("estimated_uj"), enc(r.EstimatedUJ), enc("energy_provenance"), enc(r.Provenance))
			return signCOSE(key, goodPH, p, true, nil)
		}},
		{name: "neg-payload-float-estimate", core: base(0, core.L0, core.Estimator, 1, nil, 25), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			p := rawMap(enc("tier"), enc(r.Tier), enc("nonce"), enc(r.Nonce), enc("op_id"), enc(r.OpID), enc("steward"), enc(r.Steward),
				enc("sequence"), enc(r.Sequence), enc("jc_receipt"), enc(r.Profile), enc("estimated_uj"), []byte{0xf9, 0x3c, 0x00}, enc("energy_provenance"), enc(r.Provenance))
			return signCOSE(key, goodPH, p, true, nil)
		}},
		{name: "neg-untagged", core: base(0, core.L0, core.Estimator, 1, nil, 26), reason: "envelope-schema", forge: func(r *core.OpReceipt) []byte {
			return signCOSE(key, goodPH, payloadOf(r), false, nil)
		}},
		{name: "neg-unprotected-not-empty", core: base(0, core.L0, core.Estimator, 1, nil, 27), reason: "unprotected-not-empty", forge: func(r *core.OpReceipt) []byte {
			b := signCOSE(key, goodPH, payloadOf(r), true, nil)
			// Swap the empty unprotected map for { 4: kid }: not signed, so the
			// signature still verifies and only the header rule rejects it.
			i := 2 + len(goodPH)
			return append(append(append([]byte{}, b[:i]...), rawMap(enc(4), enc([]byte(Steward)))...), b[i+1:]...)
		}},
		{name: "neg-wrong-profile", core: base(0, core.L0, core.Estimator, 1, nil, 28), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			r.Profile = "joule-code/2"
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-nonce-uppercase", core: base(0, core.L0, core.Estimator, 1, nil, 29), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			r.Nonce = strings.ToUpper(r.Nonce)
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-nonce-30-digits", core: base(0, core.L0, core.Estimator, 1, nil, 30), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			r.Nonce = r.Nonce[:30]
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-tier-L5", core: base(0, core.L0, core.Estimator, 1, nil, 31), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			r.Tier = "L5"
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
		{name: "neg-provenance-unknown", core: base(0, core.L0, core.Estimator, 1, nil, 32), reason: "payload-schema", forge: func(r *core.OpReceipt) []byte {
			r.Provenance = "Guess"
			return signCOSE(key, goodPH, payloadOf(r), true, nil)
		}},
	}
	f := ReceiptFile{Version: 1, Steward: Steward, PublicKey: pub(key), SeedHex: hex.EncodeToString(seed("steward"))}
	for _, c := range cases {
		r := c.core
		var env []byte
		if c.forge == nil {
			env, err = sealer.Seal(&r)
		} else {
			forged := r
			env = c.forge(&forged)
			r = forged
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		f.Vectors = append(f.Vectors, ReceiptVector{Name: c.name, Core: r, COSESign1Hex: hex.EncodeToString(env), Valid: c.forge == nil, Reason: c.reason})
	}
	return f, nil
}

// signCOSE assembles a COSE_Sign1 by hand around any protected header and
// payload, signing the real Sig_structure, so a negative vector fails only
// the rule it targets. mangle, if set, alters the signature after signing.
func signCOSE(key ed25519.PrivateKey, protected, payload []byte, tagged bool, mangle func([]byte)) []byte {
	// protected arrives encoded as a bstr; Sig_structure wants that bstr.
	var inner []byte
	if err := cbor.Unmarshal(protected, &inner); err != nil {
		panic("conformance: internal error: " + err.Error())
	}
	tbs := enc([]any{"Signature1", inner, []byte{}, payload})
	sig := ed25519.Sign(key, tbs)
	if mangle != nil {
		mangle(sig)
	}
	var out []byte
	if tagged {
		out = append(out, 0xd2)
	}
	out = append(out, 0x84)
	out = append(out, protected...)
	out = append(out, 0xa0)
	out = append(out, enc(payload)...)
	return append(out, enc(sig)...)
}

func genCascade() (any, error) {
	type st = ScriptedStage
	t := func(s core.Tier) *core.Tier { return &s }
	f := CascadeFile{Version: 1}
	add := func(name string, closing *core.Tier, consulted []core.Tier, stages ...st) {
		if consulted == nil {
			consulted = []core.Tier{}
		}
		if stages == nil {
			stages = []st{}
		}
		f.Vectors = append(f.Vectors, CascadeVector{Name: name, Stages: stages, ClosingTier: closing, Consulted: consulted})
	}
	all := func(outcomes ...string) []st {
		s := make([]st, len(outcomes))
		for i, o := range outcomes {
			s[i] = st{Tier: core.Tiers[i], Outcome: o}
		}
		return s
	}
	add("first-tier-closes", t(core.L0), []core.Tier{"L0"}, all("close", "close", "close", "close", "close")...)
	add("l1-closes-after-l0-miss", t(core.L1), []core.Tier{"L0", "L1"}, all("miss", "close", "error", "close", "close")...)
	add("l2-closes-after-errors", t(core.L2), []core.Tier{"L0", "L1", "L2"}, all("error", "error", "close", "close", "miss")...)
	add("l3-closes", t(core.L3), []core.Tier{"L0", "L1", "L2", "L3"}, all("miss", "miss", "miss", "close", "close")...)
	add("only-l4-closes", t(core.L4), []core.Tier{"L0", "L1", "L2", "L3", "L4"}, all("miss", "error", "miss", "error", "close")...)
	add("nothing-closes", nil, []core.Tier{"L0", "L1", "L2", "L3", "L4"}, all("miss", "miss", "miss", "miss", "miss")...)
	add("every-stage-errors", nil, []core.Tier{"L0", "L1", "L2", "L3", "L4"}, all("error", "error", "error", "error", "error")...)
	add("omitted-tiers-l1-l3", t(core.L3), []core.Tier{"L1", "L3"}, st{"L1", "miss"}, st{"L3", "close"})
	add("single-stage-l2-closes", t(core.L2), []core.Tier{"L2"}, st{"L2", "close"})
	add("single-stage-l4-errors", nil, []core.Tier{"L4"}, st{"L4", "error"})
	add("no-stages", nil, nil)
	add("l0-l4-only-l0-misses", t(core.L4), []core.Tier{"L0", "L4"}, st{"L0", "miss"}, st{"L4", "close"})
	return f, nil
}

func genTrees() (any, error) {
	type c = struct {
		name  string
		files core.Files
	}
	many := core.Files{}
	for i := 0; i < 300; i++ {
		many[fmt.Sprintf("pkg%03d/file.go", i)] = []byte(fmt.Sprintf("package pkg%03d\n", i))
	}
	cases := []c{
		{"empty", core.Files{}},
		{"one-file", core.Files{"a": []byte("a\n")}},
		{"length-first-order", core.Files{"b": {}, "aa": {}, "ab": {1}, "c/d": {2}, "zzzz": {3}, "a": {4}}},
		{"utf8-byte-order", core.Files{"é": []byte("e-acute"), "z": []byte("z"), "日本": []byte("ja"), "😀": []byte("emoji"), "Z": nil}},
		{"nested-and-dotfiles", core.Files{".gitignore": []byte("bin/\n"), "a/.env.example": []byte("X=1\n"), "a/b/c/d/e/f.txt": []byte("deep\n")}},
		{"identical-contents", core.Files{"x": []byte("same\n"), "y": []byte("same\n")}},
		{"fixture-workspace", fixtureFiles()},
		{"three-hundred-files-two-byte-map-head", many},
		{"path-255-and-256-bytes", core.Files{strings.Repeat("p", 255): []byte("255"), strings.Repeat("q", 256): []byte("256")}},
	}
	f := TreeFile{Version: 1}
	for _, c := range cases {
		t, err := c.files.Tree()
		if err != nil {
			return nil, err
		}
		b, err := t.Canonical()
		if err != nil {
			return nil, err
		}
		files := map[string]core.Bytes{}
		for p, b := range c.files {
			files[p] = core.Bytes(b)
			if files[p] == nil {
				files[p] = core.Bytes{}
			}
		}
		f.Vectors = append(f.Vectors, TreeVector{Name: c.name, Files: files, CanonicalCBORHex: hex.EncodeToString(b), TreeID: t.ID()})
	}
	// Negative vectors: trees whose paths break WIRE.md's tree-path rules.
	// Both forms describe the same refused tree, its files and the CBOR map
	// an encoder that skipped the path check would write, so a checker
	// that judges either one refuses it.
	invalid := false
	for _, c := range []struct{ name, path string }{
		{"neg-dot-dot-segment", "a/../b"},
		{"neg-leading-dot-dot", "../outside"},
		{"neg-dot-segment", "a/./b"},
		{"neg-empty-segment", "a//b"},
		{"neg-leading-slash", "/etc/passwd"},
		{"neg-trailing-slash", "dir/"},
		{"neg-empty-path", ""},
		{"neg-lone-dot-dot", ".."},
	} {
		content := []byte("x\n")
		if err := core.ValidatePath(c.path); err == nil {
			return nil, fmt.Errorf("%s: path %q is valid", c.name, c.path)
		}
		b := rawMap(enc(c.path), enc(core.Sum(content)))
		f.Vectors = append(f.Vectors, TreeVector{Name: c.name, Files: map[string]core.Bytes{c.path: content},
			CanonicalCBORHex: hex.EncodeToString(b), TreeID: core.Sum(b), Valid: &invalid, Reason: "invalid-path"})
	}
	return f, nil
}
