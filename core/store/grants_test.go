package store

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPutGrant(t *testing.T) { forBackends(t, testPutGrant) }

func testPutGrant(t *testing.T, b backend) {
	s := b.open(t, WithClock(fixedClock()))
	ctx := context.Background()
	putGrant(t, s, "root", "", 1000)
	tests := []struct {
		name    string
		rec     GrantRecord
		wantErr error
		wantMsg string
	}{
		{"new child", GrantRecord{ID: "child", Parent: "root", Signed: []byte("c"), BudgetUJ: 100}, nil, ""},
		{"same again is a no-op", GrantRecord{ID: "child", Parent: "root", Signed: []byte("c"), BudgetUJ: 100}, nil, ""},
		{"different bytes", GrantRecord{ID: "child", Parent: "root", Signed: []byte("d"), BudgetUJ: 100}, ErrConflict, "a different grant has this id"},
		{"different budget", GrantRecord{ID: "child", Parent: "root", Signed: []byte("c"), BudgetUJ: 101}, ErrConflict, ""},
		{"different parent", GrantRecord{ID: "child", Signed: []byte("c"), BudgetUJ: 100}, ErrConflict, ""},
		{"missing parent", GrantRecord{ID: "orphan", Parent: "nobody", Signed: []byte("o"), BudgetUJ: 1}, ErrNotFound, `grant "nobody"`},
		{"own parent", GrantRecord{ID: "self", Parent: "self", Signed: []byte("s"), BudgetUJ: 1}, nil, "its own parent"},
		{"empty id", GrantRecord{Signed: []byte("x")}, nil, "empty grant id"},
		{"empty signed", GrantRecord{ID: "x"}, nil, "empty signed grant"},
		{"budget too large", GrantRecord{ID: "x", Signed: []byte("x"), BudgetUJ: math.MaxInt64 + 1}, nil, "exceeds the store limit"},
		{"max budget", GrantRecord{ID: "max", Signed: []byte("x"), BudgetUJ: math.MaxInt64}, nil, ""},
		{"spent set", GrantRecord{ID: "x", Signed: []byte("x"), SpentUJ: 1}, nil, "must be zero"},
		{"revoked set", GrantRecord{ID: "x", Signed: []byte("x"), Revoked: true}, nil, "must be zero"},
		{"control char id", GrantRecord{ID: "a\tb", Signed: []byte("x")}, nil, "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.PutGrant(ctx, tt.rec)
			if tt.wantErr == nil && tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Grant(ctx, tt.rec.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Parent != tt.rec.Parent || string(got.Signed) != string(tt.rec.Signed) || got.BudgetUJ != tt.rec.BudgetUJ {
					t.Errorf("stored %+v, put %+v", got, tt.rec)
				}
				return
			}
			if err == nil {
				t.Fatal("PutGrant succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestGrantsAndRevoke(t *testing.T) { forBackends(t, testGrantsAndRevoke) }

func testGrantsAndRevoke(t *testing.T, b backend) {
	clock := fixedClock()
	s := b.open(t, WithClock(clock))
	ctx := context.Background()
	created := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := s.PutGrant(ctx, GrantRecord{ID: "b-old", Signed: []byte("x"), BudgetUJ: 5, Created: created}); err != nil {
		t.Fatal(err)
	}
	putGrant(t, s, "a-new", "", 7)
	gs, err := s.Grants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].ID != "b-old" || gs[1].ID != "a-new" {
		t.Fatalf("Grants = %+v, want b-old then a-new (by creation)", gs)
	}
	if !gs[0].Created.Equal(created) {
		t.Errorf("created %v, want the given %v", gs[0].Created, created)
	}
	if gs[1].Created.IsZero() {
		t.Error("zero Created was not stamped")
	}

	tests := []struct {
		id      string
		wantErr error
	}{
		{"a-new", nil},
		{"a-new", nil}, // twice is a no-op
		{"missing", ErrNotFound},
	}
	for _, tt := range tests {
		if err := s.Revoke(ctx, tt.id); !errors.Is(err, tt.wantErr) {
			t.Errorf("Revoke(%q) = %v, want %v", tt.id, err, tt.wantErr)
		}
	}
	g, err := s.Grant(ctx, "a-new")
	if err != nil || !g.Revoked {
		t.Fatalf("after revoke: %+v, %v", g, err)
	}
	if _, err := s.Grant(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Grant(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.Grant(ctx, ""); err == nil {
		t.Error("Grant(\"\") succeeded")
	}
}

func TestRemainingUJ(t *testing.T) {
	tests := []struct {
		g    GrantRecord
		want uint64
	}{
		{GrantRecord{BudgetUJ: 10}, 10},
		{GrantRecord{BudgetUJ: 10, SpentUJ: 3, ReservedUJ: 4}, 3},
		{GrantRecord{BudgetUJ: 10, SpentUJ: 6, ReservedUJ: 4}, 0},
		{GrantRecord{BudgetUJ: 10, SpentUJ: 12}, 0}, // overspent by a settle
		{GrantRecord{BudgetUJ: math.MaxInt64, SpentUJ: math.MaxInt64, ReservedUJ: math.MaxInt64}, 0},
	}
	for _, tt := range tests {
		if got := tt.g.RemainingUJ(); got != tt.want {
			t.Errorf("%+v.RemainingUJ() = %d, want %d", tt.g, got, tt.want)
		}
	}
}

func TestRemainingUnder(t *testing.T) {
	// The signed budget rules: a budget_uj column raised to 1000 pays no more.
	rec := GrantRecord{BudgetUJ: 1000, SpentUJ: 3, ReservedUJ: 4}
	for _, tt := range []struct{ signed, want uint64 }{{10, 3}, {5, 0}, {1000, 993}} {
		if got := rec.RemainingUnder(tt.signed); got != tt.want {
			t.Errorf("RemainingUnder(%d) = %d, want %d", tt.signed, got, tt.want)
		}
	}
}

func TestColumnFault(t *testing.T) {
	rec := GrantRecord{ID: "g1", Parent: "p", BudgetUJ: 10}
	for _, tt := range []struct {
		name       string
		envelopeID string
		signed     SignedGrant
		want       string
	}{
		{"agree", "g1", SignedGrant{Parent: "p", BudgetUJ: 10}, ""},
		{"another grant's envelope", "g2", SignedGrant{Parent: "p", BudgetUJ: 10}, "the stored envelope is grant g2"},
		{"budget", "g1", SignedGrant{Parent: "p", BudgetUJ: 9}, "budget_uj column says 10 µJ, the signed grant 9 µJ"},
		{"parent", "g1", SignedGrant{BudgetUJ: 10}, `parent column says "p", the signed grant ""`},
	} {
		if got := rec.ColumnFault(tt.envelopeID, tt.signed); got != tt.want {
			t.Errorf("%s: ColumnFault = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestLedger(t *testing.T) { forBackends(t, testLedger) }

func testLedger(t *testing.T, b backend) {
	s := b.open(t)
	ctx := context.Background()
	putGrant(t, s, "root", "", 1000)
	putGrant(t, s, "leaf", "root", 100)
	e := seal(t, s, "s", []string{"leaf", "root"}, 30, "a")
	id, err := s.Reserve(ctx, []string{"leaf", "root"}, 20)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, id, 25); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"leaf", "root"} {
		l, err := s.Ledger(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if len(l) != 2 {
			t.Fatalf("%s ledger has %d entries, want 2: %+v", g, len(l), l)
		}
		if l[0].AmountUJ != 30 || l[0].Index != e.Index || l[0].Reservation != 0 {
			t.Errorf("%s seal debit %+v", g, l[0])
		}
		if l[1].AmountUJ != 25 || l[1].Index != -1 || l[1].Reservation != id {
			t.Errorf("%s settle debit %+v", g, l[1])
		}
	}
	putGrant(t, s, "unused", "", 1)
	if l, err := s.Ledger(ctx, "unused"); err != nil || len(l) != 0 {
		t.Errorf("unused grant ledger = %v, %v; want empty", l, err)
	}
	if _, err := s.Ledger(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing grant ledger: %v, want ErrNotFound", err)
	}
}
