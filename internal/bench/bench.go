// Package bench runs one benchmark execution — one pgbench run at one client count
// against one destination — and accounts for its log records. The same code serves the
// in-cluster agent and the local runner; they differ only in how pgbench is started and
// where delivered records are counted.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/text"
	"github.com/logbench/logbench/internal/workload"
)

// Destination counts the records of one run that reached it.
type Destination interface {
	// Delivered returns how many of the run's records the destination holds so far.
	Delivered(ctx context.Context) (int64, error)
}

// UnavailableError is a count that failed because the destination did not answer: it is
// down, restarting or unreachable for now. A drain keeps counting through it until its
// deadline; any other error of a count ends the run.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return e.Err.Error() }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Accounting is a Destination whose own counters say more about lost records than its
// count does (a shipper's drops and retries, Loki's refusals): after the drain it
// accounts the run's records itself, with the reason of a drop.
type Accounting interface {
	Destination
	Account(ctx context.Context, want records.Expectation, delivered int64) (v1alpha1.Records, error)
}

// VolumeMeter is a Destination that also measures the bytes the server wrote to it since
// the run started, up to its last count; false when it cannot tell.
type VolumeMeter interface {
	LogBytes() (int64, bool)
}

// Meter measures what the server, and a shipper sidecar where there is one, spend
// during a run.
type Meter interface {
	// Start begins a measurement when pgbench starts.
	Start() (Measurement, error)
}

// Measurement is one run's, from Meter.Start.
type Measurement interface {
	// Server ends the server's measurement when pgbench ends.
	Server() (v1alpha1.ProcessUsage, error)
	// Shipper ends the shipper's when the drain ends; nil when there is no shipper.
	Shipper() (*v1alpha1.ProcessUsage, error)
	// Receiver ends a forwarding Syslog destination's receiver's when the drain ends;
	// nil when there is no receiver.
	Receiver() (*v1alpha1.ProcessUsage, error)
	// End ends the measurement, whichever of the above were read.
	End()
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
	// WarmupTag names the sessions of the warm-up (workload.NewWarmupTag), whose records
	// no run counts.
	WarmupTag string
	// ScriptDir is a writable directory for the pgbench script.
	ScriptDir string
	// ScriptsDir holds the files of workload.scripts, by key, when it is set.
	ScriptsDir string
	// Clock times the drain; nil means SystemClock.
	Clock Clock
	// Meter measures the server during pgbench and the shipper until the drain ends; nil
	// measures nothing.
	Meter Meter
	// Source counts the run's records inside the server; nil when the server does not
	// have the counter, and the expected records are the model's prediction.
	Source Source
}

// ErrNeedsSource: the logging settings or the workload's own scripts log records no
// model predicts, and the server has no counter to count them at the source.
var ErrNeedsSource = errors.New("these settings log records no model predicts, so the run's expected " +
	"records must be counted at the source, by the " + v1alpha1.CounterExtension + " extension, which the server " +
	"does not have")

// Run executes pgbench and waits for the destination to drain. A returned error means
// no measurement was made; a measurement whose accounting is inconsistent is returned
// with its Records.AccountingError set.
func Run(
	ctx context.Context,
	exec Execution,
	runPgbench PgbenchRunner,
	dest Destination,
) (v1alpha1.RepeatResult, error) {
	settings := settingsFor(exec)
	if len(settings.Unpredicted) > 0 && exec.Source == nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("%s: %w", strings.Join(settings.Unpredicted, ", "), ErrNeedsSource)
	}
	var counter *sourceRun
	if exec.Source != nil {
		before, err := exec.Source.Count(ctx, exec.Tag)
		if err != nil {
			return v1alpha1.RepeatResult{}, err
		}
		counter = &sourceRun{source: exec.Source, tag: exec.Tag, before: before}
	}
	script, output, measurement, server, err := runMetered(ctx, exec, runPgbench)
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	if measurement != nil {
		defer measurement.End()
	}
	clock := cmp.Or(exec.Clock, SystemClock)
	ended := clock.Now()
	measured, err := pgbench.Parse(output)
	if err != nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("reading pgbench output: %w\n%s", err, tail(output))
	}

	predicted := records.Expected(records.Execution{
		Script:       script,
		QueryMode:    exec.Workload.QueryMode,
		Clients:      int(exec.Clients),
		Transactions: measured.Transactions,
		Failed:       measured.Failed,
		Statements:   measured.Statements,
	}, settings)
	expectation := predicted
	wait := Wait{Ended: ended, Deadline: ended.Add(exec.DrainTimeout), Quiet: QuietPeriod(exec.Destination)}
	if counter != nil {
		if err := awaitSessionsEnd(ctx, counter.source, counter.tag, wait.Deadline, clock); err != nil {
			return v1alpha1.RepeatResult{}, err
		}
		if expectation, err = counter.expectation(ctx, predicted); err != nil {
			return v1alpha1.RepeatResult{}, err
		}
		wait.Expected = func(ctx context.Context) (records.Expectation, error) {
			return counter.expectation(ctx, predicted)
		}
	}

	drained, err := Drain(ctx, dest, expectation, wait, clock)
	if err != nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("counting delivered records: %w", err)
	}
	expectation = drained.Expected
	var shipper, receiver *v1alpha1.ProcessUsage
	if measurement != nil {
		if shipper, err = measurement.Shipper(); err != nil {
			return v1alpha1.RepeatResult{}, fmt.Errorf("measuring the shipper: %w", err)
		}
		if receiver, err = measurement.Receiver(); err != nil {
			return v1alpha1.RepeatResult{}, fmt.Errorf("measuring the syslog receiver: %w", err)
		}
	}
	accounted, err := reconcile(ctx, dest, expectation, drained)
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	// The final recount, as late as the result allows: records that arrived after the
	// drain ended are late, not lost. A destination that stopped answering since keeps
	// the drain's count.
	recounted, err := dest.Delivered(ctx)
	var unavailable *UnavailableError
	switch {
	case errors.As(err, &unavailable):
		recounted = drained.Delivered
	case err != nil:
		return v1alpha1.RepeatResult{}, fmt.Errorf("recounting delivered records: %w", err)
	}
	if counter != nil {
		// Read after the recount: a record counted since is neither expected nor
		// recounted, while every record recounted was counted before. A count that grew
		// after the drain (a backend logging as it exits) is the run's too: the records
		// are accounted for again against it, those recounted since arrived late.
		final, err := counter.expectation(ctx, predicted)
		if err != nil {
			return v1alpha1.RepeatResult{}, err
		}
		if final.Records != expectation.Records {
			expectation = final
			if accounted, err = reconcile(ctx, dest, expectation, drained); err != nil {
				return v1alpha1.RepeatResult{}, err
			}
		}
	}
	result := v1alpha1.RepeatResult{
		Repeat:             exec.Repeat,
		TPS:                measured.TPS,
		LatencyAvgMs:       measured.LatencyAvgMs,
		LatencyStdDevMs:    measured.LatencyStdDevMs,
		Transactions:       measured.Transactions,
		FailedTransactions: measured.Failed,
		Records:            records.Recount(accounted, expectation, recounted),
		DrainSeconds:       max(0, drained.LastArrival.Sub(ended).Seconds()),
		DrainEnd:           drained.End,
		Server:             server,
		Shipper:            shipper,
		Receiver:           receiver,
		Scripts:            scriptResults(exec.Workload.Scripts, measured.Scripts),
	}
	if meter, ok := dest.(VolumeMeter); ok {
		if written, measured := meter.LogBytes(); measured {
			result.LogBytes = &written
		}
	}
	if exec.Destination.Ships() {
		// Records of files arrive as PostgreSQL writes them; a shipper's arrive later.
		result.DrainCurve = drained.Curve
	}
	return result, nil
}

// scriptResults names each script's report by its key: pgbench reports them in the order
// of their -f options, which is that of the files. None for a run of one script.
func scriptResults(scripts *v1alpha1.WorkloadScripts, measured []pgbench.ScriptStat) []v1alpha1.ScriptResult {
	if scripts == nil || len(measured) != len(scripts.Files) {
		return nil
	}
	results := make([]v1alpha1.ScriptResult, len(measured))
	for i, stat := range measured {
		results[i] = v1alpha1.ScriptResult{
			Key: scripts.Files[i].Key, Transactions: stat.Transactions, FailedTransactions: stat.Failed,
			TPS: stat.TPS, LatencyAvgMs: stat.LatencyAvgMs, LatencyStdDevMs: stat.LatencyStdDevMs,
		}
	}
	return results
}

// settingsFor returns the logging settings of the execution's server, the workload's
// own scripts among those that log records no model predicts: their statements are the
// user's.
func settingsFor(exec Execution) records.Settings {
	settings := records.SettingsFor(exec.Destination, exec.Logging)
	if exec.Workload.Scripts != nil {
		settings.Unpredicted = append(settings.Unpredicted, "workload.scripts")
	}
	return settings
}

// reconcile accounts for the run's records counted by the drain against the
// expectation, or lets an Accounting destination do so.
func reconcile(
	ctx context.Context, dest Destination, expectation records.Expectation, drained Drained,
) (v1alpha1.Records, error) {
	if drained.Unanswered != nil {
		// The destination may hold what logbench could not count: unverified, not dropped,
		// and no further question to a destination that does not answer.
		return records.Reconcile(expectation, unansweredCount(expectation, drained)), nil
	}
	if accounting, ok := dest.(Accounting); ok {
		accounted, err := accounting.Account(ctx, expectation, drained.Delivered)
		if err != nil {
			return v1alpha1.Records{}, fmt.Errorf("accounting the run's records: %w", err)
		}
		return accounted, nil
	}
	return records.Reconcile(expectation, records.Count{Delivered: drained.Delivered}), nil
}

// sourceRun reads a run's records counted at the source.
type sourceRun struct {
	source Source
	tag    string
	// before is the reading taken before pgbench started.
	before SourceCount
}

// expectation reads the source and returns the records it counted for the run since
// before, checked against the model's prediction (records.Counted).
func (r *sourceRun) expectation(ctx context.Context, predicted records.Expectation) (records.Expectation, error) {
	now, err := r.source.Count(ctx, r.tag)
	if err != nil {
		return records.Expectation{}, err
	}
	counted, err := now.Minus(r.before)
	if err != nil {
		return records.Expectation{}, err
	}
	return records.Counted(counted, predicted), nil
}

// unansweredCount is what a drain whose destination stopped answering counted: its last
// answer, and the expected records beyond it unverified.
func unansweredCount(want records.Expectation, drained Drained) records.Count {
	count := records.Count{Delivered: drained.Delivered}
	if missing := want.Records - drained.Delivered; missing > 0 {
		count.Unverified = missing
		count.UnverifiedReason = fmt.Sprintf("the destination did not answer logbench's counts when the drain's "+
			"deadline passed (%s): %d records not seen by logbench", text.Truncate(drained.Unanswered.Error(), 300), missing)
	}
	return count
}

// runMetered runs the measured pgbench, with the server measured meanwhile when the
// execution has a meter; the measurement goes on for the shipper.
func runMetered(
	ctx context.Context, exec Execution, runPgbench PgbenchRunner,
) (workload.Script, []byte, Measurement, *v1alpha1.ProcessUsage, error) {
	var measurement Measurement
	if exec.Meter != nil {
		var err error
		if measurement, err = exec.Meter.Start(); err != nil {
			return workload.Script{}, nil, nil, nil, fmt.Errorf("starting the meters: %w", err)
		}
	}
	script, output, err := runTagged(ctx, exec, exec.Tag, exec.Workload.Duration.Duration, runPgbench)
	if measurement == nil {
		return script, output, nil, nil, err
	}
	usage, meterErr := measurement.Server()
	if err == nil && meterErr != nil {
		err = fmt.Errorf("measuring the server: %w", meterErr)
	}
	if err != nil {
		measurement.End()
		return script, output, nil, nil, err
	}
	return script, output, measurement, &usage, nil
}

// WarmUp runs pgbench for workload.warmup, unmeasured, before a destination's first run
// at a client count (repeat 1), so that cold caches and connection start-up do not count
// against whichever destination runs first. Callers warm up before they start counting
// the run's records: the warm-up's own records carry WarmupTag, which no count matches.
func WarmUp(ctx context.Context, exec Execution, runPgbench PgbenchRunner) error {
	if exec.Repeat != 1 || exec.Workload.Warmup.Duration <= 0 {
		return nil
	}
	if _, _, err := runTagged(ctx, exec, exec.WarmupTag, exec.Workload.Warmup.Duration, runPgbench); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// runTagged runs the workload's scripts for duration with the sessions named tag, and
// returns the script the model reads (none of the user's scripts) and pgbench's output.
func runTagged(
	ctx context.Context, exec Execution, tag string, duration time.Duration, runPgbench PgbenchRunner,
) (workload.Script, []byte, error) {
	script, files, remove, err := scriptFiles(exec, tag)
	if err != nil {
		return workload.Script{}, nil, err
	}
	defer remove()
	opts := pgbench.Options{
		Scripts:   files,
		Clients:   int(exec.Clients),
		Threads:   Threads(exec.Workload.Threads, exec.Clients),
		Duration:  duration,
		QueryMode: exec.Workload.QueryMode,
		Scale:     int(exec.Workload.Scale),
	}
	// The tag reaches the server as the sessions' application_name, whoever wrote the
	// scripts: it is how the server's counter and every destination find the run's
	// records.
	output, err := runPgbench(ctx, pgbench.RunArgs(opts), []string{"PGAPPNAME=" + tag})
	if err != nil {
		return workload.Script{}, output, fmt.Errorf("pgbench: %w\n%s", err, tail(output))
	}
	return script, output, nil
}

// scriptFiles returns the pgbench scripts of a run whose sessions are named tag: the
// workload's own, in ScriptsDir, or else its builtin reproduced with the tag, written to
// ScriptDir (remove removes what was written), with the model's view of it.
func scriptFiles(exec Execution, tag string) (_ workload.Script, _ []pgbench.Script, remove func(), _ error) {
	if scripts := exec.Workload.Scripts; scripts != nil {
		files := make([]pgbench.Script, 0, len(scripts.Files))
		for _, file := range scripts.Files {
			files = append(files, pgbench.Script{File: filepath.Join(exec.ScriptsDir, string(file.Key)), Weight: file.Weight})
		}
		return workload.Script{Name: "workload.scripts"}, files, func() {}, nil
	}
	script, err := workload.ForBuiltin(exec.Workload.Builtin, tag)
	if err != nil {
		return workload.Script{}, nil, nil, err
	}
	scriptFile := filepath.Join(exec.ScriptDir, tag+".pgbench")
	if err := os.WriteFile(scriptFile, []byte(script.Text), 0o644); err != nil {
		return workload.Script{}, nil, nil, fmt.Errorf("writing pgbench script: %w", err)
	}
	return script, []pgbench.Script{{File: scriptFile, Weight: 1}}, func() { _ = os.Remove(scriptFile) }, nil
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

// Quiet periods: how long the count must stay unchanged, between the return of the count
// that last saw it rise and the start of a later count, before a destination that will
// never reach the expected count (it dropped records, or expected is an estimate) is
// taken as drained.
const (
	// unshippedQuiet serves destinations PostgreSQL writes itself (files, the container
	// log): nothing retries their records.
	unshippedQuiet = 2 * time.Second
	// ShippedQuiet serves shipping destinations whose pipeline does not tell what it
	// has in flight (InFlight): a node agent, whose retry settings logbench does not
	// know, or a shipper whose metrics do not answer. It is twice the 5 s both shippers
	// wait before a first retry with the settings logbench generates (Fluent Bit's
	// scheduler base, the collector's retry_on_failure.initial_interval), so that a
	// record waiting for that retry is not taken as dropped.
	ShippedQuiet = 10 * time.Second
)

// QuietPeriod is the quiet period of a destination's drain.
func QuietPeriod(d v1alpha1.Destination) time.Duration {
	if d.Ships() || d.CountedInNodeAgentsLoki() {
		return ShippedQuiet
	}
	return unshippedQuiet
}

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

// Wait bounds a drain.
type Wait struct {
	// Ended is when pgbench ended.
	Ended time.Time
	// Deadline ends the drain while records may still arrive.
	Deadline time.Time
	// Quiet is how long the count must stay unchanged.
	Quiet time.Duration
	// Expected, when set, reads the expected records again each time the count reaches
	// them: a count at the source, which grows while the run's backends still log as
	// they exit. The drain is complete only when the count reaches a reading taken after
	// it.
	Expected func(ctx context.Context) (records.Expectation, error)
}

// Drained is what a drain saw.
type Drained struct {
	// Delivered is the last count.
	Delivered int64
	// LastArrival is when the count that first saw the last count's value returned: the
	// records were there by then, maybe earlier.
	LastArrival time.Time
	// End says why the drain ended.
	End v1alpha1.DrainEnd
	// Curve holds the first count, the first count started at least 1 s, 5 s and 30 s
	// after pgbench ended, and the last count.
	Curve []v1alpha1.DrainPoint
	// Unanswered is the error of the destination's counts when it still did not answer
	// at the deadline: Delivered is then its last answer, 0 if none, and the records it
	// may hold beyond that are unverified.
	Unanswered error
	// Expected is the expectation the drain ended with: the one it was given, or the
	// last reading of Wait.Expected.
	Expected records.Expectation
}

// curveMarks are the times after the end of pgbench that a drain curve reports beside
// its first and last counts.
var curveMarks = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}

// Drain counts the destination until it holds every expected record, its pipeline has
// nothing in flight and a later count finds no record more (InFlight), its count stays
// unchanged for wait.Quiet, or the deadline passes. The time a count takes is never quiet
// time: a count may miss records that arrive while it runs, so quiet time runs from the
// return of the count that last saw a new value (LastArrival) to the start of a later
// count. A destination that does not answer (UnavailableError) is counted again until
// the deadline, and quiet time starts anew with its next answer, since records may have
// arrived unseen; one that still does not answer at the deadline ends the drain with
// Unanswered set.
func Drain(ctx context.Context, dest Destination, want records.Expectation, wait Wait, clock Clock) (Drained, error) {
	drained := Drained{Expected: want}
	marks := curveMarks
	answered := false
	// idle: the pipeline said nothing was in flight after the count idleCount returned.
	idle, idleCount := false, int64(0)
	for first := true; ; first = false {
		started := clock.Now()
		count, err := dest.Delivered(ctx)
		returned := clock.Now()
		var unavailable *UnavailableError
		switch {
		case errors.As(err, &unavailable) && returned.Before(wait.Deadline):
			answered, idle = false, false
			if err := sleep(ctx, clock); err != nil {
				return drained, err
			}
			continue
		case errors.As(err, &unavailable):
			drained.End, drained.Unanswered = v1alpha1.DrainTimeout, err
			return drained, nil
		case err != nil:
			return drained, err
		}
		if !answered || count != drained.Delivered {
			drained.Delivered, drained.LastArrival = count, returned
			answered = true
		}
		after := started.Sub(wait.Ended)
		onCurve := first || len(marks) > 0 && after >= marks[0]
		for len(marks) > 0 && after >= marks[0] {
			marks = marks[1:] // a slow count may pass several marks
		}
		// A pipeline that stores a retried push twice reaches the expected count with
		// records still on their way: complete, like quiet, waits for them.
		complete := !want.Estimate && count >= want.Records
		if complete && wait.Expected != nil {
			// Read after the count: records counted since it are not yet expected of it.
			if want, err = wait.Expected(ctx); err != nil {
				return drained, err
			}
			drained.Expected = want
			complete = !want.Estimate && count >= want.Records
		}
		// The pipeline said nothing was in flight after the previous count returned, and
		// this count, started after that answer, found no record more.
		settled := idle && count == idleCount
		quiet := started.Sub(drained.LastArrival) >= wait.Quiet
		pending, told := inFlight(ctx, dest)
		held := told && pending > 0
		idle, idleCount = told && pending == 0, count
		drained.End = endOf(complete, settled, quiet, held, !returned.Before(wait.Deadline))
		if onCurve || drained.End != "" {
			drained.Curve = append(drained.Curve, v1alpha1.DrainPoint{AfterSeconds: max(0, after.Seconds()), Delivered: count})
		}
		if drained.End != "" {
			return drained, nil
		}
		if err := sleep(ctx, clock); err != nil {
			return drained, err
		}
	}
}

// endOf says why a drain ends after a count, or "" while it goes on: records in flight
// hold it until the deadline.
func endOf(complete, settled, quiet, held, pastDeadline bool) v1alpha1.DrainEnd {
	switch {
	case held:
	case complete:
		return v1alpha1.DrainComplete
	case settled:
		return v1alpha1.DrainSettled
	case quiet:
		return v1alpha1.DrainQuiet
	}
	if pastDeadline {
		return v1alpha1.DrainTimeout
	}
	return ""
}

// InFlight is a Destination whose pipeline tells how many records it kept are still on
// their way: unread in the file it reads, in a shipper's buffer, or in a push waiting for
// its retry, whose backoff (the collector's grows to 30 s) may outlast any quiet period.
// Its drain ends neither quiet nor complete while any are (a retried push stored twice
// can make the count reach the expected one early); the deadline still ends it. Once it
// says none are, the drain needs no quiet period: a count that finds no record more than
// the one before that answer ends it (DrainSettled).
type InFlight interface {
	InFlight(ctx context.Context) (int64, error)
}

// inFlight asks dest how many records are still on their way; told is false for a
// pipeline that cannot tell, which neither holds the drain nor settles it: quiet then
// ends it, as for any destination.
func inFlight(ctx context.Context, dest Destination) (pending int64, told bool) {
	pipeline, ok := dest.(InFlight)
	if !ok {
		return 0, false
	}
	n, err := pipeline.InFlight(ctx)
	return n, err == nil
}

// sleep waits drainPoll before the next count.
func sleep(ctx context.Context, clock Clock) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-clock.After(drainPoll):
		return nil
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
