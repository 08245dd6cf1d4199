//go:build unix

package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWitnessLockBounded: a witness lock that another process holds (here
// another open file description, which flock treats the same) is waited
// for at most lockWait, then refused saying so; released in time, it is
// taken.
func TestWitnessLockBounded(t *testing.T) {
	defer func(d time.Duration) { lockWait = d }(lockWait)
	lockWait = 300 * time.Millisecond
	path := filepath.Join(t.TempDir(), "checkpoint.lock")
	holder, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for _, exclusive := range []bool{false, true} {
		start := time.Now()
		_, err := lockFile(path, exclusive)
		if err == nil || !strings.Contains(err.Error(), "held for more than") {
			t.Errorf("exclusive %t: %v, want a refusal", exclusive, err)
		}
		if d := time.Since(start); d < lockWait || d > 10*lockWait {
			t.Errorf("exclusive %t: gave up after %v (lockWait %v)", exclusive, d, lockWait)
		}
	}
	// The release runs on another goroutine; it is waited for before the
	// holder is closed (the race detector sees no order through flock).
	fd, released := int(holder.Fd()), make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { unix.Flock(fd, unix.LOCK_UN); close(released) })
	unlock, err := lockFile(path, true)
	<-released
	if err != nil {
		t.Fatalf("released within lockWait: %v", err)
	}
	unlock()
}
