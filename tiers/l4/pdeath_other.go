//go:build unix && !linux

package l4

import "syscall"

func parentDeath(a *syscall.SysProcAttr) {}
