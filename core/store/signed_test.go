package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// signedFacts is a GrantCheck over a fixed set of "verified" envelopes:
// the stand-in envelope of putGrant, "signed:" + id, signs the budget and
// parent given.
func signedFacts(facts map[string]SignedGrant) GrantCheck {
	return func(id string, signed []byte) (SignedGrant, error) {
		f, ok := facts[id]
		if !ok || string(signed) != "signed:"+id {
			return SignedGrant{}, errors.New("bad signature")
		}
		return f, nil
	}
}

// TestDecisionPathFaults edits a grant's columns and cached figures behind
// the store's back and checks that a debit and a reservation refuse to let
// it pay, with a *GrantFaultError naming it, while an untouched grant
// still pays; on both backends, alone and in a group.
func TestDecisionPathFaults(t *testing.T) {
	tests := []struct {
		name, sql, says string
		spend           bool // debit once before the edit
	}{
		{"budget raised", `UPDATE grants SET budget_uj = 1000000 WHERE id = 'g'`, "budget_uj column says 1000000 µJ, the signed grant 100 µJ", false},
		{"budget lowered", `UPDATE grants SET budget_uj = 0 WHERE id = 'g'`, "budget_uj column says 0 µJ", false},
		{"parent set", `UPDATE grants SET parent = 'other' WHERE id = 'g'`, `parent column says "other"`, false},
		{"envelope changed", `UPDATE grants SET signed = X'00' WHERE id = 'g'`, "does not verify", false},
		{"spent lowered", `UPDATE grants SET spent_uj = 0 WHERE id = 'g'`, "spent_uj says 0 µJ, its ledger's running total 40 µJ", true},
		{"spent raised", `UPDATE grants SET spent_uj = 41 WHERE id = 'g'`, "spent_uj says 41 µJ", true},
		{"last debit deleted", `DELETE FROM ledger WHERE grant_id = 'g'`, "its ledger's running total 0 µJ", true},
		{"running total lowered", `UPDATE ledger SET total_uj = 0 WHERE grant_id = 'g'`, "its ledger's running total 0 µJ", true},
		{"reserved lowered", `UPDATE grants SET reserved_uj = 0 WHERE id = 'g'`, "reserved_uj says 0 µJ, its open reservations hold 5 µJ", false},
	}
	forBackends(t, func(t *testing.T, be backend) {
		for _, tt := range tests {
			for _, group := range []bool{false, true} {
				name := tt.name + "/alone"
				if group {
					name = tt.name + "/group"
				}
				t.Run(name, func(t *testing.T) {
					ctx := context.Background()
					s := be.open(t)
					s.group.off = !group
					putGrant(t, s, "other", "", math.MaxInt64)
					putGrant(t, s, "g", "", 100)
					s.CheckGrantsWith(signedFacts(map[string]SignedGrant{"g": {BudgetUJ: 100}, "other": {BudgetUJ: math.MaxInt64}}))
					if _, err := s.Reserve(ctx, []string{"g"}, 5); err != nil {
						t.Fatal(err)
					}
					seal := func(grant string, amount uint64) (debitErr, err error) {
						_, err = s.Seal(ctx, SealRequest{Session: "s", Debit: []string{grant}, AmountUJ: amount,
							Build: func(pos Position, e error) ([]byte, bool, error) {
								debitErr = e
								return envelopeFor(pos, "x"), true, nil
							}})
						return debitErr, err
					}
					if tt.spend {
						if derr, err := seal("g", 40); derr != nil || err != nil {
							t.Fatal(derr, err)
						}
					}
					if _, err := rawExec(s, tt.sql); err != nil {
						t.Fatal(err)
					}
					derr, err := seal("g", 1)
					if err != nil {
						t.Fatal(err)
					}
					var fault *GrantFaultError
					if !errors.As(derr, &fault) || fault.GrantID != "g" || !strings.Contains(derr.Error(), tt.says) || !errors.Is(derr, ErrCorrupt) {
						t.Errorf("debit after the edit: %v, want a fault of grant g saying %q", derr, tt.says)
					}
					if _, err := s.Reserve(ctx, []string{"g"}, 1); !errors.As(err, &fault) || fault.GrantID != "g" {
						t.Errorf("reserve after the edit: %v, want a fault of grant g", err)
					}
					if derr, err := seal("other", 1); derr != nil || err != nil {
						t.Errorf("an untouched grant: %v %v", derr, err)
					}
					if strings.HasPrefix(tt.name, "budget") || strings.HasPrefix(tt.name, "parent") || strings.HasPrefix(tt.name, "envelope") {
						return
					}
					if err := s.Verify(ctx); !errors.Is(err, ErrCorrupt) {
						t.Errorf("Verify after the edit: %v", err)
					}
				})
			}
		}
	})
}

// TestDecisionPathConsistent: draws from a lease and debits of the same
// grant, sealed concurrently so that groups (and SQLite's batches) mix
// them, are never taken for a fault, and leave a store that verifies.
func TestDecisionPathConsistent(t *testing.T) {
	forBackends(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t, WithLockTimeout(time.Minute))
		putGrant(t, s, "g", "", 100000)
		s.CheckGrantsWith(signedFacts(map[string]SignedGrant{"g": {BudgetUJ: 100000}}))
		lease, err := s.Reserve(ctx, []string{"g"}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := SealRequest{Session: fmt.Sprintf("s%d", i%4), Build: func(pos Position, e error) ([]byte, bool, error) {
					if e != nil {
						t.Errorf("seal %d: %v", i, e)
					}
					return envelopeFor(pos, fmt.Sprint(i)), true, nil
				}}
				if i%2 == 0 {
					req.Draw = &Draw{Reservation: lease, ReleaseUJ: 3, ChargeUJ: 2}
				} else {
					req.Debit, req.AmountUJ = []string{"g"}, 7
				}
				if _, err := s.Seal(ctx, req); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		g, err := s.Grant(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		if g.SpentUJ != 32*2+32*7 || g.ReservedUJ != 1000-32*3 {
			t.Errorf("spent %d reserved %d", g.SpentUJ, g.ReservedUJ)
		}
	})
}

// TestMigrateRunningTotals: a version 1 store with a ledger gets each
// row's running total when it is opened, so its decisions and Verify pass.
func TestMigrateRunningTotals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "joule.db")
	db := rawDB(t, path)
	for _, q := range []string{migrations[0].sqlite, "PRAGMA user_version = 1", fmt.Sprintf("PRAGMA application_id = %d", applicationID),
		`INSERT INTO grants (id, signed, budget_uj, spent_uj, created_ns) VALUES ('a', X'01', 100, 30, 0), ('b', X'02', 100, 5, 0)`,
		`INSERT INTO ledger (grant_id, amount_uj, reservation, created_ns) VALUES ('a', 10, 1, 0), ('b', 5, 1, 0), ('a', 20, 2, 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ledger, err := s.AllLedger(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var totals []uint64
	for _, le := range ledger {
		totals = append(totals, le.TotalUJ)
	}
	if fmt.Sprint(totals) != "[10 5 30]" {
		t.Errorf("running totals %v, want [10 5 30]", totals)
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seal(context.Background(), SealRequest{Session: "s", Debit: []string{"a"}, AmountUJ: 1,
		Build: func(pos Position, e error) ([]byte, bool, error) {
			if e != nil {
				t.Errorf("debit after migration: %v", e)
			}
			return envelopeFor(pos, "m"), true, nil
		}}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDecisionChecks is what checkDecidable adds to every decision
// path per debited grant, against a grant with a 10 000-row ledger and a
// cached GrantCheck: compare with BenchmarkSeal's time per seal.
func BenchmarkDecisionChecks(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			s := be.open(b)
			putGrant(b, s, "g", "", math.MaxInt64)
			s.CheckGrantsWith(signedFacts(map[string]SignedGrant{"g": {BudgetUJ: math.MaxInt64}}))
			var wg sync.WaitGroup
			for i := range 10000 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := s.Seal(ctx, SealRequest{Session: fmt.Sprintf("s%d", i%8), Debit: []string{"g"}, AmountUJ: 1,
						Build: func(pos Position, _ error) ([]byte, bool, error) { return envelopeFor(pos, "b"), true, nil }}); err != nil {
						b.Error(err)
					}
				}()
				if i%64 == 63 {
					wg.Wait()
				}
			}
			wg.Wait()
			g, err := s.Grant(ctx, "g")
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := s.checkDecidable(ctx, s.conn(), g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
