package store

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSealWitness measures one durable seal with a debit into a store
// without a witness (the baseline), with a witness file written without
// fsync, and with a witness file fsynced before its rename, interleaved in
// one run so the machine's load falls on all alike. witness-x-base and
// synced-x-base are their times over the baseline's (target ≤ 1.10).
func BenchmarkSealWitness(b *testing.B) {
	ctx := context.Background()
	open := func(w bool, sync bool) *Store {
		s := openTest(b)
		putGrant(b, s, "g", "", math.MaxInt64)
		if w {
			dir := b.TempDir()
			if err := s.SetWitness(&Witness{Origin: "bench", Signer: testSigner(b), Verifier: testVerifier(b),
				Files: []string{filepath.Join(dir, "checkpoint")}, Marker: "bench", NoSync: !sync,
				OnError: func(err error) { b.Error(err) }}); err != nil {
				b.Fatal(err)
			}
		}
		return s
	}
	stores := []*Store{open(false, false), open(true, false), open(true, true)}
	var spent [3]time.Duration
	seal := func(s *Store) {
		_, err := s.Seal(ctx, SealRequest{Session: "bench", Debit: []string{"g"}, AmountUJ: 1,
			Build: func(pos Position, _ error) ([]byte, bool, error) {
				return envelopeFor(pos, "b"), true, nil
			}})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range stores {
		seal(s) // the first seal starts the witness
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range stores {
			j := (i + k) % len(stores)
			start := time.Now()
			seal(stores[j])
			spent[j] += time.Since(start)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(spent[0].Nanoseconds())/n, "base-ns/seal")
	b.ReportMetric(float64(spent[1].Nanoseconds())/n, "witness-ns/seal")
	b.ReportMetric(float64(spent[2].Nanoseconds())/n, "synced-ns/seal")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "witness-x-base")
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "synced-x-base")
}
