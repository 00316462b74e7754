package procfs

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, content string
		want          Stat
		fails         bool
	}{
		{name: "postgres backend", want: Stat{PID: 4242, PPID: 4200, UserTicks: 150, SystemTicks: 37,
			ChildrenUserTicks: 9, ChildrenSystemTicks: 4},
			content: "4242 (postgres) S 4200 4200 4200 0 -1 4194560 2711 0 0 0 150 37 9 4 20 0 1 0 2761043 229617664 3000 " +
				"18446744073709551615 1 1 0 0 0 0 4194304 19935232 1249 0 0 0 17 1 0 0 0 0 0\n"},
		{name: "name with spaces and parentheses", want: Stat{PID: 7, PPID: 1, UserTicks: 2, SystemTicks: 3},
			content: "7 (a (b) c)) R 1 7 7 0 -1 0 0 0 0 0 2 3 0 0 20 0 1 0 5 100 10"},
		{name: "too few fields", content: "7 (x) R 1 7 7", fails: true},
		{name: "no name", content: "7 x R 1", fails: true},
		{name: "negative time", content: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 -2 3 0 0 20", fails: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			got, err := ParseStat([]byte(test.content))
			if (err != nil) != test.fails || (!test.fails && got != test.want) {
				t.Errorf("ParseStat = %+v, %v; want %+v, failing %v", got, err, test.want, test.fails)
			}
		})
	}
}

func TestParsePss(t *testing.T) {
	content := "55d0c0a00000-7ffd5c9b4000 ---p 00000000 00:00 0  [rollup]\nRss:  4264 kB\nPss:  1530 kB\n" +
		"Pss_Dirty:  156 kB\n"
	if got, err := ParsePss([]byte(content)); err != nil || got != 1530*1024 {
		t.Errorf("ParsePss = %d, %v; want %d", got, err, 1530*1024)
	}
	if _, err := ParsePss([]byte("Rss: 4 kB\n")); err == nil {
		t.Error("no Pss line parsed without an error")
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (postgres: checkpointer ) S 4200 4200 4200 0 -1 4194560 2711 0 0 0 150 37 9 4 20 0 1 0 2761043"))
	f.Add([]byte("7 (a (b) c)) R 1 7 7 0 -1 0 0 0 0 0 2 3 0 0 20 0 1 0 5 100 10"))
	f.Fuzz(func(t *testing.T, content []byte) {
		stat, err := ParseStat(content)
		if err == nil && (stat.PID < 0 || stat.PPID < 0) {
			t.Errorf("parsed %+v from %q", stat, content)
		}
	})
}

func FuzzParsePss(f *testing.F) {
	f.Add([]byte("Rss: 4264 kB\nPss: 1530 kB\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		if pss, err := ParsePss(content); err == nil && pss < 0 {
			t.Errorf("negative Pss %d from %q", pss, content)
		}
	})
}

// TestTreeUsageCountsExitedChildren: a child that burns CPU and is waited for moves its
// time into its parent's children times, and the tree's CPU time keeps it.
func TestTreeUsageCountsExitedChildren(t *testing.T) {
	before, err := TreeUsage("/proc", os.Getpid())
	if err != nil {
		t.Skipf("no /proc to read: %v", err)
	}
	if !before.MemoryKnown || before.PssBytes <= 0 {
		t.Errorf("own memory %+v, want a known Pss", before)
	}
	burn := exec.Command("sh", "-c", "end=$(($(date +%s) + 1)); while [ $(date +%s) -le $end ]; do :; done")
	if err := burn.Run(); err != nil {
		t.Fatal(err)
	}
	after, err := TreeUsage("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The loop spins for 1-2 s; on a loaded machine it gets part of a core.
	if spent := time.Duration(after.CPUTicks-before.CPUTicks) * time.Second / ClockTicks; spent < 200*time.Millisecond {
		t.Errorf("the tree spent %s while a child spun for a second", spent)
	}
	if _, err := TreeUsage("/proc", 1<<30); err == nil {
		t.Error("a process that does not exist has a usage")
	}
}

// TestTreeUsageOfAFakeTree sums the CPU times of root and its descendants only, counts
// a zombie's memory as none, and says the memory is unknown once a read fails.
func TestTreeUsageOfAFakeTree(t *testing.T) {
	proc := t.TempDir()
	process := func(pid, ppid int, times string, smaps *string) {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (postgres) S %d 1 1 0 -1 0 0 0 0 0 %s 20 0 1 0 5", pid, ppid, times)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if smaps == nil {
			// A folder in the file's place fails the read, as a denied one does.
			if err := os.Mkdir(filepath.Join(dir, "smaps_rollup"), 0o755); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "smaps_rollup"), []byte(*smaps), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pss := func(kilobytes int) *string { text := fmt.Sprintf("Rss: 9 kB\nPss: %d kB\n", kilobytes); return &text }
	zombie := ""
	process(10, 1, "100 50 30 20", pss(1000))
	process(11, 10, "7 3 0 0", pss(200))
	process(12, 11, "1 1 0 0", &zombie)
	process(13, 1, "999 999 0 0", pss(5000))
	usage, err := TreeUsage(proc, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{CPUTicks: 212, PssBytes: 1200 << 10, MemoryKnown: true}); usage != want {
		t.Errorf("usage %+v, want %+v", usage, want)
	}
	process(14, 10, "0 0 0 0", nil)
	if usage, err := TreeUsage(proc, 10); err != nil || usage.MemoryKnown {
		t.Errorf("usage %+v, %v; want the memory unknown", usage, err)
	}
}

// TestExitedWhileRead counts a process that exits during the read as holding no memory:
// CI saw a backend's ESRCH leave a whole run's memory peak unknown.
func TestExitedWhileRead(t *testing.T) {
	readError := func(err error) error { return &fs.PathError{Op: "read", Path: "/proc/9/smaps_rollup", Err: err} }
	tests := []struct {
		name    string
		content string
		err     error
		exited  bool
	}{
		{name: "memory read", content: "Pss: 9 kB\n"},
		{name: "zombie", exited: true},
		{name: "gone", err: readError(syscall.ENOENT), exited: true},
		{name: "exiting", err: readError(syscall.ESRCH), exited: true},
		{name: "denied", err: readError(syscall.EACCES)},
	}
	for _, test := range tests {
		if exited := exitedWhileRead([]byte(test.content), test.err); exited != test.exited {
			t.Errorf("%s: exited %v, want %v", test.name, exited, test.exited)
		}
	}
}
