// Package grant implements joule's signed grants: capabilities (allow, ask
// and deny rules in Claude Code's permission-rule syntax), cascade tier
// verbs and a joule budget, bound to a subject and a time window, signed by a
// trusted issuer as a COSE_Sign1 envelope, and delegable only by attenuation.
package grant

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/rule"
)

// Kind is the value of a grant's "jc_grant" field.
const Kind = "joule-grant/1"

// AnySubject is the subject of a grant any session may use.
const AnySubject = "*"

// Grant is the signed core of a grant. Its id is the content address of its
// canonical CBOR (see ID); docs/receipts.md gives the schema.
type Grant struct {
	Kind      string         `cbor:"jc_grant" json:"jc_grant"`
	Issuer    core.PublicKey `cbor:"issuer" json:"issuer"`
	Subject   string         `cbor:"subject" json:"subject"`
	Roots     []string       `cbor:"roots" json:"roots"`
	Allow     []string       `cbor:"allow" json:"allow"`
	Ask       []string       `cbor:"ask" json:"ask"`
	Deny      []string       `cbor:"deny" json:"deny"`
	Tiers     []string       `cbor:"tiers" json:"tiers"`
	BudgetUJ  uint64         `cbor:"budget_uj" json:"budget_uj"`
	NotBefore int64          `cbor:"not_before" json:"not_before"`
	NotAfter  int64          `cbor:"not_after" json:"not_after"`
	Parent    string         `cbor:"parent,omitempty" json:"parent,omitempty"`
	Nonce     string         `cbor:"nonce" json:"nonce"`
}

// TierVerbs are the cascade tier verbs a grant may name.
var TierVerbs = []string{"l0", "l1", "l2", "l3", "l4"}

// Verb returns the grant verb of a tier: L2 → "l2".
func Verb(t core.Tier) string { return strings.ToLower(string(t)) }

// Validate checks the grant's own rules: kind, parsable rules, known tier
// verbs, absolute clean roots, a sane window.
func (g *Grant) Validate() error {
	switch {
	case g.Kind != Kind:
		return fmt.Errorf("grant: jc_grant is %q, want %q", g.Kind, Kind)
	case g.Subject == "":
		return errors.New("grant: subject is empty (use * for any session)")
	case g.NotAfter <= g.NotBefore:
		return errors.New("grant: not_after must be after not_before")
	case len(g.Nonce) != 32:
		return errors.New("grant: nonce must be 32 hex digits")
	case g.BudgetUJ > 1<<63-1:
		return errors.New("grant: budget_uj above 2^63-1")
	}
	if _, err := rule.ParseSet(g.Allow, g.Ask, g.Deny); err != nil {
		return fmt.Errorf("grant: %w", err)
	}
	for _, v := range g.Tiers {
		if !slices.Contains(TierVerbs, v) {
			return fmt.Errorf("grant: unknown tier verb %q (want l0..l4)", v)
		}
	}
	if len(g.Roots) == 0 {
		return errors.New("grant: no workspace roots")
	}
	for _, r := range g.Roots {
		if !filepath.IsAbs(r) || filepath.Clean(r) != r {
			return fmt.Errorf("grant: workspace root %q is not an absolute clean path", r)
		}
	}
	return nil
}

// Rules parses the grant's three rule lists.
func (g *Grant) Rules() (rule.Set, error) { return rule.ParseSet(g.Allow, g.Ask, g.Deny) }

// Canonical returns the grant's canonical CBOR.
func (g *Grant) Canonical() ([]byte, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return core.Canonical(g)
}

// ID returns the grant id: the content address of its canonical CBOR.
func (g *Grant) ID() (core.ID, error) {
	b, err := g.Canonical()
	if err != nil {
		return core.ID{}, err
	}
	return core.Sum(b), nil
}

// Decode decodes canonical grant bytes.
func Decode(b []byte) (*Grant, error) {
	g := new(Grant)
	if err := core.DecodeCanonical("grant", b, g); err != nil {
		return nil, err
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// ActiveAt reports whether t falls in the grant's window.
func (g *Grant) ActiveAt(t time.Time) bool {
	s := t.Unix()
	return s >= g.NotBefore && s < g.NotAfter
}

// AppliesTo reports whether a session may use the grant.
func (g *Grant) AppliesTo(session string) bool {
	return g.Subject == AnySubject || g.Subject == session
}

// HasTier reports whether the grant names a tier verb.
func (g *Grant) HasTier(t core.Tier) bool { return slices.Contains(g.Tiers, Verb(t)) }

// Signed is a verified grant with its envelope.
type Signed struct {
	Grant    *Grant
	ID       core.ID
	Envelope []byte
	// IssuerName is the name the trusted issuer signs as (the COSE kid).
	IssuerName string
}

// Issuer signs grants.
type Issuer struct {
	name   string
	key    ed25519.PrivateKey
	sealer *core.Sealer
}

// NewIssuer returns an issuer that signs as name with key.
func NewIssuer(name string, key ed25519.PrivateKey) (*Issuer, error) {
	s, err := core.NewSealer(name, key)
	if err != nil {
		return nil, err
	}
	return &Issuer{name: name, key: key, sealer: s}, nil
}

// Public returns the issuer's public key.
func (is *Issuer) Public() core.PublicKey {
	var k core.PublicKey
	copy(k[:], is.key.Public().(ed25519.PublicKey))
	return k
}

// Sign fills in the issuer and a nonce if missing, and signs the grant.
func (is *Issuer) Sign(g *Grant) (*Signed, error) {
	g.Kind = Kind
	g.Issuer = is.Public()
	if g.Nonce == "" {
		n, err := core.NewNonce()
		if err != nil {
			return nil, err
		}
		g.Nonce = n
	}
	b, err := g.Canonical()
	if err != nil {
		return nil, err
	}
	env, err := is.sealer.SealPayload(b)
	if err != nil {
		return nil, err
	}
	return &Signed{Grant: g, ID: core.Sum(b), Envelope: env, IssuerName: is.name}, nil
}

// Trust is the set of issuers whose grants are honoured: name → key.
type Trust map[string]core.PublicKey

// Open verifies a grant envelope against the trusted issuers: the COSE kid
// names the issuer, whose key must both verify the signature and equal the
// grant's issuer field.
func (tr Trust) Open(env []byte) (*Signed, error) {
	for name, key := range tr {
		v, err := core.NewVerifier(name, key[:])
		if err != nil {
			continue
		}
		payload, err := v.Open(env)
		if err != nil {
			var re *core.ReceiptError
			if errors.As(err, &re) && re.Code == "kid-mismatch" {
				continue
			}
			return nil, fmt.Errorf("grant-invalid: %w", err)
		}
		g, err := Decode(payload)
		if err != nil {
			return nil, fmt.Errorf("grant-invalid: %w", err)
		}
		if g.Issuer != key {
			return nil, errors.New("grant-invalid: the issuer field is not the key that signed it")
		}
		return &Signed{Grant: g, ID: core.Sum(payload), Envelope: env, IssuerName: name}, nil
	}
	return nil, errors.New("grant-invalid: not signed by a trusted issuer")
}
