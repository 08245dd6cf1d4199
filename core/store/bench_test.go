package store

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSeal measures one durable (fsynced) seal with a debit.
func BenchmarkSeal(b *testing.B) {
	s := openTest(b)
	putGrant(b, s, "g", "", math.MaxInt64)
	ctx := context.Background()
	b.ResetTimer()
	defer cpuMeter(b)()
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

// BenchmarkSealParallel measures seals from many goroutines of one process
// into a few sessions against one grant, on each backend, with one
// transaction per seal (the baseline) and with group commit.
func BenchmarkSealParallel(b *testing.B) {
	for _, be := range backends {
		for _, mode := range []string{"one-per-tx", "group"} {
			b.Run(be.name+"/"+mode, func(b *testing.B) {
				s := be.open(b, WithLockTimeout(time.Minute))
				s.group.off = mode == "one-per-tx"
				putGrant(b, s, "g", "", math.MaxInt64)
				ctx := context.Background()
				var n atomic.Int64
				b.SetParallelism(16) // 32 goroutines on two cores: the proxy's 32 clients
				b.ResetTimer()
				defer cpuMeter(b)()
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
			})
		}
	}
}

// BenchmarkDecisions measures durable decisions per second (a seal with a
// debit, committed and synced) at 1, 8 and 64 concurrent clients of one
// store, on each backend, in one run: the figures in docs/team.md.
func BenchmarkDecisions(b *testing.B) {
	for _, be := range backends {
		for _, clients := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", be.name, clients), func(b *testing.B) {
				s := be.open(b, WithLockTimeout(time.Minute))
				putGrant(b, s, "team", "", math.MaxInt64)
				ctx := context.Background()
				var next atomic.Int64
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for c := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						session := fmt.Sprintf("client-%d", c)
						for next.Add(1) <= int64(b.N) {
							_, err := s.Seal(ctx, SealRequest{Session: session, Debit: []string{"team"}, AmountUJ: 1,
								Build: func(pos Position, _ error) ([]byte, bool, error) {
									return envelopeFor(pos, "d"), true, nil
								}})
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
			})
		}
	}
}

// BenchmarkSealDraw measures seals that draw a call's share from a lease
// reserved on a two-grant chain, as the metering proxy seals them: from 32
// goroutines (one transaction per seal, the baseline, and group commit)
// and from one goroutine (each seal alone in its transaction).
func BenchmarkSealDraw(b *testing.B) {
	for _, be := range backends {
		for _, mode := range []string{"one-per-tx", "group", "alone"} {
			b.Run(be.name+"/"+mode, func(b *testing.B) {
				s := be.open(b, WithLockTimeout(time.Minute))
				s.group.off = mode == "one-per-tx"
				putGrant(b, s, "root", "", math.MaxInt64)
				putGrant(b, s, "leaf", "root", math.MaxInt64)
				ctx := context.Background()
				lease, err := s.Reserve(ctx, []string{"leaf", "root"}, math.MaxInt64/2)
				if err != nil {
					b.Fatal(err)
				}
				draw := func(session string) error {
					_, err := s.Seal(ctx, SealRequest{Session: session,
						Draw: &Draw{Reservation: lease, ReleaseUJ: 3, ChargeUJ: 2},
						Build: func(pos Position, _ error) ([]byte, bool, error) {
							return envelopeFor(pos, "draw"), false, nil
						}})
					return err
				}
				if mode == "alone" {
					b.ResetTimer()
					defer cpuMeter(b)()
					for b.Loop() {
						if err := draw("bench"); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				var n atomic.Int64
				b.SetParallelism(16)
				b.ResetTimer()
				defer cpuMeter(b)()
				b.RunParallel(func(pb *testing.PB) {
					session := fmt.Sprintf("bench-%d", n.Add(1)%4)
					for pb.Next() {
						if err := draw(session); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
