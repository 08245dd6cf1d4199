//go:build !unix

package store

import "testing"

// cpuMeter reports nothing where getrusage is missing.
func cpuMeter(*testing.B) (stop func()) { return func() {} }
