//go:build !unix

package gateway

import "os/exec"

// Without process groups only the child itself is ended.
func setGroup(cmd *exec.Cmd)       {}
func terminateGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
func killGroup(cmd *exec.Cmd)      { cmd.Process.Kill() }
