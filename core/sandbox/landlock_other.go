//go:build !linux

package sandbox

// ABI is 0: Landlock is Linux's.
func ABI() int { return 0 }

// Exec always fails: there is no Landlock here.
func Exec(Spec, string, []string, []string) error { return ErrUnavailable }
