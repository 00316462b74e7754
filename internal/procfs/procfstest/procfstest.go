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

// Process adds a process: its CPU times (utime stime cutime cstime, in clock ticks),
// the content of its smaps_rollup (nil fails the read, as a denied one does) and of its
// cgroup file.
func (p Proc) Process(pid, ppid int, command, times string, smaps *string, cgroup string) {
	p.t.Helper()
	dir := filepath.Join(p.Root, strconv.Itoa(pid))
	stat := fmt.Sprintf("%d (%s) S %d 1 1 0 -1 0 0 0 0 0 %s 20 0 1 0 5", pid, command, ppid, times)
	files := map[string]string{"stat": stat, "cgroup": cgroup}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if smaps != nil {
		files["smaps_rollup"] = *smaps
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

// Pss is an smaps_rollup content holding kilobytes of proportional set size.
func Pss(kilobytes int) *string {
	text := fmt.Sprintf("Rss: 9 kB\nPss: %d kB\n", kilobytes)
	return &text
}
