package proxy

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

// TestEveryCallReceiptedByClose: receipts are sealed after the answer, in
// the background; Close alone (no Wait) must leave every answered call with
// exactly one receipt, and the ledger charged exactly what they say, with
// nothing still reserved, however small the backlog bound.
func TestEveryCallReceiptedByClose(t *testing.T) {
	tests := []struct {
		name        string
		maxUnsealed int
		clients     int
		calls       int
	}{
		{"backlog of one", 1, 32, 200},
		{"default backlog", 0, 32, 400},
		{"one client", 4, 1, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, big, func(c *Config) { c.MaxUnsealed = tt.maxUnsealed })
			client := benchClient(tt.clients)
			var next atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < tt.clients; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(tt.calls); i = next.Add(1) {
						req, _ := http.NewRequest("POST", r.srv.URL+"/v1/messages", strings.NewReader(benchBody))
						req.Header.Set("X-Joule-Session", fmt.Sprintf("s%d", i%3))
						resp, err := client.Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							t.Errorf("HTTP %d", resp.StatusCode)
						}
					}
				}()
			}
			wg.Wait()
			r.proxy.Close()
			var n int
			var sum uint64
			for s := range 3 {
				for _, e := range r.receipts(fmt.Sprintf("s%d", s)) {
					n++
					sum += e.EstimatedUJ
				}
			}
			if n != tt.calls {
				t.Fatalf("%d receipts after Close for %d answered calls", n, tt.calls)
			}
			g, err := r.st.Grant(context.Background(), r.grantID)
			if err != nil {
				t.Fatal(err)
			}
			if g.SpentUJ != sum || g.ReservedUJ != 0 {
				t.Errorf("after Close: spent %d reserved %d; receipts charge %d", g.SpentUJ, g.ReservedUJ, sum)
			}
		})
	}
}

// TestUnsealedBacklogBounded: while the store cannot be written, a client
// gets at most MaxUnsealed answers whose receipts wait (plus the one whose
// handler then waits for a slot); its next call is held until the store
// takes the receipts, and then every call is receipted.
func TestUnsealedBacklogBounded(t *testing.T) {
	const maxUnsealed = 2
	r := newRig(t, big, func(c *Config) { c.MaxUnsealed = maxUnsealed })
	client := benchClient(1) // one connection: a waiting handler holds it
	call := func() error {
		resp, err := client.Post(r.srv.URL+"/v1/messages", "application/json", strings.NewReader(benchBody))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}
	if err := call(); err != nil { // reserves the lease the next calls draw on
		t.Fatal(err)
	}
	r.proxy.Wait()

	// Another connection holds the database's write lock.
	lock, unlock := writeLock(t, r.st.Path())
	if err := lock(); err != nil {
		t.Fatal(err)
	}
	defer unlock()

	const calls = 8
	var answered atomic.Int64
	done := make(chan error, 1)
	go func() {
		for range calls {
			if err := call(); err != nil {
				done <- err
				return
			}
			answered.Add(1)
		}
		done <- nil
	}()
	deadline := time.Now().Add(10 * time.Second)
	for answered.Load() < maxUnsealed && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for calls past the bound, were there no bound
	if got := answered.Load(); got < maxUnsealed || got > maxUnsealed+1 {
		t.Errorf("%d calls answered while no receipt could be sealed, want %d or %d", got, maxUnsealed, maxUnsealed+1)
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := len(r.receipts(DefaultSession)); got != calls+1 {
		t.Errorf("%d receipts, want %d", got, calls+1)
	}
}

// TestLeaseGoneAtSeal: a call whose lease another process released (as
// stale) before its receipt was sealed still gets its receipt, without the
// draw, saying why.
func TestLeaseGoneAtSeal(t *testing.T) {
	r := newRig(t, big)
	ctx := context.Background()
	r.proxy.beforeSeal = func() {
		rs, err := r.st.Reservations(ctx)
		if err != nil {
			t.Error(err)
		}
		for _, res := range rs {
			r.st.Release(ctx, res.ID)
		}
	}
	if resp, body := r.do("POST", "/v1/messages", benchBody); resp.StatusCode != 200 {
		t.Fatalf("HTTP %d %s", resp.StatusCode, body)
	}
	got := r.receipts(DefaultSession)
	if len(got) != 1 || got[0].InputTokens != 2095 || !strings.Contains(got[0].Note, "charging the call's lease failed") {
		t.Fatalf("receipts: %+v", got)
	}
}

// TestSealRetriesLockedStore: as the sealing loop starts its first round,
// another connection takes the store's write lock and holds it past several
// of the recorder's lock timeouts, so each try ends in store.ErrLocked;
// once the lock is released every call is sealed once and charged, none
// lost and none logged as failed.
func TestSealRetriesLockedStore(t *testing.T) {
	var (
		logMu sync.Mutex
		logs  []string
	)
	r := newRig(t, big, func(c *Config) {
		c.Logf = func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			logs = append(logs, fmt.Sprintf(format, args...))
		}
	})
	// The recorder's own handle on the store gives up on the lock at once.
	quick, err := store.Open(r.st.Path(), store.WithLockTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer quick.Close()
	r.proxy.cfg.Recorder = &energy.Recorder{Store: quick, Sealer: r.proxy.cfg.Recorder.Sealer}
	before := r.grant().SpentUJ

	lock, unlock := writeLock(t, r.st.Path())
	defer unlock()
	var lockOnce sync.Once
	var released atomic.Bool
	r.proxy.beforeSeal = func() {
		lockOnce.Do(func() {
			if err := lock(); err != nil {
				t.Error(err)
				return
			}
			time.AfterFunc(400*time.Millisecond, func() { // several lock timeouts, each a failed try
				released.Store(true)
				unlock()
			})
		})
	}
	const calls = 12
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, body := r.do("POST", "/v1/messages", benchBody); resp.StatusCode != 200 {
				t.Errorf("HTTP %d %s", resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	got := r.receipts(DefaultSession) // waits for every receipt
	if !released.Load() {
		t.Fatal("the sealing loop finished with the lock still held: its locked tries were given up, not retried")
	}
	if len(got) != calls {
		t.Errorf("%d receipts, want %d", len(got), calls)
	}
	var sum uint64
	for _, e := range got {
		sum += e.EstimatedUJ
	}
	if spent := r.grant().SpentUJ - before; spent != sum || sum == 0 {
		t.Errorf("charged %d µJ, the receipts say %d", spent, sum)
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, l := range logs {
		if strings.Contains(l, "seal receipt") || strings.Contains(l, "charge lease") {
			t.Errorf("logged %q: a locked store lost or failed a receipt", l)
		}
	}
}

// writeLock opens another connection to the SQLite store at path: lock
// takes the database's write lock, as another process's transaction would,
// and unlock gives it back (once; again is a no-op).
func writeLock(t *testing.T, path string) (lock func() error, unlock func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var mu sync.Mutex
	locked := false
	lock = func() error {
		mu.Lock()
		defer mu.Unlock()
		_, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
		locked = err == nil
		return err
	}
	unlock = func() {
		mu.Lock()
		defer mu.Unlock()
		if locked {
			locked = false
			if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				t.Error(err)
			}
		}
	}
	return lock, unlock
}
