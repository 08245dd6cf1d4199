//go:build !unix

package l2

import "time"

// cpuTime is not measured off Unix; the CPU metric then reads 0.
func cpuTime() time.Duration { return 0 }
