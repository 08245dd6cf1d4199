package witness

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/witness/litewitnesstest"
)

// BenchmarkWitnessRoundTrip is the cost of a witness elsewhere: one
// durable seal of an allowed action, as the gate makes it (the seal, then
// waiting for the quorum to cosign the log that holds it), into a store
// with only the home's witness file (the baseline), with litewitness
// required (quorum 1, its own process on loopback: its SQLite commit and
// its ssh-agent signature included), and with joule's own witness
// (witness serve's handler on loopback), interleaved in one run so the
// machine's load falls on all alike. litewitness-ms is what a checkpoint's
// round trip adds to a decision; the -x-base figures are ratios to the
// baseline.
func BenchmarkWitnessRoundTrip(b *testing.B) {
	ctx := context.Background()
	skey, vkey, err := note.GenerateKey(rand.Reader, "bench.test")
	if err != nil {
		b.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	logV, _ := note.NewVerifier(vkey)
	origin := "joule receipts log bench.test"

	open := func(c store.Cosigner) *store.Store {
		dir := b.TempDir()
		s, err := store.Open(filepath.Join(dir, "joule.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		w := &store.Witness{Origin: origin, Signer: signer, Verifier: logV, NoSync: true,
			Files: []string{filepath.Join(dir, "witness", "checkpoint")}, Marker: "bench:" + dir,
			OnError: func(err error) { b.Error(err) }}
		if c != nil {
			w.Cosigners, w.Quorum = []store.Cosigner{c}, 1
		}
		if err := s.SetWitness(w); err != nil {
			b.Fatal(err)
		}
		return s
	}
	lw := litewitnesstest.Start(b, "litewitness.bench/w", origin, vkey)
	lwClient, err := NewClient(lw.URL, lw.VKey, 0)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if _, err := InitServer(dir, "joule.bench/w"); err != nil {
		b.Fatal(err)
	}
	own, err := OpenServer(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := own.AddLog(origin, []string{vkey}); err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(own)
	defer hs.Close()
	ownClient, err := NewClient(hs.URL, own.Verifier().String(), 0)
	if err != nil {
		b.Fatal(err)
	}
	stores := []*store.Store{open(nil), open(lwClient), open(ownClient)}
	n := 0
	seal := func(s *store.Store) {
		n++
		e, err := s.Seal(ctx, store.SealRequest{Session: "bench", RequireWitness: true,
			Build: func(pos store.Position, _ error) ([]byte, bool, error) {
				return fmt.Appendf(nil, "bench receipt %d %x", n, pos.Prev), true, nil
			}})
		if err == nil {
			err = s.AwaitWitness(ctx, e.Index+1)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range stores {
		seal(s) // the first seal starts each witness
	}
	var spent [3]time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range stores {
			j := (i + k) % len(stores)
			start := time.Now()
			seal(stores[j])
			spent[j] += time.Since(start)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(spent[0]), "base-ns/seal")
	b.ReportMetric(per(spent[1]), "litewitness-ns/seal")
	b.ReportMetric(per(spent[2]), "joulewitness-ns/seal")
	b.ReportMetric((per(spent[1])-per(spent[0]))/1e6, "litewitness-ms")
	b.ReportMetric((per(spent[2])-per(spent[0]))/1e6, "joulewitness-ms")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "litewitness-x-base")
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "joulewitness-x-base")
}
