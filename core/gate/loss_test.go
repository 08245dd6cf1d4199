package gate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// TestAcceptLoss rolls a witnessed store back (a fresh store under the
// same witness file), then accepts the loss: one receipt in LossSession
// that records both logs and the complaint, the replaced witness kept,
// and the store sealing again.
func TestAcceptLoss(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, "loss.test")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	nv, _ := note.NewVerifier(vkey)
	open := func(name string) *store.Store {
		st, err := store.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		w := &store.Witness{Origin: "joule receipts log loss.test", Signer: signer, Verifier: nv,
			Files: []string{filepath.Join(dir, "checkpoint")}, NoSync: true}
		if err := st.SetWitness(w); err != nil {
			t.Fatal(err)
		}
		return st
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	sealer, _ := core.NewSealer("loss.test", key)
	verifier, _ := core.NewVerifier("loss.test", key.Public().(ed25519.PublicKey))

	first := &Gate{Store: open("first.db"), Sealer: sealer}
	for i := 0; i < 3; i++ {
		if _, err := first.SealRecord(ctx, Record{Session: "s", Tool: "joule test", Code: "noted"}); err != nil {
			t.Fatal(err)
		}
	}
	g := &Gate{Store: open("rolled-back.db"), Sealer: sealer}
	if _, err := g.SealRecord(ctx, Record{Session: "s", Tool: "joule test", Code: "noted"}); !errors.Is(err, store.ErrRolledBack) {
		t.Fatalf("seal on the rolled-back store: %v, want ErrRolledBack", err)
	}
	_, _, found := g.Store.WitnessState(ctx)
	if !errors.Is(found, store.ErrRolledBack) {
		t.Fatalf("WitnessState: %v", found)
	}

	loss, err := g.AcceptLoss(ctx, found, "/home/loss")
	if err != nil {
		t.Fatal(err)
	}
	if loss.Entry.Session != LossSession || loss.Entry.Seq != 1 || len(loss.Kept) != 1 {
		t.Fatalf("accepted: %+v", loss)
	}
	a, err := receipts.Open(verifier, "loss.test", loss.Entry.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	d := a.Decision
	switch {
	case d == nil:
		t.Fatal("not a decision receipt")
	case d.Code != CodeLossAccepted || d.Decision != receipts.Allow || d.Tool != "joule store accept-loss" || d.Cwd != "/home/loss":
		t.Errorf("receipt %+v", d)
	case d.Summary != loss.Summary || !strings.Contains(d.Summary, "witnessed log size 3") || !strings.Contains(d.Summary, "store now log size 0"):
		t.Errorf("summary %q, returned %q", d.Summary, loss.Summary)
	case d.Reason != found.Error():
		t.Errorf("reason %q, want the complaint %q", d.Reason, found.Error())
	case d.InputDigest == (core.ID{}):
		t.Error("no digest of the witnessed checkpoint")
	}
	if _, err := g.SealRecord(ctx, Record{Session: "s", Tool: "joule test", Code: "noted"}); err != nil {
		t.Fatalf("seal after the loss was accepted: %v", err)
	}
}
