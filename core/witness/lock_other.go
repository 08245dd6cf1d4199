//go:build !unix

package witness

// lockFile is a no-op where flock is not available: run one process on a
// witness's state at a time there (joule witness add-log while the witness
// is stopped).
func lockFile(path string) (func(), error) { return func() {}, nil }
