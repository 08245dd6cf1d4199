package core

import (
	"crypto/ed25519"
	"errors"
	"fmt"
)

// AlgEd25519 is the SignedOp algorithm byte for Ed25519 (RFC 8032).
const AlgEd25519 = 1

// SignedOp is a CodingOp with its author's signature over op_id ‖ prior.
type SignedOp struct {
	Op  CodingOp `cbor:"op" json:"op"`
	Alg uint64   `cbor:"alg" json:"alg"`
	Sig Bytes    `cbor:"sig" json:"sig"`
}

// Signature verification failures a caller may want to tell apart.
var (
	ErrUnsupportedAlg = errors.New("signed op: unsupported signature algorithm (only 1, Ed25519)")
	ErrBadSignature   = errors.New("signed op: signature does not verify")
)

// SignOp signs op with key, whose public half must be op.Author.
func SignOp(key ed25519.PrivateKey, op *CodingOp) (*SignedOp, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("signed op: private key is not an Ed25519 key")
	}
	if !bytesEqual(key.Public().(ed25519.PublicKey), op.Author[:]) {
		return nil, errors.New("signed op: the key does not match the op's author")
	}
	id, err := op.ID()
	if err != nil {
		return nil, err
	}
	return &SignedOp{Op: *op, Alg: AlgEd25519, Sig: ed25519.Sign(key, sigPreimage(id, op.Prior))}, nil
}

func sigPreimage(opID, prior ID) []byte {
	m := make([]byte, 64)
	copy(m, opID[:])
	copy(m[32:], prior[:])
	return m
}

// Encode returns the canonical CBOR of the signed op.
func (s *SignedOp) Encode() ([]byte, error) {
	if err := s.Op.Validate(); err != nil {
		return nil, err
	}
	return encMode.Marshal(s)
}

// Verify checks the algorithm and the author's signature over op_id ‖ prior
// and returns the op_id.
func (s *SignedOp) Verify() (ID, error) {
	if s.Alg != AlgEd25519 {
		return ID{}, fmt.Errorf("%w: got %d", ErrUnsupportedAlg, s.Alg)
	}
	if len(s.Sig) != ed25519.SignatureSize {
		return ID{}, fmt.Errorf("signed op: signature is %d bytes, want 64", len(s.Sig))
	}
	id, err := s.Op.ID()
	if err != nil {
		return ID{}, err
	}
	if !ed25519.Verify(s.Op.Author[:], sigPreimage(id, s.Op.Prior), s.Sig) {
		return ID{}, ErrBadSignature
	}
	return id, nil
}

// OpenSignedOp decodes a canonical SignedOp and verifies it.
func OpenSignedOp(b []byte) (*SignedOp, ID, error) {
	s := new(SignedOp)
	if err := decodeCanonical("signed op", b, s); err != nil {
		return nil, ID{}, err
	}
	if err := s.Op.Validate(); err != nil {
		return nil, ID{}, err
	}
	id, err := s.Verify()
	if err != nil {
		return nil, ID{}, err
	}
	return s, id, nil
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }
