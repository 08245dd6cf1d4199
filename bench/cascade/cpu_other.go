//go:build !unix

package main

import "time"

var start = time.Now()

// cpuTime falls back to wall time where getrusage does not exist: an upper
// bound on one busy core.
func cpuTime() time.Duration { return time.Since(start) }
