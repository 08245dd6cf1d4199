package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// heldSigner signs like its signer, but once hold is set every Sign
// waits until release is closed.
type heldSigner struct {
	note.Signer
	hold, counting atomic.Bool
	release        chan struct{}
	waiting        atomic.Int64 // Signs that waited for release
	signs          atomic.Int64 // Signs since hold was set
}

func (h *heldSigner) Sign(msg []byte) ([]byte, error) {
	if h.counting.Load() {
		h.signs.Add(1)
	}
	if h.hold.Load() {
		h.waiting.Add(1)
		<-h.release
	}
	return h.Signer.Sign(msg)
}

// A Deferred witness does not hold up Seal: a seal returns while its
// checkpoint's signature is still pending, the checkpoints queued
// meanwhile are coalesced, and FlushWitness leaves the witness at the end
// of the log. While it lags, the store still verifies against it.
func TestWitnessDeferred(t *testing.T) { forBackends(t, testWitnessDeferred) }

func testWitnessDeferred(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	w := attachWitness(t, s, "")
	h := &heldSigner{Signer: w.Signer, release: make(chan struct{})}
	w.Signer, w.Deferred = h, true
	seal(t, s, "s", nil, 0, "first") // starts the witness, in the transaction
	s.FlushWitness()
	if cp := readWitness(t, w); cp == nil || cp.Size != 1 {
		t.Fatalf("witness after the first seal: %+v, want size 1", cp)
	}
	h.hold.Store(true)
	h.counting.Store(true)
	done := make(chan error, 1)
	go func() {
		var err error
		for i := range 20 {
			if err = trySeal(s, fmt.Sprintf("s%d", i%3)); err != nil {
				break
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("seals waited for the witness's signature")
	}
	for end := time.Now().Add(10 * time.Second); h.waiting.Load() == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := h.waiting.Load(); n != 1 {
		t.Errorf("%d checkpoints waiting to be signed, want 1", n)
	}
	if cp := readWitness(t, w); cp == nil || cp.Size != 1 {
		t.Fatalf("witness while its publish is held: %+v, want size 1", cp)
	}
	if _, _, err := s.WitnessState(ctx); err != nil {
		t.Fatalf("a lagging witness: %v", err)
	}
	h.hold.Store(false)
	close(h.release)
	s.FlushWitness()
	if n := h.signs.Load(); n < 1 || n > 2 {
		t.Errorf("20 seals signed %d checkpoints, want 1 or 2 (the ones queued behind a held one coalesced)", n)
	}
	root, err := s.TreeHash(ctx, 21)
	if err != nil {
		t.Fatal(err)
	}
	if cp := readWitness(t, w); cp == nil || cp.Size != 21 || cp.Root != root {
		t.Fatalf("witness after FlushWitness: %+v, want size 21 root %s", cp, root)
	}
	if _, _, err := s.WitnessState(ctx); err != nil {
		t.Fatal(err)
	}
}

// Close publishes what a Deferred witness queued.
func TestWitnessDeferredClose(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	w := attachWitness(t, s, dir)
	w.Deferred = true
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := trySeal(s, fmt.Sprintf("c%d", i%4)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if cp := readWitness(t, w); cp == nil || cp.Size != 16 {
		t.Fatalf("witness after Close: %+v, want size 16", cp)
	}
}
