package store

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestReserveSettleRelease(t *testing.T) {
	type step struct {
		op      string // reserve, settle, release, seal, draw
		grants  []string
		amount  uint64
		resv    int // index into reservations made so far, for settle/release/draw
		charge  uint64
		wantErr error
		wantMsg string
	}
	type state struct{ spent, reserved, remaining uint64 }
	tests := []struct {
		name  string
		steps []step
		want  map[string]state
	}{
		{
			name:  "reserve holds budget",
			steps: []step{{op: "reserve", grants: []string{"leaf", "root"}, amount: 30}},
			want:  map[string]state{"leaf": {0, 30, 70}, "root": {0, 30, 970}},
		},
		{
			name: "settle smaller",
			steps: []step{
				{op: "reserve", grants: []string{"leaf", "root"}, amount: 30},
				{op: "settle", resv: 0, amount: 12},
			},
			want: map[string]state{"leaf": {12, 0, 88}, "root": {12, 0, 988}},
		},
		{
			name: "settle larger than reserved and past budget",
			steps: []step{
				{op: "reserve", grants: []string{"leaf"}, amount: 90},
				{op: "settle", resv: 0, amount: 130},
				{op: "seal", grants: []string{"leaf"}, amount: 1, wantErr: &BudgetError{}},
			},
			want: map[string]state{"leaf": {130, 0, 0}},
		},
		{
			name: "release frees the hold",
			steps: []step{
				{op: "reserve", grants: []string{"leaf", "root"}, amount: 100},
				{op: "release", resv: 0},
			},
			want: map[string]state{"leaf": {0, 0, 100}, "root": {0, 0, 1000}},
		},
		{
			name: "reservation blocks seal and reserve",
			steps: []step{
				{op: "reserve", grants: []string{"leaf"}, amount: 80},
				{op: "reserve", grants: []string{"leaf"}, amount: 21, wantErr: &BudgetError{GrantID: "leaf", RemainingUJ: 20, NeededUJ: 21}},
				{op: "seal", grants: []string{"leaf"}, amount: 21, wantErr: &BudgetError{GrantID: "leaf", RemainingUJ: 20, NeededUJ: 21}},
				{op: "reserve", grants: []string{"leaf"}, amount: 20},
			},
			want: map[string]state{"leaf": {0, 100, 0}},
		},
		{
			name: "settle twice",
			steps: []step{
				{op: "reserve", grants: []string{"leaf"}, amount: 10},
				{op: "settle", resv: 0, amount: 10},
				{op: "settle", resv: 0, amount: 10, wantErr: ErrNotFound, wantMsg: "already settled or released"},
				{op: "release", resv: 0, wantErr: ErrNotFound},
			},
			want: map[string]state{"leaf": {10, 0, 90}},
		},
		{
			name: "settle on a grant revoked meanwhile still charges",
			steps: []step{
				{op: "reserve", grants: []string{"leaf"}, amount: 10},
				{op: "revoke", grants: []string{"leaf"}},
				{op: "settle", resv: 0, amount: 7},
				{op: "reserve", grants: []string{"leaf"}, amount: 1, wantErr: ErrRevoked},
			},
			want: map[string]state{"leaf": {7, 0, 93}},
		},
		{
			name: "bad requests",
			steps: []step{
				{op: "reserve", grants: nil, amount: 1, wantMsg: "no grants to reserve against"},
				{op: "reserve", grants: []string{"ghost"}, amount: 1, wantErr: ErrNotFound},
				{op: "reserve", grants: []string{"leaf", "leaf"}, amount: 1, wantMsg: "listed twice"},
				{op: "reserve", grants: []string{"leaf"}, amount: math.MaxInt64 + 1, wantMsg: "exceeds the store limit"},
				{op: "reserve", grants: []string{"leaf"}, amount: 5},
				{op: "settle", resv: 0, amount: math.MaxInt64 + 1, wantMsg: "exceeds the store limit"},
			},
			want: map[string]state{"leaf": {0, 5, 95}},
		},
		{
			name: "draws share a lease that stays open",
			steps: []step{
				{op: "reserve", grants: []string{"leaf", "root"}, amount: 60},
				{op: "draw", resv: 0, amount: 20, charge: 15},
				{op: "draw", resv: 0, amount: 20, charge: 25},
				{op: "draw", resv: 0, amount: 30, charge: 5}, // more than is left: takes the 20 left
				{op: "release", resv: 0},
			},
			want: map[string]state{"leaf": {45, 0, 55}, "root": {45, 0, 955}},
		},
		{
			name: "a draw charges past the budget: the call happened",
			steps: []step{
				{op: "reserve", grants: []string{"leaf"}, amount: 90},
				{op: "draw", resv: 0, amount: 90, charge: 120},
				{op: "seal", grants: []string{"leaf"}, amount: 1, wantErr: &BudgetError{}},
				{op: "settle", resv: 0, amount: 0},
			},
			want: map[string]state{"leaf": {120, 0, 0}},
		},
		{
			name: "draw from nothing",
			steps: []step{
				{op: "reserve", grants: []string{"leaf"}, amount: 10},
				{op: "release", resv: 0},
				{op: "draw", resv: 0, amount: 5, charge: 5, wantErr: ErrNotFound},
			},
			want: map[string]state{"leaf": {0, 0, 100}},
		},
		{
			name: "all or nothing across links",
			steps: []step{
				{op: "reserve", grants: []string{"root"}, amount: 950},
				{op: "reserve", grants: []string{"leaf", "root"}, amount: 60, wantErr: &BudgetError{GrantID: "root", RemainingUJ: 50, NeededUJ: 60}},
			},
			want: map[string]state{"leaf": {0, 0, 100}, "root": {0, 950, 50}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			ctx := context.Background()
			putGrant(t, s, "root", "", 1000)
			putGrant(t, s, "leaf", "root", 100)
			var ids []int64
			for i, st := range tt.steps {
				var err error
				switch st.op {
				case "reserve":
					var id int64
					if id, err = s.Reserve(ctx, st.grants, st.amount); err == nil {
						ids = append(ids, id)
					}
				case "settle":
					err = s.Settle(ctx, ids[st.resv], st.amount)
				case "release":
					err = s.Release(ctx, ids[st.resv])
				case "draw":
					_, err = s.Seal(ctx, SealRequest{Session: "s", Draw: &Draw{Reservation: ids[st.resv], ReleaseUJ: st.amount, ChargeUJ: st.charge},
						Build: func(pos Position, _ error) ([]byte, bool, error) { return envelopeFor(pos, "draw"), false, nil }})
				case "revoke":
					err = s.Revoke(ctx, st.grants[0])
				case "seal":
					var saw error
					_, err = s.Seal(ctx, SealRequest{Session: "s", Debit: st.grants, AmountUJ: st.amount,
						Build: func(pos Position, debitErr error) ([]byte, bool, error) {
							saw = debitErr
							return envelopeFor(pos, "x"), true, nil
						}})
					if err == nil {
						err = saw
					}
				}
				checkStepErr(t, i, err, st.wantErr, st.wantMsg)
			}
			for g, want := range tt.want {
				rec, err := s.Grant(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				if got := (state{rec.SpentUJ, rec.ReservedUJ, rec.RemainingUJ()}); got != want {
					t.Errorf("grant %s: spent/reserved/remaining %v, want %v", g, got, want)
				}
			}
			checkConsistent(t, s)
		})
	}
}

func checkStepErr(t *testing.T, step int, err, want error, msg string) {
	t.Helper()
	switch w := want.(type) {
	case nil:
		if msg == "" && err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	case *BudgetError:
		var be *BudgetError
		if !errors.As(err, &be) {
			t.Fatalf("step %d: %v, want a *BudgetError", step, err)
		}
		if w.GrantID != "" && *be != *w {
			t.Fatalf("step %d: %v, want %v", step, be, w)
		}
	default:
		if !errors.Is(err, w) {
			t.Fatalf("step %d: %v, want %v", step, err, w)
		}
	}
	if msg != "" && (err == nil || !strings.Contains(err.Error(), msg)) {
		t.Fatalf("step %d: error %v does not mention %q", step, err, msg)
	}
}

func TestReleaseBefore(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s := openTest(t, WithClock(func() time.Time { return now }))
	ctx := context.Background()
	putGrant(t, s, "g", "", 100)
	old1, _ := s.Reserve(ctx, []string{"g"}, 10)
	old2, _ := s.Reserve(ctx, []string{"g"}, 20)
	now = now.Add(time.Hour)
	fresh, err := s.Reserve(ctx, []string{"g"}, 30)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.ReleaseBefore(ctx, now.Add(-time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("ReleaseBefore = %d, %v; want 2 released", n, err)
	}
	for _, id := range []int64{old1, old2} {
		if err := s.Release(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("old reservation %d still there: %v", id, err)
		}
	}
	g, _ := s.Grant(ctx, "g")
	if g.ReservedUJ != 30 {
		t.Errorf("reserved %d after releasing the old ones, want 30", g.ReservedUJ)
	}
	if err := s.Settle(ctx, fresh, 30); err != nil {
		t.Errorf("fresh reservation was released: %v", err)
	}
	// Reservation ids are never reused, so a stale id cannot settle a
	// newer reservation.
	next, err := s.Reserve(ctx, []string{"g"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if next <= fresh {
		t.Errorf("reservation id %d reused (last was %d)", next, fresh)
	}
	checkConsistent(t, s)
}

// TestSealSettles: a reservation settled with its receipt is settled exactly
// when the receipt lands, and a bad reservation writes neither.
func TestSealSettles(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	putGrant(t, s, "g", "", 1000)
	id, err := s.Reserve(ctx, []string{"g"}, 600)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Seal(ctx, SealRequest{Session: "m", Settle: &id, SettleUJ: 250, Build: allowBuild("call")})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := s.Grant(ctx, "g")
	if g.SpentUJ != 250 || g.ReservedUJ != 0 || e.Seq != 1 {
		t.Fatalf("spent %d reserved %d seq %d", g.SpentUJ, g.ReservedUJ, e.Seq)
	}
	// Settling the same reservation again fails, and seals nothing.
	if _, err := s.Seal(ctx, SealRequest{Session: "m", Settle: &id, SettleUJ: 1, Build: allowBuild("again")}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second settle: %v", err)
	}
	if n, _ := s.LogSize(ctx); n != 1 {
		t.Fatalf("log size %d after a failed settle", n)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}
