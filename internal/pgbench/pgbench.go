// Package pgbench builds pgbench command lines and reads pgbench's report. Parse
// understands the reports of pgbench 13 to 18.
package pgbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Options describe one pgbench run of script files.
type Options struct {
	Scripts []Script
	Clients int
	Threads int
	// Duration of the run (-T); ignored when Transactions is set.
	Duration time.Duration
	// Transactions per client (-t), for runs whose size must be known in advance.
	Transactions int
	QueryMode    v1alpha1.QueryMode
	Scale        int
}

// Script is a script file of a run and its weight: each transaction runs one of the
// run's scripts, drawn in proportion to their weights.
type Script struct {
	File   string
	Weight int32
}

// progressAfterRun is added to the run's length to get a progress interval (-P) that
// never fires: pgbench prints the latency standard deviation only when -P is given,
// and progress lines are noise in the report.
const progressAfterRun = time.Hour

// transactionRunProgress is the -P interval for -t runs, whose length is unknown.
const transactionRunProgress = 24 * time.Hour

// RunArgs returns the arguments of a benchmark run; libpq's environment chooses the
// server.
func RunArgs(o Options) []string {
	// -n: without it pgbench vacuums and truncates pgbench_history under the run's
	// application_name before starting, adding records to the run's count.
	args := []string{"-n"}
	for _, script := range o.Scripts {
		// pgbench splits the weight off at the last '@', so a file name may hold one.
		args = append(args, "-f", script.File+"@"+strconv.Itoa(int(script.Weight)))
	}
	args = append(args,
		// Custom scripts do not detect the scale; the builtins' random ranges need it.
		"-D", "scale="+strconv.Itoa(o.Scale),
		"-M", strings.ToLower(string(o.QueryMode)),
		"-c", strconv.Itoa(o.Clients),
		"-j", strconv.Itoa(o.Threads),
		"-r",
	)
	if o.Transactions > 0 {
		args = append(args, "-t", strconv.Itoa(o.Transactions))
		return append(args, "-P", seconds(transactionRunProgress))
	}
	args = append(args, "-T", seconds(o.Duration))
	return append(args, "-P", seconds(o.Duration+progressAfterRun))
}

// InitArgs returns the arguments that create the pgbench tables.
func InitArgs(scale int, unlogged bool) []string {
	args := []string{"-i", "-s", strconv.Itoa(scale), "-q"}
	if unlogged {
		args = append(args, "--unlogged-tables")
	}
	return args
}

// seconds renders d as whole seconds, rounded up: pgbench takes no fractions.
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// Result is pgbench's report of a run.
type Result struct {
	// Transactions processed successfully.
	Transactions int64
	// Failed transactions (serialization or deadlock errors not retried; pgbench 15+).
	Failed int64
	// Retried transactions (pgbench 15+ with --max-tries other than 1).
	Retried int64
	// TPS without the initial connection time.
	TPS             float64
	LatencyAvgMs    float64
	LatencyStdDevMs float64
	// Statements are the -r report: every command of the script, meta-commands
	// included, in script order.
	Statements []StatementStat
	// Scripts are each script's share of a run of several, in the order of their -f
	// options; pgbench reports none for a run of one.
	Scripts []ScriptStat
}

// ScriptStat is one script's report in a run of several.
type ScriptStat struct {
	Transactions int64
	Failed       int64
	TPS          float64
	LatencyAvgMs float64
	// LatencyStdDevMs is nil where pgbench printed NaN: with several threads it adds the
	// scripts' figures up without a lock, which can leave a variance below zero.
	LatencyStdDevMs *float64
}

// StatementStat is one command of the per-command report (-r).
type StatementStat struct {
	LatencyMs float64
	// Failures and Retries are printed by pgbench 15 and later only.
	Failures int64
	Retries  int64
	// SQL is the command's first line as pgbench prints it (long lines may be cut).
	SQL string
}

// Report lines, by the text that starts them.
const (
	processedPrefix = "number of transactions actually processed: "
	failedPrefix    = "number of failed transactions: "
	retriedPrefix   = "number of transactions retried: "
	latencyPrefix   = "latency average = "
	stddevPrefix    = "latency stddev = "
	tpsPrefix       = "tps = "
	commandsHeader  = "statement latencies in milliseconds"
	// A run of several scripts reports each after a line "SQL script N: FILE", in lines
	// that start with scriptLine.
	scriptHeader = "SQL script "
	scriptLine   = " - "
	// A script's transactions: "N transactions (P% of total, tps = T)" up to pgbench 17,
	// "N transactions (P% of total)" then "number of transactions actually processed: N
	// (tps = T)" from pgbench 18; T follows tpsPrefix.
	scriptTransactions = " transactions ("
)

// TPS line suffixes that mean "without connection time": pgbench 14+ prints the first,
// pgbench 13 the second (next to an "including connections establishing" line).
var tpsWithoutConnections = []string{"(without initial connection time)", "(excluding connections establishing)"}

// Parse reads pgbench's report from its combined output. Progress lines, notices and
// anything else it does not know are skipped.
func Parse(output []byte) (Result, error) {
	var (
		result               Result
		sawProcessed, sawTPS bool
		commandColumns       int // numeric columns of -r rows; 0 outside that section
		err                  error
	)
	// A script's report that does not read leaves every script's out, never the run's.
	var scriptsUnread bool
	scanner := bufio.NewScanner(bytes.NewReader(output))
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if script := len(result.Scripts) - 1; script >= 0 && strings.HasPrefix(line, scriptLine) {
			if parseScriptLine(&result.Scripts[script], strings.TrimPrefix(line, scriptLine)) != nil {
				scriptsUnread = true
			}
			continue
		}
		if commandColumns > 0 {
			stat, ok := parseCommand(line, commandColumns)
			if ok {
				result.Statements = append(result.Statements, stat)
				continue
			}
			commandColumns = 0
		}
		switch {
		case strings.HasPrefix(line, processedPrefix):
			// "N" under -T, "N/M" under -t.
			done, _, _ := strings.Cut(strings.TrimPrefix(line, processedPrefix), "/")
			result.Transactions, err = count(done)
			sawProcessed = true
		case strings.HasPrefix(line, failedPrefix):
			result.Failed, err = leadingCount(strings.TrimPrefix(line, failedPrefix))
		case strings.HasPrefix(line, retriedPrefix):
			result.Retried, err = leadingCount(strings.TrimPrefix(line, retriedPrefix))
		case strings.HasPrefix(line, latencyPrefix):
			result.LatencyAvgMs, err = milliseconds(strings.TrimPrefix(line, latencyPrefix))
		case strings.HasPrefix(line, stddevPrefix):
			result.LatencyStdDevMs, err = milliseconds(strings.TrimPrefix(line, stddevPrefix))
		case strings.HasPrefix(line, tpsPrefix):
			value, kind, _ := strings.Cut(strings.TrimPrefix(line, tpsPrefix), " ")
			if isTPSWithoutConnections(kind) {
				result.TPS, err = measure(value)
				sawTPS = true
			}
		case strings.HasPrefix(line, commandsHeader) && strings.HasSuffix(line, ":"):
			commandColumns = columnsOf(line)
		case strings.HasPrefix(line, scriptHeader) && strings.Contains(line, ": "):
			result.Scripts = append(result.Scripts, ScriptStat{})
		}
		if err != nil {
			return Result{}, fmt.Errorf("pgbench report line %q: %w", line, err)
		}
	}
	if err := scanner.Err(); err != nil {
		return Result{}, fmt.Errorf("reading pgbench output: %w", err)
	}
	if !sawProcessed || !sawTPS {
		return Result{}, errors.New(
			"pgbench output has no final report (transactions processed and tps): the run did not complete")
	}
	if scriptsUnread {
		result.Scripts = nil
	}
	return result, nil
}

// parseScriptLine reads a line of a script's report into stat; lines it does not know
// (its weight, the per-command report of -r, which Statements leaves out for a run of
// several scripts) are skipped.
func parseScriptLine(stat *ScriptStat, line string) error {
	var err error
	switch {
	case strings.HasPrefix(line, processedPrefix):
		done, tps, _ := strings.Cut(strings.TrimPrefix(line, processedPrefix), " ")
		if stat.Transactions, err = count(done); err == nil {
			stat.TPS, err = scriptTPSOf(tps)
		}
	case strings.Contains(line, scriptTransactions):
		done, share, _ := strings.Cut(line, scriptTransactions)
		if stat.Transactions, err = count(done); err == nil && strings.Contains(share, tpsPrefix) {
			stat.TPS, err = scriptTPSOf(share)
		}
	case strings.HasPrefix(line, failedPrefix):
		stat.Failed, err = leadingCount(strings.TrimPrefix(line, failedPrefix))
	case strings.HasPrefix(line, latencyPrefix):
		stat.LatencyAvgMs, err = milliseconds(strings.TrimPrefix(line, latencyPrefix))
	case strings.HasPrefix(line, stddevPrefix):
		stddev := strings.TrimPrefix(line, stddevPrefix)
		if strings.HasPrefix(stddev, "NaN ") {
			return nil
		}
		var ms float64
		if ms, err = milliseconds(stddev); err == nil {
			stat.LatencyStdDevMs = &ms
		}
	}
	return err
}

// scriptTPSOf reads T out of "(..., tps = T)" or "(tps = T)".
func scriptTPSOf(s string) (float64, error) {
	_, tps, found := strings.Cut(s, tpsPrefix)
	if !found {
		return 0, fmt.Errorf("no %q in %q", tpsPrefix, s)
	}
	return measure(strings.TrimSuffix(tps, ")"))
}

func isTPSWithoutConnections(kind string) bool {
	return slices.Contains(tpsWithoutConnections, kind)
}

// columnsOf returns the numeric columns announced by a -r header: latency (13, 14),
// latency and failures (15+), or latency, failures and retries (15+, --max-tries).
func columnsOf(header string) int {
	switch {
	case strings.Contains(header, "failures and retries"):
		return 3
	case strings.Contains(header, "and failures"):
		return 2
	}
	return 1
}

// parseCommand reads a -r row: numeric columns then the command's first line.
func parseCommand(line string, columns int) (StatementStat, bool) {
	rest := line
	values := make([]string, columns)
	for i := range values {
		rest = strings.TrimLeft(rest, " ")
		var found bool
		values[i], rest, found = strings.Cut(rest, " ")
		if !found {
			return StatementStat{}, false
		}
	}
	stat := StatementStat{SQL: strings.TrimLeft(rest, " ")}
	var err error
	if stat.LatencyMs, err = measure(values[0]); err != nil || stat.SQL == "" {
		return StatementStat{}, false
	}
	if columns >= 2 {
		if stat.Failures, err = count(values[1]); err != nil {
			return StatementStat{}, false
		}
	}
	if columns == 3 {
		if stat.Retries, err = count(values[2]); err != nil {
			return StatementStat{}, false
		}
	}
	return stat, true
}

// count parses a non-negative integer.
func count(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("negative count %d", n)
	}
	return n, nil
}

// leadingCount parses "N (P%)".
func leadingCount(s string) (int64, error) {
	n, _, _ := strings.Cut(s, " ")
	return count(n)
}

// milliseconds parses "X ms", ignoring what follows (" (including failures)").
func milliseconds(s string) (float64, error) {
	value, unit, _ := strings.Cut(s, " ")
	if !strings.HasPrefix(unit, "ms") {
		return 0, fmt.Errorf("expected milliseconds, got %q", s)
	}
	return measure(value)
}

// measure parses a finite, non-negative decimal.
func measure(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a finite non-negative number", s)
	}
	return v, nil
}
