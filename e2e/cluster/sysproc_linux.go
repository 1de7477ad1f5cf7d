package cluster

import "syscall"

// sysProcAttr makes the kernel SIGKILL an instance when the test binary dies without running
// its cleanups (a -timeout panic, say), so no instance outlives the test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
