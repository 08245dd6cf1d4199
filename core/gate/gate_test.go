package gate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// storeGate is a gate over a fresh store with one active grant.
func storeGate(t testing.TB, g *grant.Grant, tamper func([]byte) []byte) (*Gate, string) {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	id, err := identity.Create(filepath.Join(dir, "home"), "gate.test", false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "home", "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	is, _ := grant.NewIssuer(id.Steward, id.Key)
	g.Roots = []string{ws}
	s, err := is.Sign(g)
	if err != nil {
		t.Fatal(err)
	}
	env := s.Envelope
	if tamper != nil {
		env = tamper(bytes.Clone(env))
	}
	ctx := context.Background()
	if err := st.PutGrant(ctx, store.GrantRecord{ID: s.ID.String(), Signed: env, BudgetUJ: g.BudgetUJ}); err != nil {
		t.Fatal(err)
	}
	sealer, _ := id.Sealer()
	gt := &Gate{Store: st, Sealer: sealer, Trust: grant.Trust{id.Steward: id.Public()}, JouleHome: filepath.Join(dir, "home")}
	recordActive(t, gt, s.ID.String())
	return gt, ws
}

// recordActive seals the trust receipts that issue grant id and make it
// active for every session, as 'joule grant issue --use' does, whatever
// its stored envelope holds (a test may have damaged it).
func recordActive(t testing.TB, g *Gate, id string) {
	t.Helper()
	ctx := context.Background()
	for _, r := range []Record{
		{Session: trust.GrantsSession, Tool: "joule grant issue", Code: trust.CodeIssued, Summary: trust.IssuedSummary(id), Grants: []string{id}},
		{Session: trust.GrantsSession, Tool: "joule grant use", Code: trust.CodeActivated, Summary: trust.ActivatedSummary(id, ""), Grants: []string{id}},
	} {
		if _, err := g.SealRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
}

func liveGrant() *grant.Grant {
	now := time.Now()
	return &grant.Grant{Subject: grant.AnySubject, Allow: []string{"Bash(go test:*)"}, Tiers: []string{"l0"}, BudgetUJ: 120_000,
		NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(time.Hour).Unix()}
}

func TestGateStoredGrantFailures(t *testing.T) {
	ctx := context.Background()
	event := func(ws string) []byte {
		return []byte(fmt.Sprintf(`{"session_id":"s","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
	}
	// A tampered grant envelope: the signature no longer verifies.
	g, ws := storeGate(t, liveGrant(), func(b []byte) []byte { b[len(b)-70] ^= 1; return b })
	if r := g.DecideJSON(ctx, event(ws)); r.Code != CodeGrantInvalid || r.Receipt == "" {
		t.Fatalf("tampered: %+v", r)
	}
	// An expired grant.
	old := liveGrant()
	old.NotBefore, old.NotAfter = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
	g, ws = storeGate(t, old, nil)
	if r := g.DecideJSON(ctx, event(ws)); r.Code != CodeGrantExpired {
		t.Fatalf("expired: %+v", r)
	}
	// Budget: 50 mJ per Bash call, 120 mJ granted: two allows, then a deny.
	g, ws = storeGate(t, liveGrant(), nil)
	var got []string
	for i := 0; i < 3; i++ {
		got = append(got, g.DecideJSON(ctx, event(ws)).Code)
	}
	if got[0] != CodeAllowed || got[1] != CodeAllowed || got[2] != CodeBudgetExceeded {
		t.Fatalf("budget: %v", got)
	}
	// Revoked.
	id, _ := g.ActiveID(ctx, "")
	if err := g.Revoke(ctx, id); err != nil {
		t.Fatal(err)
	}
	if r := g.DecideJSON(ctx, event(ws)); r.Code != CodeGrantRevoked {
		t.Fatalf("revoked: %+v", r)
	}
	// No active grant.
	empty, err := store.Open(filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	none := &Gate{Store: empty, Sealer: g.Sealer, Trust: g.Trust, JouleHome: g.JouleHome}
	if r := none.DecideJSON(ctx, event(ws)); r.Code != CodeNoActiveGrant {
		t.Fatalf("none: %+v", r)
	}
	// Tier consultations are sealed too.
	g, ws = storeGate(t, liveGrant(), nil)
	if r := g.ConsultTier(ctx, "s", ws, core.L0); r.Decision != Allow || r.DebitUJ != 1 {
		t.Fatalf("L0: %+v", r)
	}
	if r := g.ConsultTier(ctx, "s", ws, core.L4); r.Decision != Deny || r.Code != CodeNotGranted {
		t.Fatalf("L4: %+v", r)
	}
}
