//go:build !linux

package rule

// resolveDirFast has no one-call proof outside Linux: the caller walks p.
func resolveDirFast(string) (string, bool) { return "", false }
