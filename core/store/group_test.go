package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGroupCommit seals from many goroutines with a Build slow enough that
// Seals queue and share transactions: a Build that fails, and an envelope
// sealed twice, fail alone; every other decision commits with its own
// position and debit outcome, and the budget pays for exactly paid.
func TestGroupCommit(t *testing.T) { forBackends(t, testGroupCommit) }

var errBuildRefused = errors.New("build refused")

func testGroupCommit(t *testing.T, b backend) {
	s := b.open(t, WithLockTimeout(time.Minute))
	ctx := context.Background()
	const (
		workers = 16
		each    = 10
		amount  = 10
		paid    = 50
	)
	putGrant(t, s, "g", "", paid*amount)
	dup := seal(t, s, "dup", nil, 0, "x")
	type outcome struct {
		e    Entry
		kept bool
		err  error
		kind int // 0 normal, 1 failing build, 2 duplicate envelope
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				kind := 0
				switch (w*each + i) % 7 {
				case 3:
					kind = 1
				case 5:
					kind = 2
				}
				var kept bool
				e, err := s.Seal(ctx, SealRequest{Session: fmt.Sprintf("s%d", w%5), Debit: []string{"g"}, AmountUJ: amount,
					Build: func(pos Position, debitErr error) ([]byte, bool, error) {
						time.Sleep(200 * time.Microsecond) // long enough for others to queue
						switch kind {
						case 1:
							return nil, false, errBuildRefused
						case 2:
							return dup.Envelope, true, nil
						}
						kept = debitErr == nil
						return envelopeFor(pos, fmt.Sprintf("w%d/%d", w, i)), kept, nil
					}})
				mu.Lock()
				outcomes = append(outcomes, outcome{e, kept, err, kind})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	kept, sealed := 0, 0
	for _, o := range outcomes {
		switch o.kind {
		case 1:
			if !errors.Is(o.err, errBuildRefused) {
				t.Errorf("failing Build: %v, want its error", o.err)
			}
		case 2:
			if !errors.Is(o.err, ErrConflict) {
				t.Errorf("duplicate envelope: %v, want ErrConflict", o.err)
			}
		default:
			if o.err != nil {
				t.Fatalf("seal: %v", o.err)
			}
			sealed++
			if o.kept {
				kept++
			}
		}
	}
	if kept != paid {
		t.Errorf("%d debits kept, the budget pays for exactly %d", kept, paid)
	}
	entries := checkConsistent(t, s)
	if len(entries) != sealed+1 {
		t.Errorf("log holds %d entries, %d seals succeeded (+1 before)", len(entries), sealed)
	}
	for _, o := range outcomes {
		if o.err == nil && entries[o.e.Index].Hash != o.e.Hash {
			t.Errorf("entry %d is not the one its Seal returned", o.e.Index)
		}
	}
	g, err := s.Grant(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if g.SpentUJ != paid*amount {
		t.Errorf("spent %d, want %d", g.SpentUJ, paid*amount)
	}
	if s.group.grouped.Load() == 0 {
		t.Error("no Seal shared a transaction: group commit did not happen")
	}
	t.Logf("%d of %d seals committed in shared transactions", s.group.grouped.Load(), workers*each)
}

// TestBuildPanic: a Build that panics fails its own Seal with an error and
// leaves the store, and the group queue, working.
func TestBuildPanic(t *testing.T) {
	s := backends[0].open(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Seal(context.Background(), SealRequest{Session: "p", Build: func(pos Position, _ error) ([]byte, bool, error) {
				if i%2 == 0 {
					panic("boom")
				}
				return envelopeFor(pos, fmt.Sprint(i)), false, nil
			}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 0 && (err == nil || !strings.Contains(err.Error(), "panic: boom")) {
			t.Errorf("seal %d with a panicking Build: %v", i, err)
		}
		if i%2 == 1 && err != nil {
			t.Errorf("seal %d: %v", i, err)
		}
	}
	if es := checkConsistent(t, s); len(es) != 4 {
		t.Errorf("%d entries, want 4", len(es))
	}
	seal(t, s, "p", nil, 0, "after")
}

// TestSealBatch: SealBatch gives each decision the outcome it gets from
// Seal called once per decision in the same order, on a twin store: the
// same positions and envelopes, the same debits kept and refused, an
// invalid request, a failing Build and a duplicate envelope failing alone,
// and more decisions than one transaction takes.
func TestSealBatch(t *testing.T) { forBackends(t, testSealBatch) }

func testSealBatch(t *testing.T, b backend) {
	ctx := context.Background()
	const n = MaxSealBatch + 40
	stores := [2]*Store{b.open(t), b.open(t)}
	var dups [2]Entry
	for k, s := range stores {
		putGrant(t, s, "g", "", 100*7)
		dups[k] = seal(t, s, "dup", nil, 0, "x")
	}
	reqs := func(k int) []SealRequest {
		rs := make([]SealRequest, n)
		for i := range rs {
			rs[i] = SealRequest{Session: fmt.Sprintf("s%d", i%3), Debit: []string{"g"}, AmountUJ: 7, Build: allowBuild(fmt.Sprint(i))}
			switch i % 50 {
			case 11:
				rs[i].Session = "" // invalid
			case 23:
				rs[i].Build = func(Position, error) ([]byte, bool, error) { return nil, false, errBuildRefused }
			case 37:
				dup := dups[k].Envelope
				rs[i].Build = func(Position, error) ([]byte, bool, error) { return dup, true, nil }
			}
		}
		return rs
	}
	entries, errs := stores[0].SealBatch(ctx, reqs(0))
	for i, req := range reqs(1) {
		want, wantErr := stores[1].Seal(ctx, req)
		if (errs[i] == nil) != (wantErr == nil) || errs[i] != nil && errs[i].Error() != wantErr.Error() {
			t.Fatalf("decision %d: SealBatch error %v, Seal error %v", i, errs[i], wantErr)
		}
		if wantErr == nil && (entries[i].Position != want.Position || string(entries[i].Envelope) != string(want.Envelope)) {
			t.Fatalf("decision %d: SealBatch sealed %+v %q, Seal %+v %q", i, entries[i].Position, entries[i].Envelope, want.Position, want.Envelope)
		}
	}
	for _, i := range []int{11, 23, 37} {
		if errs[i] == nil {
			t.Errorf("decision %d sealed, want its error", i)
		}
	}
	for k, s := range stores {
		g, err := s.Grant(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		if g.SpentUJ != 100*7 {
			t.Errorf("store %d: spent %d, want the whole budget %d", k, g.SpentUJ, 100*7)
		}
		checkConsistent(t, s)
	}
	if stores[0].group.grouped.Load() < MaxSealBatch {
		t.Errorf("%d decisions shared a transaction, want at least %d", stores[0].group.grouped.Load(), MaxSealBatch)
	}
}
