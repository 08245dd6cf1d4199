package gate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
)

// TestOpenedGrantsFollowTrust: a grant verified once is not verified again,
// but only while its issuer stays trusted with the same key; revocation is
// read from the store on every load.
func TestOpenedGrantsFollowTrust(t *testing.T) {
	g, _ := storeGate(t, liveGrant(), nil)
	ctx := context.Background()
	id, err := g.ActiveID(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	first, err := g.LoadChain(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	again, err := g.LoadChain(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if first[0] != again[0] {
		t.Error("the same envelope was verified again")
	}

	// Run concurrently, as a resident server does (with -race).
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := g.LoadChain(ctx, id); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()

	trusted := g.Trust
	var name string
	for n := range trusted {
		name = n
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	g.Trust = grant.Trust{name: core.PublicKey(other)}
	if _, err := g.LoadChain(ctx, id); err == nil {
		t.Error("a grant loaded once stayed valid after its issuer's key changed")
	}
	g.Trust = grant.Trust{}
	if _, err := g.LoadChain(ctx, id); err == nil {
		t.Error("a grant loaded once stayed valid after its issuer was no longer trusted")
	}
	g.Trust = trusted
	if _, err := g.LoadChain(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := g.Revoke(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := g.LoadChain(ctx, id); err == nil {
		t.Error("a revoked grant loaded")
	}
}
