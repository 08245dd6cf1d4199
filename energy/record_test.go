package energy_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

type recorderRig struct {
	rec      *energy.Recorder
	st       *store.Store
	verifier *core.Verifier
	grantID  string
}

func newRecorderRig(t *testing.T, budget uint64) *recorderRig {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	sealer, err := core.NewSealer("test.example", key)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := core.NewVerifier("test.example", pub)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := grant.NewIssuer("test.example", key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s, err := issuer.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{"/"}, Tiers: []string{"l4"},
		BudgetUJ: budget, NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutGrant(context.Background(), store.GrantRecord{ID: s.ID.String(), Signed: s.Envelope, BudgetUJ: budget}); err != nil {
		t.Fatal(err)
	}
	return &recorderRig{rec: &energy.Recorder{Store: st, Sealer: sealer}, st: st, verifier: verifier, grantID: s.ID.String()}
}

// chain returns session's receipts, verified as a chain.
func (r *recorderRig) chain(t *testing.T, session string) []*receipts.Efficiency {
	t.Helper()
	entries, err := r.st.Session(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	envs := make([][]byte, len(entries))
	for i, e := range entries {
		envs[i] = e.Envelope
	}
	all, err := receipts.VerifyChain(r.verifier, "test.example", envs)
	if err != nil {
		t.Fatalf("session %s does not verify: %v", session, err)
	}
	out := make([]*receipts.Efficiency, len(all))
	for i, a := range all {
		out[i] = a.Efficiency
	}
	return out
}

// TestSealBatchCoversCalls: records of one session and lease become one
// receipt listing them, charged as the sum of their draws; anything that
// differs in what a receipt shares is sealed apart.
func TestSealBatchCoversCalls(t *testing.T) {
	ctx := context.Background()
	r := newRecorderRig(t, 10_000_000)
	lease, err := r.st.Reserve(ctx, []string{r.grantID}, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.st.Reserve(ctx, []string{r.grantID}, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	own, err := r.st.Reserve(ctx, []string{r.grantID}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.UnixMilli(1_700_000_000_000)
	call := func(session string, i int, draw int64) energy.Record {
		nonce, _ := core.NewNonce()
		rec := energy.Record{Session: session, Unit: "model-call", Model: "claude-sonnet-4-5",
			Usage: energy.Usage{Input: uint64(100 + i), Output: uint64(10 + i)}, Estimate: energy.Estimate{UJ: uint64(1000 + i), Provenance: core.ModelBased},
			Coverage: receipts.CoverageEnforced, Complete: i != 2, Note: "call", Grants: []string{r.grantID}, Time: t0.Add(time.Duration(i) * time.Millisecond), Nonce: nonce}
		if draw != 0 {
			rec.Draw = &store.Draw{Reservation: draw, ReleaseUJ: 5000, ChargeUJ: uint64(1000 + i)}
		}
		return rec
	}
	measured := call("a", 9, lease)
	uj := uint64(77)
	measured.MeasuredUJ = &uj
	settled := call("a", 10, 0)
	settled.Reservation, settled.SettleUJ = &own, 500
	recs := []energy.Record{
		call("a", 0, lease), call("b", 1, lease), call("a", 2, lease), call("a", 3, other), call("a", 4, lease),
		measured, settled, call("b", 5, lease),
	}
	entries, sealed, errs := r.rec.SealBatch(ctx, recs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// a: calls 0, 2, 4 on the lease; 3 on the other lease; 9 measured; 10 settling its own.
	// b: calls 1 and 5.
	if sealed[0] != sealed[2] || sealed[0] != sealed[4] || entries[0].Seq != entries[4].Seq {
		t.Fatal("calls of one session and lease were not sealed together")
	}
	for _, i := range []int{1, 3, 5, 6} {
		if sealed[i] == sealed[0] {
			t.Errorf("record %d shares a receipt it must not", i)
		}
	}
	if sealed[1] != sealed[7] {
		t.Error("session b's calls were not sealed together")
	}
	a := r.chain(t, "a")
	if len(a) != 4 {
		t.Fatalf("session a has %d receipts, want 4 (three calls, one on another lease, one measured, one settling)", len(a))
	}
	first := a[0]
	if first.CallCount() != 3 || first.InputTokens != 100+102+104 || first.EstimatedUJ != 1000+1002+1004 || first.Status != receipts.StatusIncomplete || first.TimeMS != uint64(t0.Add(4*time.Millisecond).UnixMilli()) {
		t.Fatalf("the covering receipt: %+v", first)
	}
	for k, i := range []int{0, 2, 4} {
		if first.Calls[k].Nonce != recs[i].Nonce {
			t.Errorf("call %d lost its nonce", k)
		}
	}
	if a[2].MeasuredUJ == nil || *a[2].MeasuredUJ != 77 || a[2].Calls != nil {
		t.Errorf("measured call: %+v", a[2])
	}
	// The draws of one receipt are charged once, as their sum.
	ledger, err := r.st.Ledger(ctx, r.grantID)
	if err != nil {
		t.Fatal(err)
	}
	var spent uint64
	for _, l := range ledger {
		spent += l.AmountUJ
	}
	want := uint64(0)
	for _, rec := range recs {
		if rec.Draw != nil {
			want += rec.Draw.ChargeUJ
		}
	}
	want += 500 // the settled call
	if spent != want {
		t.Errorf("charged %d µJ, want %d", spent, want)
	}
	g, err := r.st.Grant(ctx, r.grantID)
	if err != nil {
		t.Fatal(err)
	}
	if g.SpentUJ != want {
		t.Errorf("grant spent %d µJ, want %d", g.SpentUJ, want)
	}
	// Draws release each call's share: 5000 µJ a call off a lease.
	resvs, err := r.st.Reservations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range resvs {
		switch rs.ID {
		case lease:
			if rs.AmountUJ != 1_000_000-6*5000 {
				t.Errorf("lease holds %d µJ, want %d", rs.AmountUJ, 1_000_000-6*5000)
			}
		case own:
			t.Error("the settled reservation is still open")
		}
	}
}

// TestSealBatchBoundsCalls: no receipt covers more than MaxCalls calls.
func TestSealBatchBoundsCalls(t *testing.T) {
	ctx := context.Background()
	r := newRecorderRig(t, 10_000_000)
	n := 2*energy.MaxCalls + 1
	recs := make([]energy.Record, n)
	for i := range recs {
		recs[i] = energy.Record{Session: "s", Usage: energy.Usage{Input: 1}, Estimate: energy.Estimate{UJ: 1}, Coverage: receipts.CoverageEnforced, Complete: true}
	}
	_, _, errs := r.rec.SealBatch(ctx, recs)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := r.chain(t, "s")
	if len(got) != 3 || got[0].CallCount() != energy.MaxCalls || got[1].CallCount() != energy.MaxCalls || got[2].CallCount() != 1 {
		t.Fatalf("%d receipts for %d calls", len(got), n)
	}
	seen := map[string]bool{}
	for _, e := range got {
		for _, nonce := range e.Nonces() {
			if seen[nonce] {
				t.Fatalf("nonce %s twice", nonce)
			}
			seen[nonce] = true
		}
	}
	if len(seen) != n+2 {
		t.Fatalf("%d nonces, want a fresh one per call and per covering receipt (%d)", len(seen), n+2)
	}
	// What the store holds is canonical CBOR that decodes back to itself.
	entries, _ := r.st.Session(ctx, "s")
	var msg struct {
		_       struct{} `cbor:",toarray"`
		Prot    []byte
		Unprot  map[any]any
		Payload []byte
		Sig     []byte
	}
	if err := cbor.Unmarshal(entries[0].Envelope[1:], &msg); err != nil {
		t.Fatal(err)
	}
	a, err := receipts.Decode(msg.Payload)
	if err != nil || len(a.Efficiency.Calls) != energy.MaxCalls {
		t.Fatalf("decode: %v", err)
	}
}
