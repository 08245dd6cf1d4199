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

// BenchmarkWitnessWork measures the witness's own work per seal, apart
// from the seal: reading and verifying the witness as a seal does (what a
// one-shot hook process does once, without the file's lock), reading it
// under its lock as store check does, signing the new checkpoint and
// rewriting the file in place under its lock.
func BenchmarkWitnessWork(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "checkpoint")
	signer, verifier := testSigner(b), testVerifier(b)
	for _, step := range []string{"read+verify", "locked-read+verify", "sign+write"} {
		b.Run(step, func(b *testing.B) {
			cp := Checkpoint{Origin: "bench", Size: 1}
			msg, _ := signNote(cp, signer)
			if err := writeWitnessFile(path, msg, 1, true, false); err != nil {
				b.Fatal(err)
			}
			defer cpuMeter(b)()
			for i := 0; b.Loop(); i++ {
				if step != "sign+write" {
					if _, _, err := openWitnessFile(path, "bench", verifier, step != "read+verify"); err != nil {
						b.Fatal(err)
					}
					continue
				}
				cp.Size = int64(i + 2)
				msg, err := signNote(cp, signer)
				if err == nil {
					err = writeWitnessFile(path, msg, cp.Size, false, false)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
