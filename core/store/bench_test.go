package store

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkSeal measures one durable (fsynced) seal with a debit.
func BenchmarkSeal(b *testing.B) {
	s := openTest(b)
	putGrant(b, s, "g", "", math.MaxInt64)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		_, err := s.Seal(ctx, SealRequest{Session: "bench", Debit: []string{"g"}, AmountUJ: 1,
			Build: func(pos Position, _ error) ([]byte, bool, error) {
				return envelopeFor(pos, "b"), true, nil
			}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSealParallel measures seals from 32 goroutines of one process
// (a busy resident server or proxy) into a few sessions against one grant.
func BenchmarkSealParallel(b *testing.B) {
	s := openTest(b)
	putGrant(b, s, "g", "", math.MaxInt64)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		session := fmt.Sprintf("bench-%d", n.Add(1)%4)
		for pb.Next() {
			_, err := s.Seal(ctx, SealRequest{Session: session, Debit: []string{"g"}, AmountUJ: 1,
				Build: func(pos Position, _ error) ([]byte, bool, error) {
					return envelopeFor(pos, "p"), true, nil
				}})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
