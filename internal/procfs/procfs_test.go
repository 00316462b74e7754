package procfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbench/logbench/internal/procfs/procfstest"
	"github.com/logbench/logbench/internal/testenv"
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

func TestParseResident(t *testing.T) {
	const live = "Name:\tpostgres\nVmHWM:\t  9000 kB\nVmRSS:\t  8000 kB\nRssAnon:\t  1200 kB\n" +
		"RssFile:\t  2800 kB\nRssShmem:\t  4000 kB\nVmData:\t  3000 kB\n"
	tests := []struct {
		name, content string
		want          Resident
		fails         bool
	}{
		{name: "backend", content: live, want: Resident{Anonymous: 1200 << 10, File: 2800 << 10, Shared: 4000 << 10}},
		{name: "zombie", content: "Name:\tpostgres\nState:\tZ (zombie)\nThreads:\t1\n"},
		{name: "Linux before 4.5", content: "Name:\tpostgres\nVmRSS:\t  8000 kB\n", fails: true},
		{name: "a line missing", content: strings.Replace(live, "RssShmem", "Other", 1), fails: true},
		{name: "a line twice", content: live + "RssAnon:\t 1 kB\n", fails: true},
		{name: "no unit", content: strings.Replace(live, "1200 kB", "1200", 1), fails: true},
		{name: "negative", content: strings.Replace(live, "1200", "-1200", 1), fails: true},
		{name: "beyond a petabyte", content: strings.Replace(live, "1200", "1099511627777", 1), fails: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			got, err := ParseResident([]byte(test.content))
			if (err != nil) != test.fails || got != test.want {
				t.Errorf("ParseResident = %+v, %v; want %+v, failing %v", got, err, test.want, test.fails)
			}
		})
	}
}

// TestEstimateResident counts every process's anonymous memory, and each program's
// file-backed and shared memory once, as much as its largest process holds.
func TestEstimateResident(t *testing.T) {
	program := func(command string, anonymous, file, shared int64) Program {
		return Program{Command: command, Resident: Resident{Anonymous: anonymous, File: file, Shared: shared}}
	}
	tests := []struct {
		name      string
		processes []Program
		want      int64
	}{
		{name: "none"},
		{name: "one process: its resident memory", processes: []Program{program("fluent-bit", 30, 20, 1)}, want: 51},
		{name: "a postmaster and its backends: shared buffers once", processes: []Program{
			program("postgres", 2, 8, 30), program("postgres", 3, 7, 50), program("postgres", 4, 9, 10),
		}, want: 2 + 3 + 4 + 9 + 50},
		{name: "two programs in one container: each one's files", processes: []Program{
			program("manager", 20, 15, 0), program("postgres", 2, 8, 30), program("postgres", 3, 7, 50),
		}, want: 20 + 15 + 2 + 3 + 8 + 50},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			if got := EstimateResident(test.processes); got != test.want {
				t.Errorf("EstimateResident = %d, want %d", got, test.want)
			}
		})
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

func FuzzParseResident(f *testing.F) {
	f.Add([]byte("VmRSS:\t8000 kB\nRssAnon:\t1200 kB\nRssFile:\t2800 kB\nRssShmem:\t4000 kB\n"))
	f.Add([]byte("Name:\tpostgres\nState:\tZ (zombie)\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		if resident, err := ParseResident(content); err == nil &&
			(resident.Anonymous < 0 || resident.File < 0 || resident.Shared < 0) {
			t.Errorf("negative memory %+v from %q", resident, content)
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
	if !before.MemoryKnown || before.MemoryBytes <= 0 {
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

// TestMain makes the test binary the child of TestTreeUsageCountsExitedChildren when run
// with PROCFS_BURN_CPU set: it spins until it has used burnCPU of CPU time; and that of
// TestAnotherUserMeasures with measuredAsAnotherUser set.
func TestMain(m *testing.M) {
	if pid := os.Getenv(measuredAsAnotherUser); pid != "" {
		measureAsAnotherUser(pid)
		return
	}
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

// TestTreeUsageOfAFakeTree sums the CPU times and the proportional set sizes of root and
// its descendants only, counts a zombie's memory as none, and says the memory is unknown
// once a read fails.
func TestTreeUsageOfAFakeTree(t *testing.T) {
	proc := procfstest.New(t)
	proc.Process(10, 1, "postgres", "100 50 30 20", procfstest.Holding(1000, 500, 4000, 9000), "")
	proc.Process(11, 10, "postgres", "7 3 0 0", procfstest.Holding(200, 100, 3000, 2000), "")
	proc.Process(12, 11, "postgres", "1 1 0 0", procfstest.Zombie, "")
	proc.Process(13, 1, "postgres", "999 999 0 0", procfstest.Pss(5000), "")
	usage, err := TreeUsage(proc.Root, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{CPUTicks: 212, CPUKnown: true, MemoryBytes: 1200 << 10, MemoryKnown: true}); usage != want {
		t.Errorf("usage %+v, want %+v", usage, want)
	}
	proc.Process(14, 10, "postgres", "0 0 0 0", procfstest.Pss(10).Denied(), "")
	if usage, err := TreeUsage(proc.Root, 10); err != nil || usage.MemoryKnown {
		t.Errorf("usage %+v, %v; want the memory unknown", usage, err)
	}
}

// TestCgroupGroups sums a pod's processes by container, as its cgroup tells them, in
// the order of their lowest PID, their memory estimated from their status files, which
// a meter running as another user than the containers' may read where it may not read
// their smaps_rollup; a zombie holds nothing.
func TestCgroupGroups(t *testing.T) {
	proc := procfstest.New(t)
	const pause, postgres, shipper = "0::/../pause\n", "0::/../postgres\n", "0::/\n"
	proc.Process(1, 0, "pause", "0 1 0 0", procfstest.Holding(100, 40, 60, 0).Denied(), pause)
	proc.Process(7, 0, "manager", "50 10 0 0", procfstest.Holding(3000, 2000, 1500, 0).Denied(), postgres)
	proc.Process(20, 7, "postgres", "100 50 30 20", procfstest.Holding(1000, 200, 800, 3000).Denied(), postgres)
	proc.Process(21, 20, "postgres", "7 3 0 0", procfstest.Holding(200, 300, 700, 5000).Denied(), postgres)
	proc.Process(22, 20, "postgres", "1 0 0 0", procfstest.Zombie, postgres)
	proc.Process(30, 0, "fluent-bit", "40 2 0 0", procfstest.Holding(9000, 8000, 1200, 0).Denied(), shipper)
	groups, err := CgroupGroups(proc.Root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{
		{Usage: Usage{CPUTicks: 1, CPUKnown: true, MemoryBytes: 100 << 10, MemoryKnown: true}, Cgroup: pause,
			PIDs: []int{1}, Commands: []string{"pause"}},
		{Usage: Usage{CPUTicks: 271, CPUKnown: true, MemoryBytes: (2000 + 1500 + 200 + 300 + 800 + 5000) << 10, MemoryKnown: true},
			Cgroup: postgres, PIDs: []int{7, 20, 21, 22}, Commands: []string{"manager", "postgres", "postgres", "postgres"}},
		{Usage: Usage{CPUTicks: 42, CPUKnown: true, MemoryBytes: 9200 << 10, MemoryKnown: true}, Cgroup: shipper,
			PIDs: []int{30}, Commands: []string{"fluent-bit"}},
	}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("groups\n%+v\nwant\n%+v", groups, want)
	}
}

// TestExitedWhileRead counts a process that exits during the read as holding no memory:
// otherwise one backend's ESRCH would leave a whole run's memory peak unknown.
func TestExitedWhileRead(t *testing.T) {
	readError := func(err error) error { return &fs.PathError{Op: "read", Path: "/proc/9/smaps_rollup", Err: err} }
	tests := []struct {
		name    string
		content string
		err     error
		exited  bool
	}{
		{name: "memory read", content: "Pss: 9 kB\n"},
		{name: "zombie's status, parsed as holding nothing", content: "Name:\tpostgres\nState:\tZ (zombie)\n"},
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
// whether the parent was read before it (the order when the parent's PID is lower:
// counted nowhere, the child's time would bring a server's CPU near zero) or after it (a
// wrapped PID: counted twice), and says the CPU is unknown when reaping never stops.
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

// measuredAsAnotherUser names, to the test binary run by TestAnotherUserMeasures, the
// process it measures.
const measuredAsAnotherUser = "PROCFS_MEASURE_AS_ANOTHER_USER"

// anotherUser is a user with no process on the machine, as the meter is in a pod.
const anotherUser = 65532

// sightOfAnotherUser is what a process of anotherUser reaches of another user's process.
type sightOfAnotherUser struct {
	// EnvironError and RootError are those of reading its environment and listing its
	// root folder, which hold a pod's secrets; empty when the read succeeded.
	EnvironError, RootError string
	// Group is its cgroup's usage (CgroupGroups), Tree its own (TreeUsage).
	Group, Tree Usage
	Found       bool
}

// TestAnotherUserMeasures runs the test binary as a user without privileges, as the meter
// runs beside PostgreSQL, against this process: the kernel refuses it this process's
// environment and root folder, and the proportional set size (so TreeUsage's memory is
// unknown), yet CgroupGroups measures this process's CPU time and memory.
func TestAnotherUserMeasures(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "starting a process as another user needs root")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc to read: %v", err)
	}
	// The other user must reach the binary: go test's own folder is private.
	executable, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(executable)
	if err != nil {
		t.Fatal(err)
	}
	folder, err := os.MkdirTemp("", "procfs-another-user")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(folder) })
	binary := filepath.Join(folder, "procfs.test")
	if err := os.Chmod(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, content, 0o755); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(binary, "-test.run=^$")
	child.Env = append(os.Environ(), measuredAsAnotherUser+"="+strconv.Itoa(os.Getpid()))
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: anotherUser, Gid: anotherUser, Groups: []uint32{}}}
	output, err := child.Output()
	var exited *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exited):
		// A sandbox without CAP_SETUID, or a /tmp mounted noexec.
		testenv.Missing(t, "cannot start the test binary as user %d here: %v", anotherUser, err)
	case err != nil:
		t.Fatalf("the test binary as user %d: %v\n%s", anotherUser, err, exited.Stderr)
	}
	var sight sightOfAnotherUser
	if err := json.Unmarshal(output, &sight); err != nil {
		t.Fatalf("%v: %s", err, output)
	}
	if !sight.Found {
		t.Fatalf("user %d found no cgroup holding process %d", anotherUser, os.Getpid())
	}
	if sight.EnvironError == "" || sight.RootError == "" {
		t.Errorf("user %d read this process's environment (error %q) or root (error %q)",
			anotherUser, sight.EnvironError, sight.RootError)
	}
	if sight.Tree.MemoryKnown {
		t.Errorf("user %d read this process's proportional set size: %+v; the test proves nothing here", anotherUser, sight.Tree)
	}
	if group := sight.Group; !group.CPUKnown || group.CPUTicks == 0 || !group.MemoryKnown || group.MemoryBytes < 1<<20 {
		t.Errorf("user %d measured this process's cgroup as %+v, want its CPU time and memory", anotherUser, group)
	}
}

// measureAsAnotherUser prints, as JSON, the sightOfAnotherUser this process has of the
// process pid.
func measureAsAnotherUser(pid string) {
	var sight sightOfAnotherUser
	if _, err := os.ReadFile(filepath.Join("/proc", pid, "environ")); err != nil {
		sight.EnvironError = err.Error()
	}
	if _, err := os.ReadDir(filepath.Join("/proc", pid, "root")); err != nil {
		sight.RootError = err.Error()
	}
	measured, err := strconv.Atoi(pid)
	if err != nil {
		panic(err)
	}
	if sight.Tree, err = TreeUsage("/proc", measured); err != nil {
		panic(err)
	}
	groups, err := CgroupGroups("/proc")
	if err != nil {
		panic(err)
	}
	for _, group := range groups {
		if slices.Contains(group.PIDs, measured) {
			sight.Group, sight.Found = group.Usage, true
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(sight); err != nil {
		panic(err)
	}
}
