package procfs

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/logbench/logbench/internal/procfs/procfstest"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, content string
		want          Stat
		fails         bool
	}{
		{name: "postgres backend", want: Stat{PID: 4242, PPID: 4200, Command: "postgres", UserTicks: 150, SystemTicks: 37,
			ChildrenUserTicks: 9, ChildrenSystemTicks: 4},
			content: "4242 (postgres) S 4200 4200 4200 0 -1 4194560 2711 0 0 0 150 37 9 4 20 0 1 0 2761043 229617664 3000 " +
				"18446744073709551615 1 1 0 0 0 0 4194304 19935232 1249 0 0 0 17 1 0 0 0 0 0\n"},
		{name: "name with spaces and parentheses", want: Stat{PID: 7, PPID: 1, Command: "a (b) c)", UserTicks: 2, SystemTicks: 3},
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
	// The child burns a set amount of CPU time, however loaded the machine.
	burn := exec.Command(os.Args[0])
	burn.Env = append(os.Environ(), "PROCFS_BURN_CPU=1")
	if output, err := burn.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, output)
	}
	after, err := TreeUsage("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !after.CPUKnown {
		t.Fatalf("usage %+v: CPU unknown with no child exiting", after)
	}
	if spent := time.Duration(after.CPUTicks-before.CPUTicks) * time.Second / ClockTicks; spent < burnCPU-20*time.Millisecond {
		t.Errorf("the tree spent %s while a child burnt %s", spent, burnCPU)
	}
	if _, err := TreeUsage("/proc", 1<<30); err == nil {
		t.Error("a process that does not exist has a usage")
	}
}

const burnCPU = 300 * time.Millisecond

// TestMain makes the test binary, run with PROCFS_BURN_CPU set, the child of
// TestTreeUsageCountsExitedChildren: it spins until it has used burnCPU of CPU time.
func TestMain(m *testing.M) {
	if os.Getenv("PROCFS_BURN_CPU") == "" {
		os.Exit(m.Run())
	}
	for {
		var usage syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
			panic(err)
		}
		if time.Duration(usage.Utime.Nano()+usage.Stime.Nano()) >= burnCPU {
			os.Exit(0)
		}
	}
}

// TestTreeUsageOfAFakeTree sums the CPU times of root and its descendants only, counts
// a zombie's memory as none, and says the memory is unknown once a read fails.
func TestTreeUsageOfAFakeTree(t *testing.T) {
	proc := procfstest.New(t)
	zombie := ""
	proc.Process(10, 1, "postgres", "100 50 30 20", procfstest.Pss(1000), "")
	proc.Process(11, 10, "postgres", "7 3 0 0", procfstest.Pss(200), "")
	proc.Process(12, 11, "postgres", "1 1 0 0", &zombie, "")
	proc.Process(13, 1, "postgres", "999 999 0 0", procfstest.Pss(5000), "")
	usage, err := TreeUsage(proc.Root, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{CPUTicks: 212, CPUKnown: true, PssBytes: 1200 << 10, MemoryKnown: true}); usage != want {
		t.Errorf("usage %+v, want %+v", usage, want)
	}
	proc.Process(14, 10, "postgres", "0 0 0 0", nil, "")
	if usage, err := TreeUsage(proc.Root, 10); err != nil || usage.MemoryKnown {
		t.Errorf("usage %+v, %v; want the memory unknown", usage, err)
	}
}

// TestCgroupGroups sums a pod's processes by container, as its cgroup tells them, in
// the order of their lowest PID; a denied read leaves only its group's memory unknown.
func TestCgroupGroups(t *testing.T) {
	proc := procfstest.New(t)
	const pause, postgres, shipper = "0::/../pause\n", "0::/../postgres\n", "0::/\n"
	proc.Process(1, 0, "pause", "0 1 0 0", nil, pause)
	proc.Process(7, 0, "manager", "50 10 0 0", procfstest.Pss(3000), postgres)
	proc.Process(20, 7, "postgres", "100 50 30 20", procfstest.Pss(1000), postgres)
	proc.Process(21, 20, "postgres", "7 3 0 0", procfstest.Pss(200), postgres)
	proc.Process(30, 0, "fluent-bit", "40 2 0 0", procfstest.Pss(9000), shipper)
	groups, err := CgroupGroups(proc.Root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{
		{Usage: Usage{CPUTicks: 1, CPUKnown: true}, Cgroup: pause, PIDs: []int{1}, Commands: []string{"pause"}},
		{Usage: Usage{CPUTicks: 270, CPUKnown: true, PssBytes: 4200 << 10, MemoryKnown: true}, Cgroup: postgres,
			PIDs: []int{7, 20, 21}, Commands: []string{"manager", "postgres", "postgres"}},
		{Usage: Usage{CPUTicks: 42, CPUKnown: true, PssBytes: 9000 << 10, MemoryKnown: true}, Cgroup: shipper,
			PIDs: []int{30}, Commands: []string{"fluent-bit"}},
	}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("groups\n%+v\nwant\n%+v", groups, want)
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

// reapingFS serves a fake /proc and calls reap right after the first read of the file
// named trigger (every read when always), as a parent reaping a child between the
// meter's reads would.
type reapingFS struct {
	fs.FS
	trigger string
	always  bool
	reap    func()
	fired   bool
}

func (r *reapingFS) ReadFile(name string) ([]byte, error) {
	content, err := fs.ReadFile(r.FS, name)
	if name == r.trigger && (r.always || !r.fired) {
		r.fired = true
		r.reap()
	}
	return content, err
}

// TestReapedWhileRead counts a child reaped in the middle of a reading exactly once,
// whether the parent was read before it (today's order when the parent's PID is lower:
// the child's time was counted nowhere, and CI's server CPU came out near zero) or after
// it (a wrapped PID: counted twice), and says the CPU is unknown when reaping never
// stops.
func TestReapedWhileRead(t *testing.T) {
	defer func(pause time.Duration) { settlePause = pause }(settlePause)
	settlePause = time.Millisecond
	const container = "0::/../postgres\n"
	tests := []struct {
		name              string
		parent, child     int
		trigger           string
		always, cpuKnown  bool
		wantTicks         uint64
		childAfterReaping bool
	}{
		{name: "parent read first", parent: 20, child: 21, trigger: "20/stat", cpuKnown: true, wantTicks: 150 + 1000},
		{name: "child read first", parent: 20, child: 5, trigger: "5/stat", cpuKnown: true, wantTicks: 150 + 1000},
		{name: "reaping never stops", parent: 20, child: 21, trigger: "20/stat", always: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			proc := procfstest.New(t)
			proc.Process(20, 7, "postgres", "100 50 0 0", procfstest.Pss(1000), container)
			proc.Process(test.child, 20, "postgres", "600 400 0 0", procfstest.Pss(200), container)
			reaped := uint64(0)
			fsys := &reapingFS{FS: os.DirFS(proc.Root), trigger: test.trigger, always: test.always, reap: func() {
				// The child exits and its parent waits for it: the child's times move
				// into the parent's children times. Another child then appears, for the
				// case where reaping never stops.
				reaped += 1000
				if err := os.RemoveAll(filepath.Join(proc.Root, strconv.Itoa(test.child))); err != nil {
					t.Fatal(err)
				}
				proc.Process(20, 7, "postgres", fmt.Sprintf("100 50 %d 0", reaped), procfstest.Pss(1000), container)
				if test.always {
					proc.Process(test.child, 20, "postgres", "600 400 0 0", procfstest.Pss(200), container)
				}
			}}
			groups, err := cgroupGroups(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if len(groups) != 1 {
				t.Fatalf("groups %+v, want one", groups)
			}
			usage := groups[0].Usage
			if usage.CPUKnown != test.cpuKnown || (test.cpuKnown && usage.CPUTicks != test.wantTicks) {
				t.Errorf("usage %+v, want CPU known %v with %d ticks", usage, test.cpuKnown, test.wantTicks)
			}
		})
	}
}
