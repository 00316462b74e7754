//go:build !linux

package localpg

import "syscall"

// childAttributes puts the server in its own process group, so a terminal's Ctrl-C
// reaches logbench, which stops the server in order. Only Linux can tie the server's life
// to logbench's; elsewhere a killed logbench leaves the server running.
func childAttributes(owner *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: owner, Setpgid: true}
}
