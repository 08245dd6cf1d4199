package core

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Tier is a cascade tier's wire tag.
type Tier string

// The five tiers of the cascade, cheapest first.
const (
	L0 Tier = "L0" // content-addressed cache
	L1 Tier = "L1" // lawful: deterministic edits
	L2 Tier = "L2" // embedding and hybrid retrieval
	L3 Tier = "L3" // local model
	L4 Tier = "L4" // remote frontier agent over ACP
)

// Tiers lists every tier in cascade order.
var Tiers = []Tier{L0, L1, L2, L3, L4}

// Valid reports whether t is one of L0..L4.
func (t Tier) Valid() bool {
	return len(t) == 2 && t[0] == 'L' && t[1] >= '0' && t[1] <= '4'
}

// CodingOp is a signed transition of a source tree: the op_id preimage.
type CodingOp struct {
	Prior  ID        `cbor:"prior" json:"prior"`
	Edits  []Edit    `cbor:"edits" json:"edits"`
	Author PublicKey `cbor:"author" json:"author"`
	Intent string    `cbor:"intent" json:"intent"`
	Tier   Tier      `cbor:"tier" json:"tier"`
}

// Edit replaces the bytes an anchor selects in one file.
type Edit struct {
	Path        string `cbor:"path" json:"path"`
	Anchor      Anchor `cbor:"anchor" json:"anchor"`
	Replacement Bytes  `cbor:"replacement" json:"replacement"`
}

// Anchor selects the bytes an edit replaces: exactly one of a byte range
// [start, end) and the content address of the exact bytes (a hunk).
type Anchor struct {
	Range *[2]uint64 `cbor:"range,omitempty" json:"range,omitempty"`
	Hunk  *ID        `cbor:"hunk,omitempty" json:"hunk,omitempty"`
}

// RangeAnchor returns an anchor for bytes [start, end).
func RangeAnchor(start, end uint64) Anchor { return Anchor{Range: &[2]uint64{start, end}} }

// HunkAnchor returns an anchor for the one place holding exactly old.
func HunkAnchor(old []byte) Anchor {
	id := Sum(old)
	return Anchor{Hunk: &id}
}

// Validate checks the structural rules a canonical encoding cannot express.
func (op *CodingOp) Validate() error {
	if len(op.Edits) == 0 {
		return errors.New("coding op: edits must not be empty")
	}
	if !op.Tier.Valid() {
		return fmt.Errorf("coding op: tier %q is not one of L0..L4", op.Tier)
	}
	if !utf8.ValidString(op.Intent) {
		return errors.New("coding op: intent is not valid UTF-8")
	}
	for i, e := range op.Edits {
		if err := ValidatePath(e.Path); err != nil {
			return fmt.Errorf("coding op: edit %d: %w", i, err)
		}
		if err := e.Anchor.validate(); err != nil {
			return fmt.Errorf("coding op: edit %d: %w", i, err)
		}
	}
	return nil
}

func (a Anchor) validate() error {
	switch {
	case a.Range != nil && a.Hunk != nil:
		return errors.New("anchor has both range and hunk")
	case a.Range == nil && a.Hunk == nil:
		return errors.New("anchor has neither range nor hunk")
	case a.Range != nil && a.Range[0] > a.Range[1]:
		return fmt.Errorf("anchor range [%d, %d) has start after end", a.Range[0], a.Range[1])
	}
	return nil
}

// Canonical returns the op's canonical CBOR, the op_id preimage.
func (op *CodingOp) Canonical() ([]byte, error) {
	if err := op.Validate(); err != nil {
		return nil, err
	}
	return encMode.Marshal(op)
}

// ID returns the op_id: the content address of the canonical op.
func (op *CodingOp) ID() (ID, error) {
	b, err := op.Canonical()
	if err != nil {
		return ID{}, err
	}
	return Sum(b), nil
}

// DecodeOp decodes a canonical CodingOp.
func DecodeOp(b []byte) (*CodingOp, error) {
	op := new(CodingOp)
	if err := decodeCanonical("coding op", b, op); err != nil {
		return nil, err
	}
	if err := op.Validate(); err != nil {
		return nil, err
	}
	return op, nil
}
