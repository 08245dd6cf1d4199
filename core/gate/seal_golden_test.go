package gate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/receipts/receiptstest"
	"github.com/joulehook/joule/core/store"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenNonce stands in for a receipt's nonce, drawn fresh each time, so
// that the rest of its payload can be compared byte for byte.
var goldenNonce = strings.Repeat("0", 32)

// pinnedPayload is the payload of env, verified with v, its nonce replaced
// by goldenNonce and its prev by zeros (strings of the same length, so the
// CBOR around them is unchanged).
func pinnedPayload(t *testing.T, v *core.Verifier, env []byte) []byte {
	t.Helper()
	payload, d := pinNonce(t, v, env)
	// prev, the chain hash of the receipt before, hashes that one's nonce.
	prev := append([]byte{0x58, 0x20}, d.Prev[:]...)
	if d.Prev != (core.ID{}) && bytes.Count(payload, prev) != 1 {
		t.Fatalf("prev %s appears %d times", d.Prev, bytes.Count(payload, prev))
	}
	return bytes.Replace(payload, prev, append([]byte{0x58, 0x20}, make([]byte, 32)...), 1)
}

// pinNonce is the payload of env, verified with v, its nonce replaced by
// goldenNonce, and the decision it holds.
func pinNonce(t *testing.T, v *core.Verifier, env []byte) ([]byte, *receipts.Decision) {
	t.Helper()
	payload, err := v.Open(env)
	if err != nil {
		t.Fatal(err)
	}
	a, err := receipts.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	nonce := a.Decision.Nonce
	if bytes.Count(payload, []byte(nonce)) != 1 {
		t.Fatalf("nonce %s appears %d times", nonce, bytes.Count(payload, []byte(nonce)))
	}
	return bytes.Replace(payload, []byte(nonce), []byte(goldenNonce), 1), a.Decision
}

// checkGolden compares got, by case name, with testdata/file.
func checkGolden(t *testing.T, file string, got map[string][]byte) {
	t.Helper()
	receiptstest.CheckGolden(t, filepath.Join("testdata", file), got, *update)
}

// TestSealedDecisionGolden pins the payload of every kind of decision
// receipt the gate seals, byte for byte but for its nonce: a decision, a
// deny, a malformed event, a debit refused, a content id, a long reason,
// and the administrative records.
func TestSealedDecisionGolden(t *testing.T) {
	ctx := context.Background()
	seed := core.Sum([]byte("gate golden"))
	key := ed25519.NewKeyFromSeed(seed[:])
	sealer, err := core.NewSealer("gate.golden", key)
	if err != nil {
		t.Fatal(err)
	}
	verifier, _ := core.NewVerifier("gate.golden", key.Public().(ed25519.PublicKey))
	issuer, _ := grant.NewIssuer("gate.golden", key)
	now := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	ws := "/golden/ws"
	s, err := issuer.Sign(&grant.Grant{Subject: grant.AnySubject, Allow: []string{"Bash(go test:*)"}, Tiers: []string{"l0"},
		BudgetUJ: 220_000, Roots: []string{ws}, NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(time.Hour).Unix(),
		Nonce: strings.Repeat("7", 32)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.PutGrant(ctx, store.GrantRecord{ID: s.ID.String(), Signed: s.Envelope, BudgetUJ: 220_000}); err != nil {
		t.Fatal(err)
	}
	g := &Gate{Store: st, Sealer: sealer, Trust: grant.Trust{"gate.golden": s.Grant.Issuer}, JouleHome: filepath.Join(dir, "home"),
		Now: func() time.Time { return now }}
	recordActive(t, g, s.ID.String())

	event := func(session, cmd string) []byte {
		return []byte(fmt.Sprintf(`{"session_id":%q,"tool":"Bash","input":{"command":%q},"cwd":%q}`, session, cmd, ws))
	}
	cid := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct{ name, event string }{
		{"allow", string(event("allow", "go test ./..."))},
		{"deny", string(event("deny", "curl https://example.com/?token=x"))},
		{"malformed", `{"session_id":"malformed","tool":`},
		{"content-id", fmt.Sprintf(`{"session_id":"content-id","tool":"Bash","input":{"command":"go test ./a"},"cwd":%q,"content_id":%q}`, ws, cid)},
		{"long-reason", string(event("long-reason", "curl a"+strings.Repeat("é", 700)))},
	} {
		if r := g.DecideJSON(ctx, []byte(c.event)); r.Receipt == "" {
			t.Fatalf("%s: not sealed: %+v", c.name, r)
		}
	}
	// 220 mJ granted, 50 mJ a call: the fifth call is refused its debit.
	for i := 0; i < 3; i++ {
		g.DecideJSON(ctx, event("budget", fmt.Sprintf("go test ./%d", i)))
	}
	if _, err := g.SealRecord(ctx, Record{Session: GrantsSession, Tool: "joule grant renew", Summary: "renewed", Cwd: "/golden",
		Code: CodeGrantRenewed, Reason: "renewed for a day", Grants: []string{s.ID.String()}, Input: []byte("renewal")}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.SealRecord(ctx, Record{Session: "record-deny", Tool: "joule test", Decision: receipts.Deny, Code: "refused",
		Reason: strings.Repeat("x", 2000)}); err != nil {
		t.Fatal(err)
	}
	// A reason cut inside a rune: before receipts.NewDecision this sealed
	// invalid UTF-8, a receipt no verifier could decode.
	if _, err := g.SealRecord(ctx, Record{Session: "record-utf8", Tool: "joule test", Code: "noted",
		Reason: "a" + strings.Repeat("é", 1000)}); err != nil {
		t.Fatal(err)
	}

	got := map[string][]byte{}
	for _, session := range []string{"allow", "deny", MalformedSession, "content-id", "long-reason", "budget", GrantsSession, "record-deny", "record-utf8"} {
		entries, err := st.Session(ctx, session)
		if err != nil {
			t.Fatalf("%s: %v", session, err)
		}
		for _, e := range entries {
			got[fmt.Sprintf("%s/%d", session, e.Seq)] = pinnedPayload(t, verifier, e.Envelope)
		}
	}
	checkGolden(t, "decision-receipts.golden", got)
}

// TestLossReceiptGolden pins the payload of the receipt AcceptLoss seals,
// byte for byte but for its nonce: the bytes `joule store accept-loss`
// sealed before it moved here from cmd/joule.
func TestLossReceiptGolden(t *testing.T) {
	seed := core.Sum([]byte("loss golden"))
	key := ed25519.NewKeyFromSeed(seed[:])
	sealer, err := core.NewSealer("loss.golden", key)
	if err != nil {
		t.Fatal(err)
	}
	verifier, _ := core.NewVerifier("loss.golden", key.Public().(ed25519.PublicKey))
	now := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	witnessed := &store.Checkpoint{Origin: "joule receipts log loss.golden", Size: 4, Root: [32]byte{1, 2, 3}}
	cur := store.Checkpoint{Origin: "joule receipts log loss.golden", Size: 2, Root: [32]byte{9, 8, 7}}
	pos := store.Position{Session: LossSession, Seq: 3, Prev: [32]byte{5}, Index: 2}
	found := fmt.Errorf("%w: the witness remembers 4 receipts, the store holds 2", store.ErrRolledBack)
	got := map[string][]byte{}
	for _, c := range []struct {
		name      string
		witnessed *store.Checkpoint
		found     error
	}{
		{"rolled-back", witnessed, found},
		{"no-witness", nil, found},
		{"no-complaint", witnessed, nil},
		{"long-complaint", witnessed, errors.New(strings.Repeat("w", 1000))},
	} {
		act := lossAct(c.witnessed, cur, c.found)
		act.Time, act.Cwd = now, "/golden/home"
		env, err := receipts.SealDecision(sealer, link(pos), act)
		if err != nil {
			t.Fatal(err)
		}
		got[c.name], _ = pinNonce(t, verifier, env) // prev is given here, not drawn
	}
	checkGolden(t, "loss-receipts.golden", got)
}
