package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

// TestLargeStore: a large store (one session of 10,000 receipts, the rest
// in sessions of 100), sealed through the store as the meter seals them:
// 30,000 receipts by default, to keep the package's time in bounds;
// JOULE_UI_RECEIPTS=100000 for the figure docs/ui.md quotes. The
// sessions view paints before any session's figures are computed, and the
// 10,000-receipt chain scrolls to its end fetching a few pages, never the
// whole chain. The timings are printed (measured, not asserted: this
// machine is shared).
func TestLargeStore(t *testing.T) {
	needBrowser(t)
	if testing.Short() {
		t.Skip("-short")
	}
	total := 30_000
	if n, err := strconv.Atoi(os.Getenv("JOULE_UI_RECEIPTS")); err == nil && n >= 10_000 {
		total = n
	}
	home := t.TempDir()
	id, err := identity.Create(home, "large.joule.test", false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := id.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	rec := &energy.Recorder{Store: st, Sealer: sealer}
	ctx := context.Background()
	start := time.Now()
	// Sessions of 100 sealed by 16 workers at once (the store groups
	// concurrent seals into one commit), and the big one by its own.
	type job struct {
		session string
		n       int
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sealErr error
	seal := func(j job) {
		for i := 0; i < j.n; i++ {
			cov := receipts.CoverageEnforced
			if i%5 == 4 {
				cov = receipts.CoverageObserved
			}
			_, _, err := rec.Seal(ctx, energy.Record{Session: j.session, Unit: "model-call", Model: "claude-sonnet-4-5", Coverage: cov, Complete: true,
				Usage: energy.Usage{Input: 1000, Output: 200}, Estimate: energy.Estimate{UJ: uint64(1000 + i), Provenance: core.Estimator}})
			if err != nil {
				mu.Lock()
				sealErr = err
				mu.Unlock()
				return
			}
		}
	}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				seal(j)
			}
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); seal(job{"big", 10_000}) }()
	for i := 0; i < (total-10_000)/100; i++ {
		jobs <- job{fmt.Sprintf("s-%04d", i), 100}
	}
	close(jobs)
	wg.Wait()
	st.Close()
	if sealErr != nil {
		t.Fatal(sealErr)
	}
	t.Logf("sealed %d receipts in %v", total, time.Since(start).Round(time.Millisecond))

	url := startUI(t, home)
	got := drive(t, "sessions", url)
	t.Logf("sessions view of %d receipts: navigation %v; sessions list answered %v; table drawn %v ms after the start of navigation (browser start excluded); every figure of the %v rows shown after %v ms",
		total, got["nav"], got["api"], got["tableMs"], got["rows"], got["figuresMs"])
	if got["rows"] != float64(50) {
		t.Errorf("the first page shows %v sessions, want 50", got["rows"])
	}
	sc := drive(t, "scroll", url, "big")
	t.Logf("scrolling the 10,000-receipt chain: %v page(s) fetched at first, %v after scrolling to seq %v; %v rows in the page at most", sc["pagesAtFirst"], sc["pagesAfter"], sc["lastSeq"], sc["drawnAfter"])
	if sc["lastSeq"] != float64(10_000) {
		t.Errorf("scrolled to seq %v, want 10000", sc["lastSeq"])
	}
	if p, _ := sc["pagesAfter"].(float64); p > 10 {
		t.Errorf("scrolling fetched %v pages of 100: the chain is loaded whole, not as it is scrolled", p)
	}
	if d, _ := sc["drawnAfter"].(float64); d > 200 {
		t.Errorf("%v rows in the page: the list is not virtual", d)
	}
}
