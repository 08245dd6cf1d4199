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
