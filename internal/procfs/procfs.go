// Package procfs measures what a process tree spends on Linux from /proc: the CPU time
// of the tree, exited children included, and the memory it holds, shared pages counted
// once. Local runs measure their PostgreSQL servers with it.
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
// that a tree's sum counts shared memory (PostgreSQL's shared buffers) once.
func ParsePss(content []byte) (int64, error) {
	for line := range bytes.SplitSeq(content, []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) != 3 || string(fields[0]) != "Pss:" || string(fields[2]) != "kB" {
			continue
		}
		kilobytes, err := strconv.ParseInt(string(fields[1]), 10, 64)
		if err != nil || kilobytes < 0 || kilobytes > 1<<40 {
			return 0, fmt.Errorf("smaps_rollup: Pss %q", fields[1])
		}
		return kilobytes << 10, nil
	}
	return 0, errors.New("smaps_rollup: no Pss line")
}

// Usage is what a process tree spent or holds at one moment.
type Usage struct {
	// CPUTicks is the CPU time of the tree's processes and of the children they waited
	// for, in ClockTicks; CPUKnown is false when processes kept being reaped while it was
	// read, so that no reading could be shown to count each of them exactly once.
	CPUTicks uint64
	CPUKnown bool
	// PssBytes is the memory the tree holds (ParsePss summed); MemoryKnown is false when
	// a process's memory could not be read (another user's, without the privilege).
	PssBytes    int64
	MemoryKnown bool
}

// Plus is the usage of u's processes and o's together.
func (u Usage) Plus(o Usage) Usage {
	return Usage{
		CPUTicks:    u.CPUTicks + o.CPUTicks,
		CPUKnown:    u.CPUKnown && o.CPUKnown,
		PssBytes:    u.PssBytes + o.PssBytes,
		MemoryKnown: u.MemoryKnown && o.MemoryKnown,
	}
}

// TreeUsage reads the usage of root and every process descending from it under the proc
// folder (normally /proc). Processes that exit while it reads are left out.
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
	usage := Usage{CPUKnown: settled, MemoryKnown: true}
	for pid, stat := range stats {
		if descends(stats, pid, root) {
			usage.add(proc, stat)
		}
	}
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

// CgroupGroups reads every process under proc and sums their usage by cgroup. In a pod
// that shares its process namespace, a group is a container.
func CgroupGroups(proc string) ([]Group, error) {
	return cgroupGroups(os.DirFS(proc))
}

func cgroupGroups(proc fs.FS) ([]Group, error) {
	processes, settled, err := readSettled(proc, true)
	if err != nil {
		return nil, err
	}
	var groups []Group
	index := map[string]int{}
	for _, pid := range slices.Sorted(maps.Keys(processes)) {
		process := processes[pid]
		i, found := index[process.cgroup]
		if !found {
			i = len(groups)
			index[process.cgroup] = i
			groups = append(groups, Group{Usage: Usage{CPUKnown: settled, MemoryKnown: true}, Cgroup: process.cgroup})
		}
		group := &groups[i]
		group.add(proc, process.Stat)
		group.PIDs = append(group.PIDs, pid)
		group.Commands = append(group.Commands, process.Command)
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

// add counts a process's CPU time and memory in u.
func (u *Usage) add(proc fs.FS, stat Stat) {
	u.CPUTicks += stat.UserTicks + stat.SystemTicks + stat.ChildrenUserTicks + stat.ChildrenSystemTicks
	content, err := fs.ReadFile(proc, path.Join(strconv.Itoa(stat.PID), "smaps_rollup"))
	switch {
	case exitedWhileRead(content, err):
		return
	case err != nil:
		u.MemoryKnown = false // another user's, without the privilege
		return
	}
	pss, err := ParsePss(content)
	if err != nil {
		u.MemoryKnown = false
	}
	u.PssBytes += pss
}

// exitedWhileRead tells a process that left between the listing and the read of its
// smaps_rollup, holding no memory any more, from one whose memory cannot be read: gone
// (ENOENT), exiting with its memory already released (ESRCH, as backends do when pgbench
// disconnects), or a zombie (empty).
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
