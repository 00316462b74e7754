package localrun

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/manifest"
	"github.com/logbench/logbench/internal/report"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/schedule"
	"github.com/logbench/logbench/internal/testenv"
)

// TestQuickSample runs the README's first benchmark, config/samples/quick.yaml, with
// shorter and fewer runs, at one client count: every local destination measures TPS,
// and the destinations logbench reads directly (files and the server's own stderr) lose
// no record.
func TestQuickSample(t *testing.T) {
	installation := postgresqlInstallation(t)
	root := testenv.Root(t)
	benchmark, err := manifest.ReadFile(filepath.Join(root, "config", "samples", "quick.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec := &benchmark.Spec
	spec.Workload.Duration.Duration = time.Second
	spec.Workload.Warmup.Duration = time.Second
	// The fewest repeats that give each row an overhead interval and a verdict.
	spec.Workload.Repeats = 3
	spec.Workload.Clients = spec.Workload.Clients[len(spec.Workload.Clients)-1:]

	var progress recordedProgress
	outcome, err := Execute(context.Background(), spec, Options{
		Installation: installation,
		// The system's temporary directory, not t.TempDir(): under root the servers run
		// as the postgres user, who cannot enter the test's private directory.
		Progress: &progress,
		Seed:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	for key, run := range outcome.Runs {
		if run.Error != "" {
			t.Fatalf("%+v failed: %s", key, run.Error)
		}
	}
	if want := int(spec.RunsTotal()); len(outcome.Runs) != want || progress.finished != want || len(outcome.Skipped) != 0 {
		t.Fatalf("%d runs measured, %d reported finished, %d skipped; want %d, %d, none",
			len(outcome.Runs), progress.finished, len(outcome.Skipped), want, want)
	}

	if !slices.Equal(progress.order, schedule.Plan(spec, 1, nil)) {
		t.Errorf("runs went %v, not in the order of the schedule", progress.order)
	}

	rows := results.Aggregate(spec, outcome.Runs)
	seen := map[v1alpha1.DestinationType]bool{}
	for _, row := range rows {
		seen[row.Type] = true
		name := results.RowName(row)
		for _, repeat := range row.Repeats {
			if repeat.Error != "" {
				t.Errorf("%s failed: %s", name, repeat.Error)
			}
		}
		if row.TPS <= 0 {
			t.Errorf("%s: TPS %v, want > 0", name, row.TPS)
		}
		records := row.Records
		if records.Dropped == nil || *records.Dropped != 0 || records.AccountingError != "" {
			t.Errorf("%s: records %+v, want every expected record delivered", name, records)
		}
		if wantRecords := row.Type != v1alpha1.DestinationNone; (records.Expected > 0) != wantRecords {
			t.Errorf("%s: %d records expected; only the baseline logs none", name, records.Expected)
		}
		if row.Type != v1alpha1.DestinationNone && (row.OverheadInterval == nil || row.OverheadVerdict == v1alpha1.OverheadUnknown) {
			t.Errorf("%s: overhead %s %s, want an interval and a verdict", name, report.OverheadCell(row), row.OverheadVerdict)
		}
		// A record holds at least its time, the run's tag and the statement.
		if row.Type != v1alpha1.DestinationNone &&
			(row.LogBytesPerRecord == nil || *row.LogBytesPerRecord < 60 || row.LogGigabytesPerHour == nil) {
			t.Errorf("%s: log volume %s B/record, %s GB/h; want both, at least 60 B a record", name,
				report.LogBytesPerRecordCell(row), report.LogGigabytesPerHourCell(row))
		}
		expectPlausibleServerCost(t, row)
	}
	for _, destination := range []v1alpha1.DestinationType{v1alpha1.DestinationNone, v1alpha1.DestinationStderr,
		v1alpha1.DestinationCSVLog, v1alpha1.DestinationJSONLog, v1alpha1.DestinationStdout} {
		if !seen[destination] {
			t.Errorf("no result row for a %s destination", destination)
		}
	}
}

// TestOverheadVerdicts is the A/A test of the overhead's interval, on real servers: two
// identical destinations (csvlog-a and csvlog-b, every statement logged) are told apart
// only within noise, while logging every statement to stderr costs the baseline a
// significant share of its TPS, with an interval that excludes 0. With 5 repeats the
// interval spans the smallest to the largest paired overhead, a 93.75% interval: two
// identical destinations read as significant by chance once in 16 benchmarks, so a
// verdict against the expectation is measured once more, and only a second one fails
// (once in 256 by chance; always when the difference is real).
func TestOverheadVerdicts(t *testing.T) {
	installation := postgresqlInstallation(t)
	benchmark, err := manifest.Decode([]byte(`apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: a-a}
spec:
  destinations:
  - {name: csvlog-a, type: CSVLog}
  - {name: csvlog-b, type: CSVLog}
  - {name: stderr, type: Stderr}
  workload: {builtin: SelectOnly, scale: 1, clients: [2], duration: 2s, warmup: 1s, repeats: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	spec := &benchmark.Spec
	var problems []string
	for attempt := 1; attempt <= 2; attempt++ {
		outcome, err := Execute(context.Background(), spec, Options{Installation: installation, Seed: int64(attempt)})
		if err != nil {
			t.Fatal(err)
		}
		rows := results.Aggregate(spec, outcome.Runs)
		problems = nil
		stderr := findRow(t, rows, "stderr")
		if stderr.OverheadVerdict != v1alpha1.OverheadSignificant || stderr.OverheadInterval == nil ||
			stderr.OverheadInterval.LowPercent <= 0 {
			problems = append(problems, "stderr's loss is not significant")
		}
		results.ApplyOverhead(rows, "csvlog-a")
		b := findRow(t, rows, "csvlog-b")
		if b.OverheadVerdict != v1alpha1.OverheadWithinNoise {
			problems = append(problems, "csvlog-b is told apart from csvlog-a")
		}
		t.Logf("benchmark %d: stderr against the baseline %s; csvlog-b against csvlog-a %s",
			attempt, describeOverhead(stderr), describeOverhead(b))
		if len(problems) == 0 {
			return
		}
	}
	t.Errorf("twice in a row: %s", strings.Join(problems, "; "))
}

// postgresqlInstallation is the PostgreSQL the local runs start servers of; -short skips
// the tests that need it.
func postgresqlInstallation(t *testing.T) localpg.Installation {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL servers")
	}
	installation, err := localpg.FindInstallation()
	if err != nil {
		t.Fatalf("the local run test needs PostgreSQL (make test installs nothing; .ci/run does): %v", err)
	}
	return installation
}

func findRow(t *testing.T, rows []v1alpha1.Result, destination string) v1alpha1.Result {
	t.Helper()
	for _, row := range rows {
		if row.Destination == destination {
			return row
		}
	}
	t.Fatalf("no result row for %s in %+v", destination, rows)
	return v1alpha1.Result{}
}

func describeOverhead(row v1alpha1.Result) string {
	tps := make([]string, 0, len(row.Repeats))
	for _, repeat := range row.Repeats {
		tps = append(tps, fmt.Sprintf("%.0f", repeat.TPS))
	}
	return fmt.Sprintf("%s %s (TPS %s)", report.OverheadCell(row), row.OverheadVerdict, strings.Join(tps, ", "))
}

// TestClusterOnlyDestinationsAreSkippedWithAReason reads a spec that admission accepts,
// so that the skipped destinations are the ones a user can write: shipping ones, and a
// Stdout destination counted in its node agent's Loki.
func TestClusterOnlyDestinationsAreSkippedWithAReason(t *testing.T) {
	benchmark, err := manifest.Decode([]byte(`apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: shipping}
spec:
  baseline: {enabled: false}
  destinations:
  - {name: fluent, type: FluentBitSidecar}
  - {name: loki, type: Loki, shipper: {kind: OpenTelemetryCollector}, loki: {url: "http://loki:3100"}}
  - {name: platform, type: Stdout, loki: {url: "http://loki:3100"}}
  workload: {clients: [1], repeats: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := Execute(context.Background(), &benchmark.Spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Skipped{
		{
			Destination: "fluent",
			Reason:      "FluentBitSidecar needs its FluentBit sidecar in a CloudNativePG pod and its endpoint, which a local run does not provide",
		},
		{
			Destination: "loki",
			Reason:      "Loki needs its OpenTelemetryCollector sidecar in a CloudNativePG pod and its endpoint, which a local run does not provide",
		},
		{
			Destination: "platform",
			Reason: "it is counted in the Loki the cluster's node agent ships the container log to; " +
				"a local run has neither: leave loki out to measure the server's standard output here",
		},
	}
	if len(outcome.Runs) != 0 || !slices.Equal(outcome.Skipped, want) {
		t.Fatalf("outcome %+v, want nothing run and %+v skipped", outcome, want)
	}
}

type recordedProgress struct {
	started, finished int
	order             []results.RunKey
}

func (p *recordedProgress) RunStarted(run Run) {
	p.started++
	p.order = append(p.order, run.Key)
}

func (p *recordedProgress) RunFinished(Run, v1alpha1.RepeatResult) { p.finished++ }

// pgauditBenchmark audits write statements of the tpcb-like workload, which log_statement
// leaves unlogged: every record of the destination is pgaudit's.
const pgauditBenchmark = `apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: pgaudit}
spec:
  logging: {statement: none, pgaudit: {log: [write], logParameter: true}}
  destinations:
  - {name: audited, type: CSVLog}
  workload: {builtin: TPCBLike, clients: [1], repeats: 1, duration: 1s, warmup: 0s}
`

// TestPgauditRun measures pgaudit end to end on the local server that has it: the
// baseline runs without the extension, the audited destination's records are all
// pgaudit's (four write statements a transaction) and every one is counted.
func TestPgauditRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL servers")
	}
	installation := localpgtest.WithPgaudit(t)
	benchmark, err := manifest.Decode([]byte(pgauditBenchmark))
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := Execute(context.Background(), &benchmark.Spec, Options{Installation: installation, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rows := results.Aggregate(&benchmark.Spec, outcome.Runs)
	audited := findRow(t, rows, "audited")
	records := audited.Records
	transactions := audited.Repeats[0].Transactions
	if records.Expected != 4*transactions || records.Delivered != records.Expected || records.AccountingError != "" {
		t.Errorf("audited: records %+v after %d transactions, want 4 a transaction, all delivered", records, transactions)
	}
	if baseline := findRow(t, rows, "baseline"); baseline.Records.Delivered != 0 {
		t.Errorf("the baseline logged %d records, want none", baseline.Records.Delivered)
	}
}

// TestPgauditWithoutTheExtensionFails: PostgreSQL 18 from the wheel has no pgaudit; the
// audited destination's runs fail saying what to install, and the baseline still runs.
func TestPgauditWithoutTheExtensionFails(t *testing.T) {
	if testing.Short() {
		t.Skip("looks for PostgreSQL 18")
	}
	installation := localpgtest.PostgreSQL18(t)
	if installation.HasLibrary("pgaudit") {
		t.Skipf("PostgreSQL 18 in %s has pgaudit: nothing to check", installation.BinDir)
	}
	benchmark, err := manifest.Decode([]byte(pgauditBenchmark))
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := Execute(context.Background(), &benchmark.Spec, Options{Installation: installation})
	if err != nil {
		t.Fatal(err)
	}
	failed := outcome.Runs[results.RunKey{Destination: "audited", Clients: 1, Repeat: 1}].Error
	if !strings.Contains(failed, "needs the pgaudit extension") || !strings.Contains(failed, "postgresql-18-pgaudit") {
		t.Errorf("the audited run failed with %q, want the missing extension and its package named", failed)
	}
	if baseline := outcome.Runs[results.RunKey{Destination: "baseline", Clients: 1, Repeat: 1}]; baseline.Error != "" {
		t.Errorf("the baseline, which needs no pgaudit, failed: %s", baseline.Error)
	}
}

// TestRampStopsOnRealRuns ramps log_statement=all to stderr from 1 client, doubling up to
// 4, against real servers: the overhead and drop bounds are evaluated on the real rows
// and hold (an overhead cannot exceed 100%, a file loses nothing), while no doubling of
// clients raises TPS by the tenfold the TPS bound asks for. The ramp stops at 2 clients
// with its knee at 1, the baseline stops with it, and no run at 4 clients is made.
func TestRampStopsOnRealRuns(t *testing.T) {
	installation := postgresqlInstallation(t)
	benchmark, err := manifest.Decode([]byte(`
apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata:
  name: ramp
spec:
  destinations:
  - name: stderr
    type: Stderr
  workload:
    scale: 1
    duration: 1s
    warmup: 0s
    repeats: 1
    ramp:
      start: 1
      factor: 2
      max: 4
      stopWhen:
        overheadAbovePercent: 100
        droppedRecords: true
        tpsGainBelowPercent: 1000
`))
	if err != nil {
		t.Fatal(err)
	}
	spec := &benchmark.Spec
	want := []string{"baseline/1/1", "baseline/2/1", "stderr/1/1", "stderr/2/1"}
	// A 1-s run that a busy machine stalls can make doubling the clients look tenfold
	// faster, which rightly lets the ramp go on: such a ramp is measured once more.
	var outcome Outcome
	for attempt := 1; ; attempt++ {
		var progress recordedProgress
		outcome, err = Execute(context.Background(), spec, Options{Installation: installation, Progress: &progress, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		ran := make([]string, 0, len(progress.order))
		for _, run := range progress.order {
			ran = append(ran, run.String())
		}
		slices.Sort(ran)
		if slices.Equal(ran, want) {
			break
		}
		one, two := outcome.Runs[results.RunKey{Destination: "stderr", Clients: 1, Repeat: 1}],
			outcome.Runs[results.RunKey{Destination: "stderr", Clients: 2, Repeat: 1}]
		if attempt == 2 || two.TPS < 11*one.TPS {
			t.Fatalf("ran %v, want %v (TPS at 1 and 2 clients: %.0f, %.0f)", ran, want, one.TPS, two.TPS)
		}
		t.Logf("ran %v: TPS went from %.0f to %.0f, a stall of the 1-client run; measuring again", ran, one.TPS, two.TPS)
	}

	benchstatus.Set(benchmark, benchstatus.Observation{Planned: outcome.PlannedRuns(spec, 1), Seed: 1, Finished: outcome.Runs, Done: true})
	if benchmark.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("phase %s, want Succeeded: %+v", benchmark.Status.Phase, benchmark.Status.Conditions)
	}
	knees := benchmark.Status.Knees
	if len(knees) != 1 || knees[0].Destination != "stderr" || knees[0].Clients != 1 || knees[0].StoppedAt != 2 ||
		!strings.HasPrefix(knees[0].Reason, "TPS went from ") {
		t.Fatalf("knees %+v, want stderr's at 1 client, stopped at 2 by the TPS bound", knees)
	}
	stopRow := findRow(t, benchmark.Status.Results, "stderr")
	for _, row := range benchmark.Status.Results {
		if row.Destination == "stderr" && row.Clients == 2 {
			stopRow = row
		}
	}
	if stopRow.RampStop != knees[0].Reason || stopRow.OverheadPercent == nil || stopRow.Records.Dropped == nil {
		t.Errorf("row at 2 clients: ramp stop %q, overhead %v, dropped %v", stopRow.RampStop,
			stopRow.OverheadPercent, stopRow.Records.Dropped)
	}
	t.Logf("stderr: %s", knees[0].Reason)
}

// expectPlausibleServerCost checks a row's server cost: a busy server uses some CPU, at
// most the machine's cores (and a little more for the sampling's edges), spends some
// CPU on every 1,000 transactions, and holds more than its shared buffers' 16 MiB
// default in sum but nowhere near this machine's memory.
func expectPlausibleServerCost(t *testing.T, row v1alpha1.Result) {
	t.Helper()
	name := results.RowName(row)
	cores, perTransactions, peak := row.ServerCPUCores, row.ServerCPUMsPer1kTransactions, row.ServerPeakMemoryBytes
	if cores == nil || *cores < 0.05 || *cores > float64(runtime.NumCPU())*1.2 {
		t.Errorf("%s: server CPU %s cores on %d CPUs", name, report.CoresCell(row.ServerCPUCores), runtime.NumCPU())
	}
	if perTransactions == nil || *perTransactions <= 0 {
		t.Errorf("%s: server CPU %s ms per 1,000 transactions", name, report.CPUPer1kCell(row.ServerCPUMsPer1kTransactions))
	}
	if peak == nil || *peak < 16<<20 || *peak > 4<<30 {
		t.Errorf("%s: server memory peak %s MiB", name, report.MemoryCell(row.ServerPeakMemoryBytes))
	}
}

// syslogBenchmark logs every statement through syslog(), split and numbered, and
// through an unsplit, unnumbered second destination.
const syslogBenchmark = `apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: syslog}
spec:
  baseline: {enabled: false}
  logging: {statement: all, duration: true}
  destinations:
  - {name: syslog, type: Syslog}
  - {name: whole, type: Syslog, syslog: {facility: LOCAL3, ident: pg, sequenceNumbers: false, splitMessages: false}}
  - {name: forwarded, type: Syslog, syslog: {transport: udp}}
  workload: {builtin: TPCBLike, clients: [2], repeats: 1, duration: 1s, warmup: 0s}
`

// TestSyslogRun measures Syslog destinations end to end as root: the server's syslog()
// reaches logbench's receiver as /dev/log and every record is counted there (at least
// two a statement, seven statements a transaction). A forwarding transport is skipped, saying
// it needs a cluster.
func TestSyslogRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL servers")
	}
	if !runsAsRoot() {
		testenv.Missing(t, "%v", localpg.ErrDevLogNeedsRoot)
	}
	installation := localpgtest.Local(t)
	benchmark, err := manifest.Decode([]byte(syslogBenchmark))
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := Execute(context.Background(), &benchmark.Spec, Options{Installation: installation, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(outcome.Skipped) != 1 || outcome.Skipped[0].Destination != "forwarded" ||
		!strings.Contains(outcome.Skipped[0].Reason, "transport udp") {
		t.Errorf("skipped %+v, want forwarded, for its transport", outcome.Skipped)
	}
	rows := results.Aggregate(&benchmark.Spec, outcome.Runs)
	for _, name := range []string{"syslog", "whole"} {
		row := findRow(t, rows, name)
		if row.Repeats[0].Error != "" {
			t.Fatalf("%s: %s", name, row.Repeats[0].Error)
		}
		records, transactions := row.Records, row.Repeats[0].Transactions
		if transactions == 0 || records.Expected < 2*7*transactions || records.Delivered != records.Expected ||
			records.AccountingError != "" {
			t.Errorf("%s: records %+v after %d transactions, want at least 14 a transaction, all delivered",
				name, records, transactions)
		}
	}
}

func TestSyslogNeedsRootLocally(t *testing.T) {
	asRoot := runsAsRoot
	runsAsRoot = func() bool { return false }
	t.Cleanup(func() { runsAsRoot = asRoot })
	benchmark, err := manifest.Decode([]byte(syslogBenchmark))
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := Execute(context.Background(), &benchmark.Spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, skipped := range outcome.Skipped {
		if skipped.Destination != "forwarded" && !strings.Contains(skipped.Reason, "must start as root") {
			t.Errorf("%s skipped because %q, want it to say root is needed", skipped.Destination, skipped.Reason)
		}
		// Root or not, a forwarding transport needs the cluster's receiver Service.
		if skipped.Destination == "forwarded" && !strings.Contains(skipped.Reason, "transport udp forwards") {
			t.Errorf("forwarded skipped because %q, want it to say its transport needs a receiver Service", skipped.Reason)
		}
	}
	if len(outcome.Skipped) != 3 || len(outcome.Runs) != 0 {
		t.Errorf("outcome %+v, want all three destinations skipped", outcome)
	}
}

// TestRsyslogIsClusterOnly: rsyslog runs in the instance pod; a local run has only
// logbench's own receiver, and says so.
func TestRsyslogIsClusterOnly(t *testing.T) {
	d := v1alpha1.Destination{Name: "rsyslog", Type: v1alpha1.DestinationSyslog,
		Syslog: &v1alpha1.SyslogSpec{Receiver: v1alpha1.SyslogRsyslog}}
	if _, reason := localRoute(d); !strings.Contains(reason, "receiver Rsyslog runs rsyslogd in the CloudNativePG pod") {
		t.Errorf("an Rsyslog destination runs locally or for the wrong reason: %q", reason)
	}
}

// TestDestinationPlacementIgnoredLocally: one machine runs every client beside its
// server, so a destination's own placement changes nothing there, and the run says so;
// each destination is still measured against the baseline the spec places with it.
func TestDestinationPlacementIgnoredLocally(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{Destinations: []v1alpha1.Destination{
		{Name: "csv", Type: v1alpha1.DestinationCSVLog},
		{Name: "csv-same", Type: v1alpha1.DestinationCSVLog, Placement: v1alpha1.PlacementSameNode},
	}}
	if ignored := IgnoredFields(spec); !slices.Contains(ignored, "spec.destinations[].placement") {
		t.Errorf("IgnoredFields = %q, want spec.destinations[].placement among them", ignored)
	}
	spec.Destinations[1].Placement = ""
	if ignored := IgnoredFields(spec); slices.Contains(ignored, "spec.destinations[].placement") {
		t.Errorf("IgnoredFields = %q without a destination's placement", ignored)
	}
}

// TestStartTimeoutsIgnoredLocally: local servers start at once or fail with their own
// message, so the timeouts of a cluster's readiness and a pod's start mean nothing there,
// and the run says so.
func TestStartTimeoutsIgnoredLocally(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}}}
	if ignored := IgnoredFields(spec); len(ignored) != 0 {
		t.Errorf("IgnoredFields = %q, want none", ignored)
	}
	spec.ClusterReadyTimeout = &metav1.Duration{Duration: time.Minute}
	spec.PodStartTimeout = &metav1.Duration{Duration: time.Minute}
	if ignored := IgnoredFields(spec); !slices.Equal(ignored, []string{"spec.clusterReadyTimeout", "spec.podStartTimeout"}) {
		t.Errorf("IgnoredFields = %q, want spec.clusterReadyTimeout and spec.podStartTimeout", ignored)
	}
}
