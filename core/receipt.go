package core

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// Profile is the JCR-1 profile string of a Joule Code receipt core.
const Profile = "joule-code/1"

// Provenance says where an energy figure comes from.
type Provenance string

const (
	// HwShunt is read from a hardware energy interface proven live.
	HwShunt Provenance = "HwShunt"
	// ModelBased is computed from a calibrated per-operation model.
	ModelBased Provenance = "ModelBased"
	// Estimator is a coarse constant estimate.
	Estimator Provenance = "Estimator"
)

// Valid reports whether p is one of the three provenance tags.
func (p Provenance) Valid() bool { return p == HwShunt || p == ModelBased || p == Estimator }

// OpReceipt is the signed core of a JCR-1 receipt, profile joule-code/1:
// the receipt of one coding operation (Joule Code §6). It is not one of
// joule's session receipts, the decision and efficiency receipts of
// package receipts, which ride in the same envelope.
type OpReceipt struct {
	Profile     string     `cbor:"jc_receipt" json:"jc_receipt"`
	OpID        string     `cbor:"op_id" json:"op_id"`
	Tier        Tier       `cbor:"tier" json:"tier"`
	EstimatedUJ uint64     `cbor:"estimated_uj" json:"estimated_uj"`
	MeasuredUJ  *uint64    `cbor:"measured_uj,omitempty" json:"measured_uj,omitempty"`
	Provenance  Provenance `cbor:"energy_provenance" json:"energy_provenance"`
	Sequence    uint64     `cbor:"sequence" json:"sequence"`
	Nonce       string     `cbor:"nonce" json:"nonce"`
	Steward     string     `cbor:"steward" json:"steward"`
}

// ReceiptError is a receipt rejection; Code is a stable machine name.
type ReceiptError struct {
	Code   string
	Detail string
}

func (e *ReceiptError) Error() string { return "receipt: " + e.Code + ": " + e.Detail }

func rejectf(code, format string, args ...any) error {
	return &ReceiptError{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// NewNonce returns 16 random bytes as 32 lowercase hex digits.
func NewNonce() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Validate checks the core's schema rules, the provenance coupling among them.
func (r *OpReceipt) Validate() error {
	switch {
	case r.Profile != Profile:
		return rejectf("payload-schema", "jc_receipt is %q, want %q", r.Profile, Profile)
	case !r.Tier.Valid():
		return rejectf("payload-schema", "tier %q is not one of L0..L4", r.Tier)
	case !r.Provenance.Valid():
		return rejectf("payload-schema", "energy_provenance %q is not HwShunt, ModelBased or Estimator", r.Provenance)
	case !ValidNonce(r.Nonce):
		return rejectf("payload-schema", "nonce %q is not 32 lowercase hex digits", truncate(r.Nonce))
	case r.Steward == "":
		return rejectf("payload-schema", "steward is empty")
	case r.OpID == "":
		return rejectf("payload-schema", "op_id is empty")
	case r.Provenance == HwShunt && r.MeasuredUJ == nil:
		return rejectf("provenance-coupling", "HwShunt requires measured_uj")
	case r.Provenance != HwShunt && r.MeasuredUJ != nil:
		return rejectf("provenance-coupling", "%s forbids measured_uj", r.Provenance)
	}
	if _, err := ParseID(r.OpID); err != nil {
		return rejectf("payload-schema", "op_id: %v", err)
	}
	return nil
}

// ValidNonce reports whether s has the form NewNonce gives: 32 lowercase
// hex digits.
func ValidNonce(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Canonical returns the receipt core's canonical CBOR.
func (r *OpReceipt) Canonical() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return encMode.Marshal(r)
}

// DecodeOpReceipt decodes a canonical JCR-1 receipt core and validates it.
func DecodeOpReceipt(b []byte) (*OpReceipt, error) {
	r := new(OpReceipt)
	if err := decMode.Unmarshal(b, r); err != nil {
		return nil, rejectf("payload-schema", "%v", describeDecodeError(err))
	}
	again, err := encMode.Marshal(r)
	if err != nil || !bytes.Equal(again, b) {
		return nil, rejectf("non-canonical-payload", "%v", explainNonCanonical(b))
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// emptyMap is the canonical empty unprotected header.
var emptyMap = cbor.RawMessage{0xa0}

// protectedHeader returns the canonical protected header bstr { 1: -8, 4: kid }.
func protectedHeader(steward string) ([]byte, error) {
	inner, err := encMode.Marshal(map[int]any{1: -8, 4: []byte(steward)})
	if err != nil {
		return nil, err
	}
	return encMode.Marshal(inner)
}

// Sealer signs receipt cores as tagged COSE_Sign1 envelopes for one steward.
type Sealer struct {
	steward   string
	signer    cose.Signer
	protected cbor.RawMessage
	header    cose.ProtectedHeader
}

// NewSealer returns a Sealer that signs with key as steward.
func NewSealer(steward string, key ed25519.PrivateKey) (*Sealer, error) {
	if steward == "" {
		return nil, errors.New("receipt: steward must not be empty")
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("receipt: not an Ed25519 private key")
	}
	signer, err := cose.NewSigner(cose.AlgorithmEdDSA, key)
	if err != nil {
		return nil, err
	}
	ph, err := protectedHeader(steward)
	if err != nil {
		return nil, err
	}
	header := cose.ProtectedHeader{
		cose.HeaderLabelAlgorithm: cose.AlgorithmEdDSA,
		cose.HeaderLabelKeyID:     []byte(steward),
	}
	return &Sealer{steward: steward, signer: signer, protected: ph, header: header}, nil
}

// Steward returns the identity the sealer signs as.
func (s *Sealer) Steward() string { return s.steward }

// Seal fills in r.Steward (and r.Profile and r.Nonce when empty), then
// returns the tagged COSE_Sign1 envelope over r's canonical core.
func (s *Sealer) Seal(r *OpReceipt) ([]byte, error) {
	if r.Profile == "" {
		r.Profile = Profile
	}
	r.Steward = s.steward
	if r.Nonce == "" {
		n, err := NewNonce()
		if err != nil {
			return nil, err
		}
		r.Nonce = n
	}
	payload, err := r.Canonical()
	if err != nil {
		return nil, err
	}
	return s.SealPayload(payload)
}

// SealPayload signs canonical payload bytes as a tagged COSE_Sign1 envelope
// with this sealer's protected header. Callers sealing other receipt kinds
// use it with their own canonical cores.
func (s *Sealer) SealPayload(payload []byte) ([]byte, error) {
	msg := cose.Sign1Message{
		Headers: cose.Headers{RawProtected: s.protected, Protected: s.header, RawUnprotected: emptyMap},
		Payload: payload,
	}
	if err := msg.Sign(nil, nil, s.signer); err != nil {
		return nil, err
	}
	return msg.MarshalCBOR()
}

// Verifier checks envelopes against one steward and its public key.
type Verifier struct {
	steward   string
	verifier  cose.Verifier
	protected []byte
}

// NewVerifier returns a Verifier for envelopes sealed by steward with key.
func NewVerifier(steward string, key ed25519.PublicKey) (*Verifier, error) {
	if steward == "" {
		return nil, errors.New("receipt: steward must not be empty")
	}
	if len(key) != ed25519.PublicKeySize {
		return nil, errors.New("receipt: public key is not 32 bytes")
	}
	v, err := cose.NewVerifier(cose.AlgorithmEdDSA, key)
	if err != nil {
		return nil, err
	}
	ph, err := protectedHeader(steward)
	if err != nil {
		return nil, err
	}
	return &Verifier{steward: steward, verifier: v, protected: ph}, nil
}

// Verify checks a JCR-1 envelope and returns its receipt core.
func (v *Verifier) Verify(envelope []byte) (*OpReceipt, error) {
	payload, err := v.Open(envelope)
	if err != nil {
		return nil, err
	}
	r, err := DecodeOpReceipt(payload)
	if err != nil {
		return nil, err
	}
	if r.Steward != v.steward {
		return nil, rejectf("steward-mismatch", "payload steward %q is not the kid %q", truncate(r.Steward), v.steward)
	}
	return r, nil
}

// Open checks everything about an envelope but its payload's schema: the
// tag, canonical form, headers, and signature; it returns the payload bytes.
// Receipt kinds other than joule-code/1 (the session receipts of package
// receipts) decode the payload themselves.
func (v *Verifier) Open(envelope []byte) ([]byte, error) {
	if len(envelope) == 0 || envelope[0] != 0xd2 {
		return nil, rejectf("envelope-schema", "not a tagged COSE_Sign1 (tag 18)")
	}
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(envelope); err != nil {
		return nil, rejectf("envelope-schema", "%v", err)
	}
	if err := checkHeaders(&msg, v.steward); err != nil {
		return nil, err
	}
	if !bytes.Equal(msg.Headers.RawProtected, v.protected) {
		return nil, rejectf("envelope-schema", "protected header is not the canonical { 1: -8, 4: kid }")
	}
	if !canonicalEnvelope(envelope, v.protected, msg.Payload, msg.Signature) {
		return nil, rejectf("non-canonical-envelope", "envelope is not canonical CBOR")
	}
	if err := msg.Verify(nil, v.verifier); err != nil {
		return nil, rejectf("bad-signature", "%v", err)
	}
	return msg.Payload, nil
}

func checkHeaders(msg *cose.Sign1Message, steward string) error {
	if !bytes.Equal(msg.Headers.RawUnprotected, emptyMap) {
		return rejectf("unprotected-not-empty", "the unprotected header must be the empty map")
	}
	ph := msg.Headers.Protected
	alg, ok := ph[cose.HeaderLabelAlgorithm]
	if !ok {
		return rejectf("missing-alg", "the protected header has no alg")
	}
	if a, err := ph.Algorithm(); err != nil || a != cose.AlgorithmEdDSA {
		return rejectf("alg-not-eddsa", "alg %v is not EdDSA (-8)", alg)
	}
	kid, ok := ph[cose.HeaderLabelKeyID].([]byte)
	if !ok || string(kid) != steward {
		return rejectf("kid-mismatch", "kid %q is not the steward %q", truncate(string(kid)), steward)
	}
	for label := range ph {
		if label != cose.HeaderLabelAlgorithm && label != cose.HeaderLabelKeyID {
			return rejectf("envelope-schema", "unexpected protected header label %v", label)
		}
	}
	if msg.Payload == nil {
		return rejectf("envelope-schema", "payload is detached or nil")
	}
	return nil
}

// canonicalEnvelope reports whether envelope is exactly the canonical
// encoding of a tagged COSE_Sign1 with these parts: tag 18, a 4-array, the
// protected bstr, the empty unprotected map, then payload and signature as
// shortest-form byte strings, and nothing after. The parts come from the
// decoder, so comparing the heads and the length is a full re-encoding
// check without re-encoding.
func canonicalEnvelope(envelope, protected, payload, sig []byte) bool {
	want := 2 + len(protected) + 1
	ph, sh := bstrHead(len(payload)), bstrHead(len(sig))
	if len(envelope) != want+len(ph)+len(payload)+len(sh)+len(sig) ||
		envelope[0] != 0xd2 || envelope[1] != 0x84 ||
		!bytes.Equal(envelope[2:2+len(protected)], protected) || envelope[want-1] != 0xa0 {
		return false
	}
	rest := envelope[want:]
	if !bytes.Equal(rest[:len(ph)], ph) {
		return false
	}
	rest = rest[len(ph)+len(payload):]
	return bytes.Equal(rest[:len(sh)], sh)
}

// bstrHead is the shortest-form CBOR head of a byte string of length n.
func bstrHead(n int) []byte {
	switch {
	case n < 24:
		return []byte{0x40 | byte(n)}
	case n < 1<<8:
		return []byte{0x58, byte(n)}
	case n < 1<<16:
		return []byte{0x59, byte(n >> 8), byte(n)}
	case n < 1<<32:
		return []byte{0x5a, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	u := uint64(n)
	return []byte{0x5b, byte(u >> 56), byte(u >> 48), byte(u >> 40), byte(u >> 32), byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}
}

// EnvelopeSteward returns the steward an envelope's kid names, without
// verifying anything: it picks the key to verify with.
func EnvelopeSteward(envelope []byte) (string, error) {
	if len(envelope) == 0 || envelope[0] != 0xd2 {
		return "", rejectf("envelope-schema", "not a tagged COSE_Sign1 (tag 18)")
	}
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(envelope); err != nil {
		return "", rejectf("envelope-schema", "%v", err)
	}
	kid, ok := msg.Headers.Protected[cose.HeaderLabelKeyID].([]byte)
	if !ok || len(kid) == 0 {
		return "", rejectf("kid-mismatch", "the protected header names no steward (kid)")
	}
	return string(kid), nil
}
