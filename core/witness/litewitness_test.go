package witness

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/witness/litewitnesstest"
)

// Interoperability with a witness written elsewhere: torchwood's
// litewitness, run as its own process. It answers the same protocol
// steps as joule's witness (TestServerProtocol), but for an unknown
// origin, which it answers 403 "unknown log" where the spec says 404;
// its cosignatures verify with the key it prints, parsed by NewVerifier;
// and the client's 409 dance, stale checkpoints and forks come out as
// they do against joule's own witness.
func TestLitewitnessProtocol(t *testing.T) {
	l := newMemLog(t)
	lw := litewitnesstest.Start(t, "litewitness.test/w1", l.origin, l.vkey)
	lwKey, err := NewVerifier(lw.VKey)
	if err != nil {
		t.Fatalf("litewitness's key %q: %v", lw.VKey, err)
	}
	runSteps(t, lw.URL, lwKey, l, protocolSteps(http.StatusForbidden))
	if t.Failed() {
		t.Log(lw.Log())
	}
}

func TestLitewitnessClient(t *testing.T) {
	ctx := context.Background()
	l := newMemLog(t)
	lw := litewitnesstest.Start(t, "litewitness.test/w1", l.origin, l.vkey)
	c, err := NewClient(lw.URL, lw.VKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.append(6)
	// The first checkpoint, then one with the witness's size unknown to
	// the client (409, then the proof from the size it names).
	for _, n := range []int64{2, 6} {
		lines, err := c.Cosign(ctx, l.checkpoint(n), n, 0, l.prover(n))
		if err != nil {
			t.Fatalf("size %d: %v\n%s", n, err, lw.Log())
		}
		cp, err := store.OpenCosigned(append(l.checkpoint(n), lines...), l.origin, mustVerifier(t, l.vkey), key(t, lw.VKey))
		if err != nil || cp.Size != n {
			t.Fatalf("size %d: litewitness's cosignature: %+v %v", n, cp, err)
		}
	}
	// A checkpoint older than what it cosigned.
	var ahead *store.AheadError
	if _, err := c.Cosign(ctx, l.checkpoint(4), 4, 2, l.prover(4)); !errors.As(err, &ahead) || ahead.Known != 6 {
		t.Fatalf("stale checkpoint: %v", err)
	}
	// A log of the same key that is not an extension of what it cosigned.
	fork := newMemLog(t)
	fork.signer, fork.vkey, fork.salt = l.signer, l.vkey, " forked"
	fork.append(9)
	if _, err := c.Cosign(ctx, fork.checkpoint(9), 9, 6, fork.prover(9)); !errors.Is(err, store.ErrRolledBack) {
		t.Fatalf("fork: %v", err)
	}
	// A log it does not know: litewitness's 403 "unknown log".
	other := newMemLog(t)
	other.origin = "joule receipts log nobody"
	other.append(1)
	if _, err := c.Cosign(ctx, other.checkpoint(1), 1, 0, other.prover(1)); !errors.Is(err, ErrUnknownLog) {
		t.Fatalf("unknown log: %v", err)
	}
	// Down: unreachable, and back: cosigns again from where it was.
	lw.Stop()
	l.append(1)
	if _, err := c.Cosign(ctx, l.checkpoint(7), 7, 6, l.prover(7)); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("stopped witness: %v", err)
	}
	lw.Restart()
	if _, err := c.Cosign(ctx, l.checkpoint(7), 7, 6, l.prover(7)); err != nil {
		t.Fatalf("restarted witness: %v\n%s", err, lw.Log())
	}
}

func key(t testing.TB, vkey string) *Verifier {
	t.Helper()
	v, err := NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
