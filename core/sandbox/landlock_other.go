//go:build !linux

package sandbox

import "io"

// ABI is 0: Landlock is Linux's.
func ABI() int { return 0 }

// Exec always fails: there is no Landlock here.
func Exec(Spec, string, []string, []string, io.Writer) error { return ErrUnavailable }

// NamespacesAvailable is false: user namespaces are Linux's.
func NamespacesAvailable() bool { return false }

func totalMemory() uint64 { return 0 }

func pidMaxPerNamespace() bool { return false }

// CgroupAvailable is false: control groups are Linux's.
func CgroupAvailable() bool { return false }
