// Package procfstest lays out folders as /proc for the tests of code that reads it.
package procfstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Proc is a folder laid out as /proc, holding the processes Process adds.
type Proc struct {
	t    testing.TB
	Root string
}

// New returns an empty Proc in a temporary folder of the test.
func New(t testing.TB) Proc { return Proc{t, t.TempDir()} }

// Memory is what a process holds, as its smaps_rollup and status files tell it.
type Memory struct {
	// SmapsRollup is the content of smaps_rollup.
	SmapsRollup string
	// SmapsDenied fails the read of smaps_rollup, as the kernel does to a reader that may
	// not ptrace the process; status stays readable, as it is to every user.
	SmapsDenied bool
	// Status is the content of status.
	Status string
}

// Holding is the memory of a process holding pss kilobytes of proportional set size
// and, resident, anonymous kilobytes of its own, file kilobytes of files it maps and
// shared kilobytes of shared memory.
func Holding(pss, anonymous, file, shared int) Memory {
	return Memory{
		SmapsRollup: fmt.Sprintf("Rss: %d kB\nPss: %d kB\n", anonymous+file+shared, pss),
		Status: fmt.Sprintf("Name:\tprocess\nVmRSS:\t%d kB\nRssAnon:\t%d kB\nRssFile:\t%d kB\nRssShmem:\t%d kB\n",
			anonymous+file+shared, anonymous, file, shared),
	}
}

// Pss is the memory of a process holding kilobytes of proportional set size, all of them
// anonymous.
func Pss(kilobytes int) Memory { return Holding(kilobytes, kilobytes, 0, 0) }

// Zombie is the memory of a process that exited and waits for its parent: none, with an
// empty smaps_rollup and a status without the lines of an address space.
var Zombie = Memory{Status: "Name:\tpostgres\nState:\tZ (zombie)\n"}

// Denied returns m with its smaps_rollup unreadable.
func (m Memory) Denied() Memory {
	m.SmapsDenied = true
	return m
}

// Process adds a process: its CPU times (utime stime cutime cstime, in clock ticks),
// its memory and the content of its cgroup file.
func (p Proc) Process(pid, ppid int, command, times string, memory Memory, cgroup string) {
	p.t.Helper()
	dir := filepath.Join(p.Root, strconv.Itoa(pid))
	stat := fmt.Sprintf("%d (%s) S %d 1 1 0 -1 0 0 0 0 0 %s 20 0 1 0 5", pid, command, ppid, times)
	files := map[string]string{"stat": stat, "cgroup": cgroup, "status": memory.Status}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if !memory.SmapsDenied {
		files["smaps_rollup"] = memory.SmapsRollup
	} else if err := os.MkdirAll(filepath.Join(dir, "smaps_rollup"), 0o755); err != nil {
		p.t.Fatal(err) // a folder in the file's place fails the read
	}
	// Written aside and renamed, so that a reader sampling meanwhile sees the old
	// content or the new one, as a kernel's /proc shows one moment.
	for name, content := range files {
		aside := filepath.Join(dir, "."+name)
		if err := os.WriteFile(aside, []byte(content), 0o644); err != nil {
			p.t.Fatal(err)
		}
		if err := os.Rename(aside, filepath.Join(dir, name)); err != nil {
			p.t.Fatal(err)
		}
	}
}
