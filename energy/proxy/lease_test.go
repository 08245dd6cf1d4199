package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingLedger counts the durable reservations the proxy makes.
type countingLedger struct {
	Ledger
	reserves atomic.Int64
}

func (c *countingLedger) Reserve(ctx context.Context, grants []string, amount uint64) (int64, error) {
	c.reserves.Add(1)
	return c.Ledger.Reserve(ctx, grants, amount)
}

const leaseBody = `{"model":"llama3.2","stream":false,"options":{"num_predict":100},"messages":[{"role":"user","content":"hi"}]}`

func postLeaseCall(t *testing.T, r *rig) {
	t.Helper()
	resp, err := http.Post(r.srv.URL+"/api/chat", "application/json", strings.NewReader(leaseBody))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
}

// TestLeaseAmortisesReservations: many calls of one chain share a lease, so
// the store sees one reservation per leaseCalls calls, not one per call;
// while the lease is open its budget is reserved for everyone to see, and
// once given back every receipt's charge is spent and nothing is reserved.
func TestLeaseAmortisesReservations(t *testing.T) {
	var cl *countingLedger
	r := newRig(t, 1<<50, func(c *Config) { cl = &countingLedger{Ledger: c.Ledger}; c.Ledger = cl })
	const n = 3*leaseCalls + 5 // the last lease is open, not drawn down
	for i := 0; i < n; i++ {
		postLeaseCall(t, r)
	}
	r.proxy.Wait()
	if got := cl.reserves.Load(); got > n/leaseCalls+1 {
		t.Errorf("%d calls made %d durable reservations, want at most %d", n, got, n/leaseCalls+1)
	}
	open, err := r.st.Grant(context.Background(), r.grantID)
	if err != nil {
		t.Fatal(err)
	}
	if open.ReservedUJ == 0 {
		t.Error("the open lease reserves nothing in the store: other processes could spend it")
	}
	g := r.grant() // gives the leases back
	effs := r.receipts(DefaultSession)
	if len(effs) != n {
		t.Fatalf("%d receipts, want %d", len(effs), n)
	}
	var sum uint64
	for _, e := range effs {
		sum += e.EstimatedUJ
	}
	if g.ReservedUJ != 0 || g.SpentUJ != sum {
		t.Errorf("after give-back: spent %d reserved %d; receipts charge %d", g.SpentUJ, g.ReservedUJ, sum)
	}
}

// TestLeaseIdleReturns: a lease nobody uses gives its budget back on its
// own, without a GiveBack or Close.
func TestLeaseIdleReturns(t *testing.T) {
	r := newRig(t, 1<<50)
	postLeaseCall(t, r)
	r.proxy.Wait()
	deadline := time.Now().Add(leaseIdle + 5*time.Second)
	for {
		g, err := r.st.Grant(context.Background(), r.grantID)
		if err != nil {
			t.Fatal(err)
		}
		if g.ReservedUJ == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d µJ reserved %v after the last call", g.ReservedUJ, leaseIdle+5*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLeaseSizing: a chain's next lease covers what it admits in
// leaseHorizon at its recent pace, never fewer than leaseCalls calls nor
// more than leaseMaxCalls, and too few calls say nothing about a pace.
func TestLeaseSizing(t *testing.T) {
	tests := []struct {
		name     string
		admitted uint64
		over     time.Duration
		want     uint64
	}{
		{"new chain", 0, time.Second, leaseCalls},
		{"slow chain", 40, 10 * time.Second, leaseCalls},
		{"one big call is no pace", leaseCalls/2 - 1, time.Microsecond, leaseCalls},
		{"2,000 calls a second", 200, 100 * time.Millisecond, 2000},
		{"just under the cap", 4000, time.Second, 4000},
		{"capped", 1000, 10 * time.Millisecond, leaseMaxCalls},
		{"more admitted than the cap", 1 << 40, time.Hour, leaseMaxCalls},
		{"clock went back", 100, -time.Second, leaseCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			c := &chain{admitted: tt.admitted, rateFrom: now.Add(-tt.over)}
			if got := c.leaseCalls(now); got != tt.want {
				t.Errorf("lease for %d calls, want %d", got, tt.want)
			}
			if c.admitted != 0 || !c.rateFrom.Equal(now) {
				t.Errorf("pace not restarted: %d calls since %v", c.admitted, c.rateFrom)
			}
		})
	}
}

// TestLeaseScalesWithPace: a chain admitting calls faster than a minimal
// lease lasts gets larger leases, so a burst of calls makes far fewer
// durable reservations than one per leaseCalls calls.
func TestLeaseScalesWithPace(t *testing.T) {
	r := newRig(t, 1<<50)
	cl := &countingLedger{Ledger: r.st}
	ls := newLeases(cl, t.Logf)
	defer ls.close()
	const n = 20 * leaseCalls
	ctx := context.Background()
	for range n {
		tk, err := ls.admit(ctx, []string{r.grantID}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		ls.done(tk, true) // as if its receipt had drawn its share
	}
	if got := cl.reserves.Load(); got > 4 {
		t.Errorf("%d calls made %d durable reservations, want at most 4: a minimal lease, then leases sized to the pace", n, got)
	}
}

// TestLeaseFitsBudget: when the budget left cannot hold a lease sized to
// the chain's pace, a minimal lease is tried before falling back to one
// reservation per call, which only the end of a budget calls for.
func TestLeaseFitsBudget(t *testing.T) {
	const est = 1000
	r := newRig(t, 400*est) // room for a few minimal leases, not a paced one
	cl := &countingLedger{Ledger: r.st}
	ls := newLeases(cl, t.Logf)
	defer ls.close()
	const n = 250
	ctx := context.Background()
	for range n {
		tk, err := ls.admit(ctx, []string{r.grantID}, est)
		if err != nil {
			t.Fatal(err)
		}
		ls.done(tk, true)
	}
	if got := cl.reserves.Load(); got > n/leaseCalls+4 {
		t.Errorf("%d calls made %d durable reservations, want at most %d: minimal leases, not one per call", n, got, n/leaseCalls+4)
	}
}
