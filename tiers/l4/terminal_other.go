//go:build !unix

package l4

import "os/exec"

func processGroup(cmd *exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func signalOf(ps interface{ Sys() any }) string { return "" }

func remoteGroup(cmd *exec.Cmd) {}

func endGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
