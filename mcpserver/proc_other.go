//go:build !unix

package mcpserver

import "os/exec"

// ownProcessGroup leaves cmd as it is: without process groups only the
// shell itself is killed at the time limit.
func ownProcessGroup(cmd *exec.Cmd) {}
