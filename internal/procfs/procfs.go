// Package procfs measures what processes spend on Linux from /proc: the CPU time of a
// process tree or of a pod's containers, exited children included, and the memory they
// hold, shared pages counted once. Local runs measure their PostgreSQL servers with it
// (TreeUsage), the meter sidecar an instance pod's containers (CgroupGroups).
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// ClockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture
// since the kernel fixed the user-visible value.
const ClockTicks = 100

// Stat is what logbench reads of /proc/PID/stat.
type Stat struct {
	PID, PPID int
	// Command is the process's name (comm), at most 15 bytes of its executable's.
	Command string
	// UserTicks and SystemTicks are the process's own CPU time; ChildrenUserTicks and
	// ChildrenSystemTicks those of its children it waited for, which left the tree.
	UserTicks, SystemTicks, ChildrenUserTicks, ChildrenSystemTicks uint64
}

// ParseStat reads the content of /proc/PID/stat. The command name, in parentheses, may
// hold spaces and parentheses itself: the fields start after the last ')'.
func ParseStat(content []byte) (Stat, error) {
	open, closing := bytes.IndexByte(content, '('), bytes.LastIndexByte(content, ')')
	if open < 1 || closing < open {
		return Stat{}, errors.New("stat: no command name in parentheses")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(content[:open])))
	if err != nil || pid < 0 {
		return Stat{}, fmt.Errorf("stat: pid %q", bytes.TrimSpace(content[:open]))
	}
	// After the name: state (field 3), ppid (4), ..., utime (14), stime (15), cutime
	// (16), cstime (17).
	fields := bytes.Fields(content[closing+1:])
	if len(fields) < 15 {
		return Stat{}, fmt.Errorf("stat: %d fields after the command name, want at least 15", len(fields))
	}
	stat := Stat{PID: pid, Command: string(content[open+1 : closing])}
	if stat.PPID, err = strconv.Atoi(string(fields[1])); err != nil || stat.PPID < 0 {
		return Stat{}, fmt.Errorf("stat: ppid %q", fields[1])
	}
	times := []*uint64{&stat.UserTicks, &stat.SystemTicks, &stat.ChildrenUserTicks, &stat.ChildrenSystemTicks}
	for i, field := range times {
		// cutime and cstime are signed in the kernel's format, never negative in practice.
		value, err := strconv.ParseInt(string(fields[11+i]), 10, 64)
		if err != nil || value < 0 {
			return Stat{}, fmt.Errorf("stat: CPU time field %d: %q", 14+i, fields[11+i])
		}
		*field = uint64(value)
	}
	return stat, nil
}

// ParsePss reads the Pss line of /proc/PID/smaps_rollup, in bytes: the process's
// resident memory with each shared page divided among the processes that map it, so
// that a tree's sum counts shared memory (PostgreSQL's shared buffers) once. The kernel
// opens smaps_rollup only to a reader that may ptrace the process (PTRACE_MODE_READ: the
// same user, or CAP_SYS_PTRACE).
func ParsePss(content []byte) (int64, error) {
	for line := range bytes.SplitSeq(content, []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) != 3 || string(fields[0]) != "Pss:" || string(fields[2]) != "kB" {
			continue
		}
		return parseKilobytes("smaps_rollup: Pss", fields[1])
	}
	return 0, errors.New("smaps_rollup: no Pss line")
}

// Resident is what a process holds in memory, in bytes, as /proc/PID/status tells it:
// its anonymous pages (RssAnon), the pages of files it maps, its executable and
// libraries among them (RssFile), and its pages of shared memory (RssShmem, PostgreSQL's
// shared buffers). Every user may read status: it needs no ptrace access to the process.
type Resident struct {
	Anonymous, File, Shared int64
}

// residentFields are the lines of /proc/PID/status that Resident holds.
var residentFields = map[string]func(*Resident) *int64{
	"RssAnon:":  func(r *Resident) *int64 { return &r.Anonymous },
	"RssFile:":  func(r *Resident) *int64 { return &r.File },
	"RssShmem:": func(r *Resident) *int64 { return &r.Shared },
}

// ParseResident reads the content of /proc/PID/status. A process without an address
// space (a zombie) has no VmRSS line and holds nothing.
func ParseResident(content []byte) (Resident, error) {
	var resident Resident
	read := map[string]bool{}
	for line := range bytes.SplitSeq(content, []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		name := string(fields[0])
		if name == "VmRSS:" {
			read[name] = true
		}
		field, found := residentFields[name]
		if !found {
			continue
		}
		if len(fields) != 3 || string(fields[2]) != "kB" || read[name] {
			return Resident{}, fmt.Errorf("status: %q", line)
		}
		value, err := parseKilobytes("status: "+name, fields[1])
		if err != nil {
			return Resident{}, err
		}
		*field(&resident) = value
		read[name] = true
	}
	switch len(read) {
	case 0:
		return Resident{}, nil
	case 1 + len(residentFields):
		return resident, nil
	}
	return Resident{}, errors.New("status: want VmRSS, RssAnon, RssFile and RssShmem (Linux 4.5 and later), or none")
}

// parseKilobytes reads a count of kilobytes of /proc, in bytes.
func parseKilobytes(what string, field []byte) (int64, error) {
	kilobytes, err := strconv.ParseInt(string(field), 10, 64)
	if err != nil || kilobytes < 0 || kilobytes > 1<<40 {
		return 0, fmt.Errorf("%s %q", what, field)
	}
	return kilobytes << 10, nil
}

// Program is a process's command (Stat.Command) and what it holds (ParseResident).
type Program struct {
	Command string
	Resident
}

// EstimateResident estimates the memory processes hold together, shared pages counted
// once, from what /proc/PID/status says each holds: the anonymous memory of every
// process, plus the file-backed and the shared memory of each program (processes of one
// command) once, as much as its process holding the most. The processes of one program
// map the same executable, libraries and shared memory, which status counts whole in
// each of them. Against the proportional set size, which needs ptrace access, it counts
// the anonymous pages a forked child still shares with its parent (copy on write) in
// both, and leaves out the file and shared pages that only the program's smaller
// processes hold.
func EstimateResident(processes []Program) int64 {
	var total int64
	largest := map[string]Resident{}
	for _, process := range processes {
		total += process.Anonymous
		program := largest[process.Command]
		largest[process.Command] = Resident{
			File:   max(program.File, process.File),
			Shared: max(program.Shared, process.Shared),
		}
	}
	for _, program := range largest {
		total += program.File + program.Shared
	}
	return total
}

// Usage is what processes spent or hold at one moment.
type Usage struct {
	// CPUTicks is the CPU time of the processes and of the children they waited for, in
	// ClockTicks; CPUKnown is false when processes kept being reaped while it was
	// read, so that no reading could be shown to count each of them exactly once.
	CPUTicks uint64
	CPUKnown bool
	// MemoryBytes is the memory the processes hold, shared pages counted once: exact for
	// a tree (the proportional set sizes summed), estimated for a cgroup's processes
	// (EstimateResident); MemoryKnown is false when a process's memory could not be read
	// (a tree's process of another user, without the privilege).
	MemoryBytes int64
	MemoryKnown bool
}

// Plus is the usage of u's processes and o's together.
func (u Usage) Plus(o Usage) Usage {
	return Usage{
		CPUTicks:    u.CPUTicks + o.CPUTicks,
		CPUKnown:    u.CPUKnown && o.CPUKnown,
		MemoryBytes: u.MemoryBytes + o.MemoryBytes,
		MemoryKnown: u.MemoryKnown && o.MemoryKnown,
	}
}

// TreeUsage reads the usage of root and every process descending from it under the proc
// folder (normally /proc), their memory as proportional set sizes (ParsePss), which needs
// ptrace access to each. Processes that exit while it reads are left out.
func TreeUsage(proc string, root int) (Usage, error) {
	return treeUsage(os.DirFS(proc), root)
}

func treeUsage(proc fs.FS, root int) (Usage, error) {
	processes, settled, err := readSettled(proc, false)
	if err != nil {
		return Usage{}, err
	}
	stats := map[int]Stat{}
	for pid, process := range processes {
		stats[pid] = process.Stat
	}
	if _, found := stats[root]; !found {
		return Usage{}, fmt.Errorf("process %d is not running", root)
	}
	usage := Usage{CPUKnown: settled}
	var tree []Stat
	for pid, stat := range stats {
		if descends(stats, pid, root) {
			usage.CPUTicks += stat.cpuTicks()
			tree = append(tree, stat)
		}
	}
	usage.MemoryBytes, usage.MemoryKnown = proportionalMemory(proc, tree)
	return usage, nil
}

// Group is what the processes of one cgroup, one container of a pod, spend or hold.
type Group struct {
	Usage
	// Cgroup is its processes' /proc/PID/cgroup, as this process's cgroup namespace
	// shows it: equal for the processes of one container, different between containers.
	Cgroup string
	// PIDs and Commands are its processes'.
	PIDs     []int
	Commands []string
}

// CgroupGroups reads every process under proc and sums their usage by cgroup, their
// memory estimated from the files of /proc that every user may read (EstimateResident),
// so that the reader needs no access to the processes of another user. In a pod that
// shares its process namespace, a group is a container.
func CgroupGroups(proc string) ([]Group, error) {
	return cgroupGroups(os.DirFS(proc))
}

func cgroupGroups(proc fs.FS) ([]Group, error) {
	processes, settled, err := readSettled(proc, true)
	if err != nil {
		return nil, err
	}
	var groups []Group
	var members [][]Stat
	index := map[string]int{}
	for _, pid := range slices.Sorted(maps.Keys(processes)) {
		process := processes[pid]
		i, found := index[process.cgroup]
		if !found {
			i = len(groups)
			index[process.cgroup] = i
			groups = append(groups, Group{Usage: Usage{CPUKnown: settled}, Cgroup: process.cgroup})
			members = append(members, nil)
		}
		group := &groups[i]
		group.CPUTicks += process.cpuTicks()
		group.PIDs = append(group.PIDs, pid)
		group.Commands = append(group.Commands, process.Command)
		members[i] = append(members[i], process.Stat)
	}
	for i := range groups {
		groups[i].MemoryBytes, groups[i].MemoryKnown = residentMemory(proc, members[i])
	}
	return groups, nil
}

// A reading of /proc is not one moment: a parent read before it reaps a child whose
// stat is then gone counts that child's CPU time nowhere, and a child read before its
// parent reaps it and the parent read after count it twice. When pgbench disconnects,
// every backend exits at once while the meter reads. So a reading counts only when a
// second one right after it shows no process of the first gone and no parent's
// children times changed: then no process was reaped, in or out of sight, while the
// first was taken. Readings are retried settleAttempts times settlePause apart.
const settleAttempts = 25

var settlePause = 20 * time.Millisecond

// process is what one reading holds of a process.
type process struct {
	Stat
	cgroup string
}

// readSettled reads every process under proc, with its cgroup when asked, and reports
// whether the reading settled: when it did not, the CPU times are not to be trusted.
func readSettled(proc fs.FS, withCgroup bool) (map[int]process, bool, error) {
	var first map[int]process
	for attempt := range settleAttempts {
		if attempt > 0 {
			time.Sleep(settlePause)
		}
		var err error
		if first, err = readProcesses(proc, withCgroup); err != nil {
			return nil, false, err
		}
		second, err := readProcesses(proc, false)
		if err != nil {
			return nil, false, err
		}
		if noneReaped(first, second) {
			return first, true, nil
		}
	}
	return first, false, nil
}

// noneReaped reports whether every process of the earlier reading is still there in the
// later one with the same children times.
func noneReaped(earlier, later map[int]process) bool {
	for pid, before := range earlier {
		after, found := later[pid]
		if !found || after.ChildrenUserTicks != before.ChildrenUserTicks ||
			after.ChildrenSystemTicks != before.ChildrenSystemTicks {
			return false
		}
	}
	return true
}

// readProcesses reads /proc/PID/stat, and /proc/PID/cgroup when asked, of every process
// under proc. A process that exits meanwhile is left out.
func readProcesses(proc fs.FS, withCgroup bool) (map[int]process, error) {
	entries, err := fs.ReadDir(proc, ".")
	if err != nil {
		return nil, err
	}
	processes := map[int]process{}
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		content, err := fs.ReadFile(proc, path.Join(entry.Name(), "stat"))
		if err != nil {
			continue
		}
		stat, err := ParseStat(content)
		if err != nil || stat.PID != pid {
			continue
		}
		read := process{Stat: stat}
		if withCgroup {
			cgroup, err := fs.ReadFile(proc, path.Join(entry.Name(), "cgroup"))
			if err != nil {
				continue
			}
			read.cgroup = string(cgroup)
		}
		processes[pid] = read
	}
	return processes, nil
}

// cpuTicks is the process's CPU time and that of the children it waited for.
func (s Stat) cpuTicks() uint64 {
	return s.UserTicks + s.SystemTicks + s.ChildrenUserTicks + s.ChildrenSystemTicks
}

// proportionalMemory sums the processes' proportional set sizes (ParsePss); known is
// false when one could not be read.
func proportionalMemory(proc fs.FS, processes []Stat) (total int64, known bool) {
	for _, stat := range processes {
		content, exited, err := readMemory(proc, stat.PID, "smaps_rollup")
		if exited {
			continue
		}
		if err != nil {
			return 0, false // another user's, without the privilege
		}
		pss, err := ParsePss(content)
		if err != nil {
			return 0, false
		}
		total += pss
	}
	return total, true
}

// residentMemory estimates the memory the processes hold together from their
// /proc/PID/status (EstimateResident); known is false when one could not be read.
func residentMemory(proc fs.FS, processes []Stat) (total int64, known bool) {
	var programs []Program
	for _, stat := range processes {
		content, exited, err := readMemory(proc, stat.PID, "status")
		if exited {
			continue
		}
		if err != nil {
			return 0, false
		}
		resident, err := ParseResident(content)
		if err != nil {
			return 0, false
		}
		programs = append(programs, Program{Command: stat.Command, Resident: resident})
	}
	return EstimateResident(programs), true
}

// readMemory reads the file of /proc/PID that tells a process's memory, and whether the
// process exited meanwhile, holding no memory any more.
func readMemory(proc fs.FS, pid int, name string) (content []byte, exited bool, err error) {
	content, err = fs.ReadFile(proc, path.Join(strconv.Itoa(pid), name))
	if exitedWhileRead(content, err) {
		return nil, true, nil
	}
	return content, false, err
}

// exitedWhileRead tells a process that left between the listing and the read of its
// memory, holding none any more, from one whose memory cannot be read: gone (ENOENT),
// exiting with its memory already released (ESRCH, as backends do when pgbench
// disconnects), or a zombie (an empty smaps_rollup).
func exitedWhileRead(content []byte, err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) || (err == nil && len(content) == 0)
}

// descends reports whether pid is root or one of its descendants.
func descends(stats map[int]Stat, pid, root int) bool {
	for range len(stats) {
		if pid == root {
			return true
		}
		stat, found := stats[pid]
		if !found || stat.PPID == pid {
			return false
		}
		pid = stat.PPID
	}
	return false
}
