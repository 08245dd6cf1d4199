package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"lukechampine.com/blake3"
)

func TestSealDebits(t *testing.T) {
	errBuild := errors.New("signer offline")
	tests := []struct {
		name      string
		debit     []string
		amount    uint64
		keep      bool
		buildErr  error
		wantDebit error // what Build sees
		wantErr   error // what Seal returns
		wantSpent map[string]uint64
	}{
		{"allow debits every link", []string{"leaf", "root"}, 40, true, nil, nil, nil, map[string]uint64{"leaf": 40, "root": 40}},
		{"exact budget", []string{"leaf"}, 100, true, nil, nil, nil, map[string]uint64{"leaf": 100, "root": 0}},
		{"deny keeps no debit", []string{"leaf", "root"}, 40, false, nil, nil, nil, map[string]uint64{"leaf": 0, "root": 0}},
		{"over leaf budget", []string{"leaf", "root"}, 101, true, nil, &BudgetError{"leaf", 100, 101}, nil, map[string]uint64{"leaf": 0, "root": 0}},
		{"revoked link", []string{"leaf", "revoked"}, 1, true, nil, ErrRevoked, nil, map[string]uint64{"leaf": 0}},
		{"missing link", []string{"leaf", "ghost"}, 1, true, nil, ErrNotFound, nil, map[string]uint64{"leaf": 0}},
		{"no debit", nil, 5, true, nil, nil, nil, map[string]uint64{"leaf": 0, "root": 0}},
		{"build error writes nothing", []string{"leaf"}, 10, true, errBuild, nil, errBuild, map[string]uint64{"leaf": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			ctx := context.Background()
			putGrant(t, s, "root", "", 100)
			putGrant(t, s, "leaf", "root", 100)
			putGrant(t, s, "revoked", "", 100)
			if err := s.Revoke(ctx, "revoked"); err != nil {
				t.Fatal(err)
			}
			var sawDebit error
			var sawPos Position
			e, err := s.Seal(ctx, SealRequest{
				Session: "sess", Debit: tt.debit, AmountUJ: tt.amount,
				Build: func(pos Position, debitErr error) ([]byte, bool, error) {
					sawDebit, sawPos = debitErr, pos
					return envelopeFor(pos, tt.name), tt.keep, tt.buildErr
				},
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Seal error %v, want %v", err, tt.wantErr)
			}
			switch want := tt.wantDebit.(type) {
			case nil:
				if sawDebit != nil {
					t.Errorf("Build saw debit error %v, want nil", sawDebit)
				}
			case *BudgetError:
				var be *BudgetError
				if !errors.As(sawDebit, &be) || *be != *want {
					t.Errorf("Build saw %v, want %v", sawDebit, want)
				}
			default:
				if !errors.Is(sawDebit, want) {
					t.Errorf("Build saw %v, want %v", sawDebit, want)
				}
			}
			for g, want := range tt.wantSpent {
				rec, err := s.Grant(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				if rec.SpentUJ != want {
					t.Errorf("grant %s spent %d, want %d", g, rec.SpentUJ, want)
				}
			}
			entries := checkConsistent(t, s)
			if tt.wantErr != nil {
				for _, x := range entries {
					if x.Session == "sess" {
						t.Fatalf("failed seal left entry %+v", x.Position)
					}
				}
				return
			}
			if e.Position != sawPos || !bytes.Equal(e.Envelope, envelopeFor(sawPos, tt.name)) || e.Hash != blake3.Sum256(e.Envelope) {
				t.Errorf("entry %+v does not match what Build made at %+v", e.Position, sawPos)
			}
		})
	}
}

func TestSealOverRootBudget(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	putGrant(t, s, "root", "", 100)
	putGrant(t, s, "a", "root", 100)
	putGrant(t, s, "b", "root", 100)
	seal(t, s, "s", []string{"a", "root"}, 70, "first")
	var saw error
	_, err := s.Seal(ctx, SealRequest{Session: "s", Debit: []string{"b", "root"}, AmountUJ: 40,
		Build: func(pos Position, debitErr error) ([]byte, bool, error) {
			saw = debitErr
			return envelopeFor(pos, "second"), true, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	var be *BudgetError
	if !errors.As(saw, &be) || *be != (BudgetError{GrantID: "root", RemainingUJ: 30, NeededUJ: 40}) {
		t.Fatalf("Build saw %v, want root with 30 remaining", saw)
	}
	if g, _ := s.Grant(ctx, "b"); g.SpentUJ != 0 {
		t.Errorf("b spent %d after a failed chain debit; want all or nothing", g.SpentUJ)
	}
	want := `grant "root" budget exhausted: 30 µJ remaining, 40 µJ needed`
	if be.Error() != want {
		t.Errorf("BudgetError text %q, want %q", be.Error(), want)
	}
}

func TestSealRejectsBadRequests(t *testing.T) {
	s := openTest(t)
	putGrant(t, s, "g", "", 10)
	seal(t, s, "s", nil, 0, "first")
	build := allowBuild("x")
	tests := []struct {
		name string
		req  SealRequest
		want string
	}{
		{"empty session", SealRequest{Build: build}, "empty session id"},
		{"nil build", SealRequest{Session: "s"}, "nil Build"},
		{"amount too large", SealRequest{Session: "s", AmountUJ: math.MaxInt64 + 1, Build: build}, "exceeds the store limit"},
		{"duplicate grant", SealRequest{Session: "s", Debit: []string{"g", "g"}, Build: build}, `grant "g" listed twice`},
		{"bad grant id", SealRequest{Session: "s", Debit: []string{""}, Build: build}, "empty grant id"},
		{"empty envelope", SealRequest{Session: "s", Build: func(Position, error) ([]byte, bool, error) { return nil, false, nil }}, "empty envelope"},
		{"huge envelope", SealRequest{Session: "s", Build: func(Position, error) ([]byte, bool, error) {
			return make([]byte, MaxEnvelopeSize+1), false, nil
		}}, "limit"},
		{"replayed envelope", SealRequest{Session: "s", Build: func(Position, error) ([]byte, bool, error) {
			return envelopeFor(Position{Session: "s", Seq: 1}, "allow:first"), true, nil
		}}, "already sealed at log index 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Seal(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Seal error %v, want %q", err, tt.want)
			}
		})
	}
	if n, _ := s.LogSize(context.Background()); n != 1 {
		t.Errorf("log size %d after rejected seals, want 1", n)
	}
	checkConsistent(t, s)
}

func TestSealChainsAndReads(t *testing.T) {
	s := openTest(t, WithClock(fixedClock()))
	ctx := context.Background()
	var all []Entry
	for i := range 9 {
		all = append(all, seal(t, s, []string{"alpha", "beta", "gamma"}[i%3], nil, 0, "r"))
	}
	for i, e := range all {
		if e.Index != int64(i) || e.Seq != uint64(i/3+1) {
			t.Errorf("entry %d got index %d seq %d", i, e.Index, e.Seq)
		}
		byIdx, err := s.EntryAt(ctx, e.Index)
		if err != nil {
			t.Fatal(err)
		}
		byHash, err := s.EntryByHash(ctx, e.Hash)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []Entry{byIdx, byHash} {
			if got.Position != e.Position || got.Hash != e.Hash || !bytes.Equal(got.Envelope, e.Envelope) || !got.Time.Equal(e.Time) {
				t.Errorf("read %+v, sealed %+v", got, e)
			}
		}
	}
	infos, err := s.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 3 || infos[0].ID != "alpha" || infos[2].ID != "gamma" {
		t.Fatalf("Sessions = %+v", infos)
	}
	if infos[0].Count != 3 || infos[0].Head != all[6].Hash || !infos[0].First.Equal(all[0].Time) || !infos[0].Last.Equal(all[6].Time) {
		t.Errorf("alpha info %+v", infos[0])
	}
	checkConsistent(t, s)

	notFound := []struct {
		name string
		err  error
	}{
		{"EntryAt past the end", func() error { _, err := s.EntryAt(ctx, 9); return err }()},
		{"EntryAt negative", func() error { _, err := s.EntryAt(ctx, -1); return err }()},
		{"EntryByHash unknown", func() error { _, err := s.EntryByHash(ctx, [32]byte{1}); return err }()},
		{"Session unknown", func() error { _, err := s.Session(ctx, "delta"); return err }()},
	}
	for _, tt := range notFound {
		if !errors.Is(tt.err, ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", tt.name, tt.err)
		}
	}
}

// TestSealConcurrentGoroutines seals from many goroutines through two
// Store values on one file: the budget pays for exactly paid seals.
func TestSealConcurrentGoroutines(t *testing.T) {
	// A generous lock timeout: this test is about correctness under
	// contention, and a loaded machine must not turn it into ErrLocked.
	s1 := openTest(t, WithLockTimeout(time.Minute))
	s2, err := Open(s1.Path(), WithLockTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	const (
		workers = 8
		each    = 25
		paid    = 60
		amount  = 10
	)
	putGrant(t, s1, "g", "", paid*amount)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		kept int
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*Store{s1, s2}[w%2]
			for i := range each {
				var k bool
				_, err := s.Seal(context.Background(), SealRequest{
					Session: []string{"x", "y", "z"}[(w+i)%3], Debit: []string{"g"}, AmountUJ: amount,
					Build: func(pos Position, debitErr error) ([]byte, bool, error) {
						k = debitErr == nil
						return envelopeFor(pos, "c"), k, nil
					},
				})
				if err != nil {
					t.Error(err)
					return
				}
				if k {
					mu.Lock()
					kept++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if kept != paid {
		t.Errorf("%d debits kept, budget pays for %d", kept, paid)
	}
	g, err := s1.Grant(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	if g.SpentUJ != paid*amount {
		t.Errorf("spent %d, want %d", g.SpentUJ, paid*amount)
	}
	if entries := checkConsistent(t, s1); len(entries) != workers*each {
		t.Errorf("%d entries, want %d", len(entries), workers*each)
	}
}

// TestGroupCommitIsolatesFailures: concurrent seals share transactions;
// one whose Build fails writes nothing and takes nothing from the others,
// debits stay exact, and every chain stays gapless.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := openTest(t)
	putGrant(t, s, "g", "", 30)
	ctx := context.Background()
	const n = 96
	var wg sync.WaitGroup
	errs := make([]error, n)
	kept := make([]bool, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Seal(ctx, SealRequest{Session: fmt.Sprintf("s%d", i%3), Debit: []string{"g"}, AmountUJ: 1,
				Build: func(pos Position, debitErr error) ([]byte, bool, error) {
					if i%4 == 0 {
						return nil, false, fmt.Errorf("build %d fails", i)
					}
					kept[i] = debitErr == nil
					return envelopeFor(pos, fmt.Sprint(i)), debitErr == nil, nil
				}})
		}()
	}
	wg.Wait()
	sealed, debited := 0, 0
	for i, err := range errs {
		switch {
		case i%4 == 0:
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("build %d fails", i)) {
				t.Errorf("seal %d: %v, want its own build error", i, err)
			}
		case err != nil:
			t.Errorf("seal %d: %v", i, err)
		default:
			sealed++
			if kept[i] {
				debited++
			}
		}
	}
	if sealed != n-n/4 || debited != 30 {
		t.Errorf("sealed %d (want %d), debited %d (want 30)", sealed, n-n/4, debited)
	}
	if g, _ := s.Grant(ctx, "g"); g.SpentUJ != 30 {
		t.Errorf("spent %d, want 30", g.SpentUJ)
	}
	total := 0
	for k := 0; k < 3; k++ {
		entries, err := s.Session(ctx, fmt.Sprintf("s%d", k))
		if err != nil {
			t.Fatal(err)
		}
		for j, e := range entries {
			if e.Seq != uint64(j+1) {
				t.Fatalf("session s%d: entry %d has seq %d", k, j, e.Seq)
			}
		}
		total += len(entries)
	}
	if total != sealed {
		t.Errorf("%d entries in the store, %d seals reported", total, sealed)
	}
	checkConsistent(t, s)
}
