// Package bench runs one benchmark execution — one pgbench run at one client count
// against one destination — and accounts for its log records. The same code serves the
// in-cluster agent and the local runner; they differ only in how pgbench is started and
// where delivered records are counted.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/workload"
)

// Destination counts the records of one run that reached it.
type Destination interface {
	// Delivered returns how many of the run's records the destination holds so far.
	Delivered(ctx context.Context) (int64, error)
}

// Accounting is a Destination whose own counters say more about lost records than its
// count does (a shipper's drops and retries, Loki's refusals): after the drain it
// accounts the run's records itself, with the reason of a drop.
type Accounting interface {
	Destination
	Account(ctx context.Context, want records.Expectation, delivered int64) (v1alpha1.Records, error)
}

// PgbenchRunner executes pgbench with the given arguments and extra environment
// (libpq variables for the connection come from the runner itself) and returns its
// combined output.
type PgbenchRunner func(ctx context.Context, args []string, env []string) ([]byte, error)

// Execution is one pgbench run to measure.
type Execution struct {
	Destination  v1alpha1.Destination
	Logging      v1alpha1.LoggingSpec
	Workload     v1alpha1.WorkloadSpec
	Clients      int32
	Repeat       int32
	DrainTimeout time.Duration
	// Tag identifies the run's records; it becomes the sessions' application_name.
	Tag string
	// ScriptDir is a writable directory for the pgbench script.
	ScriptDir string
}

// Run executes pgbench and waits for the destination to drain. A returned error means
// no measurement was made; a measurement whose accounting is inconsistent is returned
// with its Records.AccountingError set.
func Run(ctx context.Context, exec Execution, runPgbench PgbenchRunner, dest Destination) (v1alpha1.RepeatResult, error) {
	script, err := workload.ForBuiltin(exec.Workload.Builtin, exec.Tag)
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	scriptFile := filepath.Join(exec.ScriptDir, exec.Tag+".pgbench")
	if err := os.WriteFile(scriptFile, []byte(script.Text), 0o644); err != nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("writing pgbench script: %w", err)
	}
	defer os.Remove(scriptFile)

	opts := pgbench.Options{
		ScriptFile: scriptFile,
		Clients:    int(exec.Clients),
		Threads:    Threads(exec.Workload.Threads, exec.Clients),
		Duration:   exec.Workload.Duration.Duration,
		QueryMode:  exec.Workload.QueryMode,
		Scale:      int(exec.Workload.Scale),
	}
	output, err := runPgbench(ctx, pgbench.RunArgs(opts), []string{"PGAPPNAME=" + exec.Tag})
	if err != nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("pgbench: %w\n%s", err, tail(output))
	}
	ended := time.Now()
	measured, err := pgbench.Parse(output)
	if err != nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("reading pgbench output: %w\n%s", err, tail(output))
	}

	expectation := records.Expected(records.Execution{
		Script:       script,
		QueryMode:    exec.Workload.QueryMode,
		Clients:      int(exec.Clients),
		Transactions: measured.Transactions,
		Failed:       measured.Failed,
		Statements:   measured.Statements,
	}, records.SettingsFor(exec.Destination, exec.Logging))

	delivered, lastArrival, err := Drain(ctx, dest, expectation, ended, ended.Add(exec.DrainTimeout), SystemClock)
	if err != nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("counting delivered records: %w", err)
	}
	accounted := records.Reconcile(expectation, delivered)
	if accounting, ok := dest.(Accounting); ok {
		if accounted, err = accounting.Account(ctx, expectation, delivered); err != nil {
			return v1alpha1.RepeatResult{}, fmt.Errorf("accounting the run's records: %w", err)
		}
	}
	return v1alpha1.RepeatResult{
		Repeat:             exec.Repeat,
		TPS:                measured.TPS,
		LatencyAvgMs:       measured.LatencyAvgMs,
		LatencyStdDevMs:    measured.LatencyStdDevMs,
		Transactions:       measured.Transactions,
		FailedTransactions: measured.Failed,
		Records:            accounted,
		DrainSeconds:       max(0, lastArrival.Sub(ended).Seconds()),
	}, nil
}

// Threads resolves workload.threads: 0 means min(clients, CPUs available here).
func Threads(threads, clients int32) int {
	if threads > 0 {
		return int(min(threads, clients))
	}
	return min(int(clients), runtime.GOMAXPROCS(0))
}

// drainPoll is how often the destination is counted while records are still arriving.
const drainPoll = 200 * time.Millisecond

// drainQuiet is how long the count must stay unchanged before a destination that will
// never reach the expected count (it dropped records, or expected is an estimate) is
// taken as drained.
const drainQuiet = 2 * time.Second

// Clock is the time a drain reads and waits on; tests pass one that never sleeps.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SystemClock is the real time.
var SystemClock Clock = systemClock{}

// Drain counts the destination until it holds every expected record, its count stops
// rising for drainQuiet, or the deadline passes. It returns the final count and when
// the last increase was seen: ended, the end of pgbench, if nothing arrived after the
// first count.
func Drain(ctx context.Context, dest Destination, want records.Expectation, ended, deadline time.Time, clock Clock) (int64, time.Time, error) {
	var (
		count       int64 = -1
		lastArrival       = ended
	)
	for {
		now, err := dest.Delivered(ctx)
		if err != nil {
			return 0, lastArrival, err
		}
		if now != count {
			if count >= 0 {
				lastArrival = clock.Now()
			}
			count = now
		}
		complete := !want.Estimate && count >= want.Records
		quiet := clock.Now().Sub(lastArrival) >= drainQuiet
		if complete || quiet || !clock.Now().Before(deadline) {
			return count, lastArrival, nil
		}
		select {
		case <-ctx.Done():
			return 0, lastArrival, ctx.Err()
		case <-clock.After(drainPoll):
		}
	}
}

// tail returns the last lines of a command's output for error messages.
func tail(output []byte) string {
	const keep = 2048
	if len(output) > keep {
		output = output[len(output)-keep:]
	}
	return string(output)
}
