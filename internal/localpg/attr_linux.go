package localpg

import "syscall"

// childAttributes makes the server die with logbench (SIGINT, PostgreSQL's fast
// shutdown: SIGTERM would wait for orphaned pgbench sessions to end) and puts it in its
// own process group, so a terminal's Ctrl-C reaches logbench, which stops the server in
// order, rather than the server directly.
func childAttributes(owner *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: owner, Pdeathsig: syscall.SIGINT, Setpgid: true}
}
