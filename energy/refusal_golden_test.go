package energy_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/receipts/receiptstest"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestRefusalGolden pins the payload of the decision receipt SealRefusal
// seals, byte for byte but for its nonce (drawn fresh each time).
func TestRefusalGolden(t *testing.T) {
	ctx := context.Background()
	seed := core.Sum([]byte("energy golden"))
	key := ed25519.NewKeyFromSeed(seed[:])
	sealer, err := core.NewSealer("energy.golden", key)
	if err != nil {
		t.Fatal(err)
	}
	verifier, _ := core.NewVerifier("energy.golden", key.Public().(ed25519.PublicKey))
	st, err := store.Open(filepath.Join(t.TempDir(), "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rec := &energy.Recorder{Store: st, Sealer: sealer}
	when := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	for _, ref := range []energy.Refusal{
		{Session: "budget", Path: "/v1/messages", Model: "claude-x", Code: "budget-exceeded", Reason: "grant g has 1 mJ left",
			Grants: []string{"g1", "g2"}, Body: []byte(`{"model":"claude-x"}`), Time: when},
		{Session: "no-grant", Path: "/v1/chat/completions", Model: "gpt-x", Code: "no-active-grant", Reason: "no active grant", Time: when},
		// A reason cut at MaxNote inside a two-byte rune, a summary at 200.
		{Session: "long", Path: "/v1/messages", Model: strings.Repeat("m", 300), Code: "budget-exceeded",
			Reason: "a" + strings.Repeat("é", 1000), Body: []byte("{}"), Time: when},
	} {
		if _, err := rec.SealRefusal(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][]byte{}
	for _, session := range []string{"budget", "no-grant", "long"} {
		entries, err := st.Session(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			payload, err := verifier.Open(e.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			a, err := receipts.Decode(payload)
			if err != nil {
				t.Fatal(err)
			}
			nonce := []byte(a.Decision.Nonce)
			if bytes.Count(payload, nonce) != 1 {
				t.Fatalf("nonce %s appears %d times", nonce, bytes.Count(payload, nonce))
			}
			got[fmt.Sprintf("%s/%d", session, e.Seq)] = bytes.Replace(payload, nonce, bytes.Repeat([]byte("0"), 32), 1)
		}
	}
	receiptstest.CheckGolden(t, filepath.Join("testdata", "refusal-receipts.golden"), got, *update)
}
