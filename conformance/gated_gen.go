package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
)

// c5Now is the fixed clock of the C5 vectors.
const c5Now = 1_800_000_000

func init() { RegisterGen(genGated) }

type gatedGrant struct {
	tiers   []string
	budget  uint64
	subject string
	window  [2]int64 // relative to c5Now
}

type gatedCase struct {
	name      string
	grants    []gatedGrant // root first; each after the first delegates from the one before
	stages    []string     // outcome per tier L0..L4 ("" = no stage for that tier)
	closing   string
	consulted []core.Tier
	receipts  []GatedReceipt
	remaining []uint64
}

func allow(t core.Tier, debit uint64) GatedReceipt {
	return GatedReceipt{Tier: t, Decision: "allow", Code: "allowed", DebitUJ: debit}
}
func denied(t core.Tier, code string) GatedReceipt {
	return GatedReceipt{Tier: t, Decision: "deny", Code: code}
}

var (
	all5    = []string{"l0", "l1", "l2", "l3", "l4"}
	hour    = [2]int64{-3600, 3600}
	expired = [2]int64{-7200, -3600}
)

func gatedCases() []gatedCase {
	return []gatedCase{
		{name: "close-at-l1-debits-l0-and-l1", grants: []gatedGrant{{all5, 1_000, "*", hour}},
			stages: []string{"miss", "close", "close", "close", "close"}, closing: "L1", consulted: []core.Tier{"L0", "L1"},
			receipts: []GatedReceipt{allow("L0", 1), allow("L1", 10)}, remaining: []uint64{989}},
		{name: "no-l4-verb-never-reaches-the-remote-agent", grants: []gatedGrant{{[]string{"l0", "l1", "l2", "l3"}, 100_000_000, "*", hour}},
			stages: []string{"miss", "miss", "miss", "miss", "close"}, consulted: []core.Tier{"L0", "L1", "L2", "L3"},
			receipts:  []GatedReceipt{allow("L0", 1), allow("L1", 10), allow("L2", 1_000), allow("L3", 1_000_000), denied("L4", "action-not-granted")},
			remaining: []uint64{100_000_000 - 1_001_011}},
		{name: "denied-tier-falls-through-to-next", grants: []gatedGrant{{[]string{"l0", "l2"}, 5_000, "*", hour}},
			stages: []string{"miss", "close", "close", "", ""}, closing: "L2", consulted: []core.Tier{"L0", "L2"},
			receipts: []GatedReceipt{allow("L0", 1), denied("L1", "action-not-granted"), allow("L2", 1_000)}, remaining: []uint64{3_999}},
		{name: "budget-runs-out-resolves-to-nothing", grants: []gatedGrant{{all5, 15, "*", hour}},
			stages: []string{"miss", "miss", "close", "close", "close"}, consulted: []core.Tier{"L0", "L1"},
			receipts:  []GatedReceipt{allow("L0", 1), allow("L1", 10), denied("L2", "budget-exceeded"), denied("L3", "budget-exceeded"), denied("L4", "budget-exceeded")},
			remaining: []uint64{4}},
		{name: "exact-budget-is-enough", grants: []gatedGrant{{all5, 11, "*", hour}},
			stages: []string{"miss", "close", "", "", ""}, closing: "L1", consulted: []core.Tier{"L0", "L1"},
			receipts: []GatedReceipt{allow("L0", 1), allow("L1", 10)}, remaining: []uint64{0}},
		{name: "errored-stage-is-still-debited", grants: []gatedGrant{{all5, 1_000_000, "*", hour}},
			stages: []string{"error", "error", "close", "", ""}, closing: "L2", consulted: []core.Tier{"L0", "L1", "L2"},
			receipts: []GatedReceipt{allow("L0", 1), allow("L1", 10), allow("L2", 1_000)}, remaining: []uint64{998_989}},
		{name: "expired-grant-denies-every-tier", grants: []gatedGrant{{all5, 1_000, "*", expired}},
			stages: []string{"close", "close", "", "", ""}, consulted: []core.Tier{},
			receipts: []GatedReceipt{denied("L0", "grant-expired"), denied("L1", "grant-expired")}, remaining: []uint64{1_000}},
		{name: "other-session-is-denied", grants: []gatedGrant{{all5, 1_000, "session-b", hour}},
			stages: []string{"close", "", "", "", ""}, consulted: []core.Tier{},
			receipts: []GatedReceipt{denied("L0", "grant-subject-mismatch")}, remaining: []uint64{1_000}},
		{name: "chain-debits-every-link", grants: []gatedGrant{{all5, 10_000, "*", hour}, {[]string{"l0", "l1", "l2"}, 2_000, "*", hour}},
			stages: []string{"miss", "miss", "close", "close", ""}, closing: "L2", consulted: []core.Tier{"L0", "L1", "L2"},
			receipts: []GatedReceipt{allow("L0", 1), allow("L1", 10), allow("L2", 1_000)}, remaining: []uint64{8_989, 989}},
		{name: "child-lacks-verb-parent-has-it", grants: []gatedGrant{{all5, 10_000_000, "*", hour}, {[]string{"l0", "l1"}, 1_000_000, "*", hour}},
			stages: []string{"miss", "miss", "close", "", ""}, consulted: []core.Tier{"L0", "L1"},
			receipts: []GatedReceipt{allow("L0", 1), allow("L1", 10), denied("L2", "action-not-granted")}, remaining: []uint64{9_999_989, 999_989}},
		{name: "child-budget-binds-first", grants: []gatedGrant{{all5, 10_000_000, "*", hour}, {all5, 500, "*", hour}},
			stages: []string{"miss", "miss", "close", "", ""}, consulted: []core.Tier{"L0", "L1"},
			receipts: []GatedReceipt{allow("L0", 1), allow("L1", 10), denied("L2", "budget-exceeded")}, remaining: []uint64{9_999_989, 489}},
		{name: "no-stages-no-receipts", grants: []gatedGrant{{all5, 10, "*", hour}},
			stages: []string{"", "", "", "", ""}, consulted: []core.Tier{}, receipts: []GatedReceipt{}, remaining: []uint64{10}},
	}
}

func genGated(dir string) error {
	issuerSeed := seed("c5 issuer")
	is, err := grant.NewIssuer(Steward, fixtureKey("c5 issuer"))
	if err != nil {
		return err
	}
	f := GatedFile{Version: 1, Issuer: Steward, IssuerSeedHex: hex.EncodeToString(issuerSeed), IssuerPublicKey: is.Public(),
		Now: c5Now, Workspace: "/workspace", TierCostsUJ: map[core.Tier]uint64{"L0": 1, "L1": 10, "L2": 1_000, "L3": 1_000_000, "L4": 10_000_000},
		Provenance: core.Estimator}
	for _, c := range gatedCases() {
		v := GatedVector{Name: c.name, Session: "session-a", Consulted: c.consulted, Receipts: c.receipts, RemainingUJ: c.remaining}
		parent := ""
		for i, gg := range c.grants {
			n := sha256.Sum256([]byte(fmt.Sprintf("c5 %s %d", c.name, i)))
			g := &grant.Grant{Subject: gg.subject, Roots: []string{"/workspace"}, Allow: []string{}, Ask: []string{}, Deny: []string{},
				Tiers: gg.tiers, BudgetUJ: gg.budget, NotBefore: c5Now + gg.window[0], NotAfter: c5Now + gg.window[1],
				Parent: parent, Nonce: hex.EncodeToString(n[:16])}
			s, err := is.Sign(g)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			parent = s.ID.String()
			v.Grants = append(v.Grants, hex.EncodeToString(s.Envelope))
		}
		for i, o := range c.stages {
			if o != "" {
				v.Stages = append(v.Stages, ScriptedStage{Tier: core.Tiers[i], Outcome: o})
			}
		}
		if v.Stages == nil {
			v.Stages = []ScriptedStage{}
		}
		if c.closing != "" {
			t := core.Tier(c.closing)
			v.ClosingTier = &t
		}
		for _, r := range c.receipts {
			v.TotalDebitUJ += r.DebitUJ
		}
		f.Vectors = append(f.Vectors, v)
	}
	return writeJSON(filepath.Join(dir, FileGatedCascade), f)
}
