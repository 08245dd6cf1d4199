package receipts

import (
	"errors"
	"time"

	"github.com/joulehook/joule/core"
)

// Link is where a session receipt sits: its session, its sequence in the
// session's chain, and the chain hash of the receipt before it (zero for
// the first).
type Link struct {
	Session  string
	Sequence uint64
	Prev     core.ID
}

// Act is what a decision receipt records of one decision: everything in
// it but its place in the chain, its steward and, unless given, its nonce.
type Act struct {
	Time        time.Time
	Tool        string  // what was asked for: a tool, "model-call", a joule command
	InputDigest core.ID // BLAKE3 of what was asked, as sent
	Summary     string
	Cwd         string
	ContentID   string // omitted when empty
	Decision    string // Allow, Deny, Ask or Rewrite
	Code        string
	Reason      string   // cut to MaxReason bytes
	Grants      []string // nil is sealed as no grants, []
	DebitUJ     uint64   // must be 0 for a deny
	Nonce       string   // "" draws a fresh one
}

// MaxReason bounds a decision receipt's reason, in bytes; a longer one is
// cut on a UTF-8 boundary and ends in "…".
const MaxReason = 1024

// NewDecision returns the decision receipt of act at link, sealed by
// steward, validated. Every decision receipt joule seals is made here, so
// that each carries the same shared part: kind, link, an estimated debit's
// provenance, grants never null, a fresh nonce, a bounded reason.
func NewDecision(at Link, steward string, act Act) (*Decision, error) {
	if act.Time.UnixMilli() <= 0 {
		return nil, errors.New("decision receipt: no time, or one before 1970")
	}
	d := &Decision{
		Kind: KindDecision, Session: at.Session, Sequence: at.Sequence, Prev: at.Prev,
		TimeMS: uint64(act.Time.UnixMilli()), Tool: act.Tool, InputDigest: act.InputDigest, Summary: act.Summary,
		Cwd: act.Cwd, ContentID: act.ContentID, Decision: act.Decision, Code: act.Code, Reason: Truncate(act.Reason, MaxReason),
		Grants: act.Grants, DebitUJ: act.DebitUJ, Provenance: core.Estimator, Nonce: act.Nonce, Steward: steward,
	}
	if d.Grants == nil {
		d.Grants = []string{}
	}
	if d.Nonce == "" {
		n, err := core.NewNonce()
		if err != nil {
			return nil, err
		}
		d.Nonce = n
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// SealDecision makes the decision receipt of act at link (NewDecision)
// and seals it with s: the COSE_Sign1 envelope over its canonical CBOR.
func SealDecision(s *core.Sealer, at Link, act Act) ([]byte, error) {
	d, err := NewDecision(at, s.Steward(), act)
	if err != nil {
		return nil, err
	}
	payload, err := core.Canonical(d)
	if err != nil {
		return nil, err
	}
	return s.SealPayload(payload)
}

// Truncate cuts s to at most n bytes and an ellipsis, on a UTF-8
// boundary, so that what a receipt carries stays valid text.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
