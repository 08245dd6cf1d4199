//go:build unix

package store

import (
	"syscall"
	"testing"
	"time"
)

// cpuMeter starts measuring the process's CPU time (all threads); the
// returned func reports it per operation, as cpu-µs/op (user and system)
// and sys-µs/op (system alone: mostly the kernel's side of fsync). Wall
// time per operation on a loaded two-core machine says little about the
// store's cost; CPU per operation does.
func cpuMeter(b *testing.B) (stop func()) {
	user, sys, ok := processCPU()
	return func() {
		user2, sys2, ok2 := processCPU()
		if ok && ok2 && b.N > 0 {
			n := float64(b.N)
			b.ReportMetric(float64((user2+sys2-user-sys).Microseconds())/n, "cpu-µs/op")
			b.ReportMetric(float64((sys2-sys).Microseconds())/n, "sys-µs/op")
		}
	}
}

func processCPU() (user, sys time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), true
}
