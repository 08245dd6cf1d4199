package l4

import "syscall"

// parentDeath has the kernel kill the remote agent if joule dies without
// ending its group (SIGKILL, a crash).
func parentDeath(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
