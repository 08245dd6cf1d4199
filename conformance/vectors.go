// Package conformance generates and checks Joule Code conformance vector
// packs (classes C1–C4 of the specification) in the file shapes WIRE.md pins.
package conformance

import (
	"github.com/joulehook/joule/core"
)

// The vector files of a pack, in the order they are checked.
const (
	FileCodingOps  = "coding_op_vectors.json"
	FileSignatures = "signature_vectors.json"
	FileReceipts   = "receipt_vectors.json"
	FileCascade    = "cascade_vectors.json"
	FileTree       = "tree_vectors.json"
)

// CodingOpFile is coding_op_vectors.json (C1).
type CodingOpFile struct {
	Version int              `json:"version"`
	Vectors []CodingOpVector `json:"vectors"`
}

type CodingOpVector struct {
	Name             string        `json:"name"`
	Op               core.CodingOp `json:"op"`
	CanonicalCBORHex string        `json:"canonical_cbor_hex"`
	OpID             core.ID       `json:"op_id"`
}

// SignatureFile is signature_vectors.json (C2).
type SignatureFile struct {
	Version int               `json:"version"`
	Vectors []SignatureVector `json:"vectors"`
}

type SignatureVector struct {
	Name            string        `json:"name"`
	SeedHex         string        `json:"seed_hex"`
	Op              core.CodingOp `json:"op"`
	OpID            core.ID       `json:"op_id"`
	Signature       core.Bytes    `json:"signature"`
	SignedOpCBORHex string        `json:"signed_op_cbor_hex"`
	Valid           bool          `json:"valid"`
	Reason          string        `json:"reason,omitempty"`
}

// ReceiptFile is receipt_vectors.json (C3).
type ReceiptFile struct {
	Version   int             `json:"version"`
	Steward   string          `json:"steward"`
	PublicKey core.PublicKey  `json:"public_key"`
	SeedHex   string          `json:"seed_hex"`
	Vectors   []ReceiptVector `json:"vectors"`
}

type ReceiptVector struct {
	Name         string         `json:"name"`
	Core         core.OpReceipt `json:"core"`
	COSESign1Hex string         `json:"cose_sign1_hex"`
	Valid        bool           `json:"valid"`
	Reason       string         `json:"reason,omitempty"`
}

// CascadeFile is cascade_vectors.json (C4).
type CascadeFile struct {
	Version int             `json:"version"`
	Vectors []CascadeVector `json:"vectors"`
}

type CascadeVector struct {
	Name        string          `json:"name"`
	Stages      []ScriptedStage `json:"stages"`
	ClosingTier *core.Tier      `json:"closing_tier"`
	Consulted   []core.Tier     `json:"consulted"`
}

// ScriptedStage is a stage whose outcome is fixed: close, miss or error.
type ScriptedStage struct {
	Tier    core.Tier `json:"tier"`
	Outcome string    `json:"outcome"`
}

// TreeFile is tree_vectors.json.
type TreeFile struct {
	Version int          `json:"version"`
	Vectors []TreeVector `json:"vectors"`
}

type TreeVector struct {
	Name             string                `json:"name"`
	Files            map[string]core.Bytes `json:"files"`
	CanonicalCBORHex string                `json:"canonical_cbor_hex"`
	TreeID           core.ID               `json:"tree_id"`
	// Valid is false for a tree that must be refused, as in the signature
	// and receipt files; a positive vector leaves it out (WIRE.md's shape).
	Valid  *bool  `json:"valid,omitempty"`
	Reason string `json:"reason,omitempty"`
}
