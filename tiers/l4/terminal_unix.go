//go:build unix

package l4

import (
	"os/exec"
	"syscall"
	"time"
)

// processGroup starts the command in its own process group, so a kill
// reaches what it spawned (a shell's children) too.
func processGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { killGroup(cmd); return nil }
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func signalOf(ps interface{ Sys() any }) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}

// remoteGroup starts the remote agent in its own process group; on Linux it
// is also killed if joule dies first.
func remoteGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	parentDeath(cmd.SysProcAttr)
}

// endGroup ends the remote agent's process group: SIGTERM, then SIGKILL to
// whatever is left two seconds later.
func endGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	pg := -cmd.Process.Pid
	if syscall.Kill(pg, syscall.SIGTERM) != nil {
		return // the group is gone
	}
	for i := 0; i < 80; i++ { // two seconds
		time.Sleep(25 * time.Millisecond)
		if syscall.Kill(pg, 0) != nil {
			return
		}
	}
	_ = syscall.Kill(pg, syscall.SIGKILL)
}
