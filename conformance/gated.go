package conformance

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/tiers"
)

// FileGatedCascade holds the C5 vectors: the gated cascade of Joule Code
// §5.1 (tier verbs, per-tier reference costs, denial as fall-through, every
// consultation sealed with its reason).
const FileGatedCascade = "gated_cascade_vectors.json"

// GatedFile is gated_cascade_vectors.json (C5). The fixture identity and
// clock are fixed so that runs are deterministic end to end.
type GatedFile struct {
	Version         int                  `json:"version"`
	Issuer          string               `json:"issuer"`
	IssuerSeedHex   string               `json:"issuer_seed_hex"`
	IssuerPublicKey core.PublicKey       `json:"issuer_public_key"`
	Now             int64                `json:"now"`
	Workspace       string               `json:"workspace"`
	TierCostsUJ     map[core.Tier]uint64 `json:"tier_costs_uj"`
	Provenance      core.Provenance      `json:"energy_provenance"`
	Vectors         []GatedVector        `json:"vectors"`
}

// GatedVector is one run of a gated cascade.
type GatedVector struct {
	Name    string `json:"name"`
	Session string `json:"session"`
	// Grants are the signed grant envelopes of the chain, root first, hex.
	Grants       []string        `json:"grants_hex"`
	Stages       []ScriptedStage `json:"stages"`
	ClosingTier  *core.Tier      `json:"closing_tier"`
	Consulted    []core.Tier     `json:"consulted"` // tiers whose stage ran
	Receipts     []GatedReceipt  `json:"receipts"`  // every consultation, in order
	TotalDebitUJ uint64          `json:"total_debit_uj"`
	RemainingUJ  []uint64        `json:"remaining_uj"` // per grant, root first
}

// GatedReceipt is the verdict sealed for one consultation.
type GatedReceipt struct {
	Tier     core.Tier `json:"tier"`
	Decision string    `json:"decision"`
	Code     string    `json:"code"`
	DebitUJ  uint64    `json:"debit_uj"`
}

func init() {
	checkers = append(checkers, checker{FileGatedCascade, checkGated})
}

// runGated runs one vector against a fresh store through the real gate,
// cascade and receipt code, and reports what happened.
func runGated(f *GatedFile, v *GatedVector) (*GatedVector, error) {
	key, err := keyFromSeedHex(f.IssuerSeedHex)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(key.Public().(ed25519.PublicKey), f.IssuerPublicKey[:]) {
		return nil, errors.New("issuer_seed_hex does not give issuer_public_key")
	}
	for tier, cost := range f.TierCostsUJ {
		if gate.TierCosts[tier] != cost {
			return nil, fmt.Errorf("tier %s costs %d µJ here, the pack says %d", tier, gate.TierCosts[tier], cost)
		}
	}
	dir, err := os.MkdirTemp("", "joule-c5-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := store.Open(filepath.Join(dir, "joule.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	trust := grant.Trust{f.Issuer: f.IssuerPublicKey}
	sealer, err := core.NewSealer(f.Issuer, key)
	if err != nil {
		return nil, err
	}
	now := time.Unix(f.Now, 0)
	g := &gate.Gate{Store: st, Sealer: sealer, Trust: trust, Now: func() time.Time { return now }}
	// Each grant is recorded in the trust chain, the last made active.
	var ids []string
	for i, h := range v.Grants {
		env, err := hex.DecodeString(h)
		if err != nil {
			return nil, fmt.Errorf("grant %d: %v", i, err)
		}
		s, err := trust.Open(env)
		if err != nil {
			return nil, fmt.Errorf("grant %d: %v", i, err)
		}
		if err := g.Adopt(ctx, s, "a conformance vector's grant", i == len(v.Grants)-1); err != nil {
			return nil, fmt.Errorf("grant %d: %v", i, err)
		}
		ids = append(ids, s.ID.String())
	}
	stages := make([]tiers.Stage, len(v.Stages))
	for i, s := range v.Stages {
		stages[i] = scripted{s.Tier, s.Outcome}
	}
	c, err := tiers.New(stages...)
	if err != nil {
		return nil, err
	}
	res, err := c.WithGate(tiers.GrantGate{Gate: g}).Run(ctx, &tiers.Request{Session: v.Session, Root: f.Workspace})
	if err != nil {
		return nil, err
	}
	got := &GatedVector{Name: v.Name, Session: v.Session, Grants: v.Grants, Stages: v.Stages, Consulted: []core.Tier{}, Receipts: []GatedReceipt{}}
	if res.Closed() {
		t := res.Closing
		got.ClosingTier = &t
	}
	for _, c := range res.Consulted {
		if c.Ran() {
			got.Consulted = append(got.Consulted, c.Tier)
		}
	}
	// The receipts, read back from the store and verified as a chain.
	entries, err := st.Session(ctx, v.Session)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	envs := make([][]byte, len(entries))
	for i, e := range entries {
		envs[i] = e.Envelope
	}
	verifier, err := core.NewVerifier(f.Issuer, f.IssuerPublicKey[:])
	if err != nil {
		return nil, err
	}
	decoded, err := receipts.VerifyChain(verifier, f.Issuer, envs)
	if err != nil {
		return nil, fmt.Errorf("sealed receipts do not verify: %w", err)
	}
	for _, a := range decoded {
		d := a.Decision
		if d == nil || !strings.HasPrefix(d.Tool, "cascade:") {
			return nil, fmt.Errorf("unexpected receipt %+v", a.Core())
		}
		got.Receipts = append(got.Receipts, GatedReceipt{Tier: core.Tier(strings.TrimPrefix(d.Tool, "cascade:")), Decision: d.Decision, Code: d.Code, DebitUJ: d.DebitUJ})
		got.TotalDebitUJ += d.DebitUJ
	}
	for _, id := range ids {
		rec, err := st.Grant(ctx, id)
		if err != nil {
			return nil, err
		}
		got.RemainingUJ = append(got.RemainingUJ, rec.RemainingUJ())
	}
	if got.RemainingUJ == nil {
		got.RemainingUJ = []uint64{}
	}
	return got, nil
}

func checkGated(data []byte, report func(Verdict)) ([]string, error) {
	top, vectors, warnings, err := vectorFile(data, "issuer", "issuer_seed_hex", "issuer_public_key", "now", "workspace", "tier_costs_uj", "energy_provenance")
	if err != nil {
		return nil, err
	}
	f := GatedFile{Version: 1}
	for key, dst := range map[string]any{"issuer": &f.Issuer, "issuer_seed_hex": &f.IssuerSeedHex, "issuer_public_key": &f.IssuerPublicKey,
		"now": &f.Now, "workspace": &f.Workspace, "tier_costs_uj": &f.TierCostsUJ, "energy_provenance": &f.Provenance} {
		if err := top.get(key, dst); err != nil {
			return nil, fmt.Errorf("malformed vector file: %w", err)
		}
	}
	if f.Provenance != core.Estimator {
		return nil, fmt.Errorf("energy_provenance %q: the reference costs are Estimator figures", f.Provenance)
	}
	known := []string{"name", "session", "grants_hex", "stages", "closing_tier", "consulted", "receipts", "total_debit_uj", "remaining_uj"}
	judge(vectors, known, report, func(o *object) (string, error) {
		var v GatedVector
		if err := o.into(&v); err != nil {
			return "", err
		}
		got, err := runGated(&f, &v)
		if err == nil {
			err = compareGated(got, &v)
		}
		return "", err
	})
	return warnings, nil
}

func compareGated(got, want *GatedVector) error {
	if tierOrNull(got.ClosingTier) != tierOrNull(want.ClosingTier) {
		return fmt.Errorf("closing tier %s, want %s", tierOrNull(got.ClosingTier), tierOrNull(want.ClosingTier))
	}
	if !slices.Equal(got.Consulted, want.Consulted) {
		return fmt.Errorf("stages run %v, want %v", got.Consulted, want.Consulted)
	}
	if !slices.Equal(got.Receipts, want.Receipts) {
		return fmt.Errorf("sealed verdicts %v, want %v", got.Receipts, want.Receipts)
	}
	if got.TotalDebitUJ != want.TotalDebitUJ {
		return fmt.Errorf("total debit %d µJ, want %d", got.TotalDebitUJ, want.TotalDebitUJ)
	}
	if !slices.Equal(got.RemainingUJ, want.RemainingUJ) {
		return fmt.Errorf("remaining %v µJ, want %v", got.RemainingUJ, want.RemainingUJ)
	}
	return nil
}
