package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench/benchtest"
	"github.com/logbench/logbench/internal/records"
)

// selectOnlyOutput is pgbench 15's report of a select-only run of 1000 transactions.
const selectOnlyOutput = `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: select.pgbench
scaling factor: 1
query mode: prepared
number of clients: 1
number of threads: 1
maximum number of tries: 1
duration: 1 s
number of transactions actually processed: 1000
number of failed transactions: 0 (0.000%)
latency average = 0.500 ms
latency stddev = 0.100 ms
initial connection time = 2.000 ms
tps = 1000.000000 (without initial connection time)
`

// arrivingDestination reports records arriving after pgbench ended: step more on each
// count, up to total.
type arrivingDestination struct {
	count, step, total int64
}

func (d *arrivingDestination) Delivered(context.Context) (int64, error) {
	return min(atomic.AddInt64(&d.count, d.step), d.total), nil
}

func TestRunAccountsForTheRecordsOfOneExecution(t *testing.T) {
	for name, tc := range map[string]struct {
		destination arrivingDestination
		wantDropped int64
	}{
		"every record arrives while draining": {arrivingDestination{step: 250, total: 1000}, 0},
		"the destination lost some":           {arrivingDestination{step: 400, total: 900}, 100},
	} {
		t.Run(name, func(t *testing.T) {
			var gotArgs, gotEnv []string
			runner := func(_ context.Context, args, env []string) ([]byte, error) {
				gotArgs, gotEnv = args, env
				return []byte(selectOnlyOutput), nil
			}
			dest := tc.destination
			result, err := Run(context.Background(), Execution{
				Destination: v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog},
				Logging:     v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll},
				Workload: v1alpha1.WorkloadSpec{
					Builtin:   v1alpha1.WorkloadSelectOnly,
					QueryMode: v1alpha1.QueryPrepared,
					Scale:     1,
					Duration:  metav1.Duration{Duration: time.Second},
				},
				Clients:      1,
				Repeat:       2,
				DrainTimeout: 10 * time.Second,
				Tag:          "lb_csv_c1_r2_000000000000",
				ScriptDir:    t.TempDir(),
			}, runner, &dest)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(gotEnv, " "), "PGAPPNAME=lb_csv_c1_r2_000000000000") ||
				!slices.Contains(gotArgs, "-n") {
				t.Errorf("pgbench ran with args %v env %v: want the tag as application name and -n", gotArgs, gotEnv)
			}
			if result.Repeat != 2 || result.TPS != 1000 || result.Transactions != 1000 || result.LatencyStdDevMs != 0.1 {
				t.Errorf("result %+v does not carry pgbench's figures", result)
			}
			records := result.Records
			if records.Expected != 1000 || records.Delivered != tc.destination.total || records.Dropped == nil ||
				*records.Dropped != tc.wantDropped {
				t.Errorf("records %+v, want 1000 expected, %d delivered, %d dropped", records, tc.destination.total, tc.wantDropped)
			}
			if result.DrainSeconds <= 0 {
				t.Errorf("drain of %vs: records arrived after pgbench ended", result.DrainSeconds)
			}
		})
	}
}

// explainingDestination holds every record at once and accounts for them itself.
type explainingDestination struct {
	arrivingDestination
	accounted []int64
}

func (d *explainingDestination) Account(
	_ context.Context,
	want records.Expectation,
	delivered int64,
) (v1alpha1.Records, error) {
	d.accounted = append(d.accounted, want.Records, delivered)
	return v1alpha1.Records{Expected: want.Records, Delivered: delivered, DropReason: "explained"}, nil
}

// fluentBitExecution is one select-only run, every statement logged, of a Fluent Bit
// sidecar destination.
func fluentBitExecution(t *testing.T) Execution {
	return Execution{
		Destination: v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar},
		Logging:     v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll},
		Workload:    v1alpha1.WorkloadSpec{Builtin: v1alpha1.WorkloadSelectOnly, QueryMode: v1alpha1.QueryPrepared, Scale: 1},
		Clients:     1,
		Repeat:      1,
		Tag:         "lb_fluent_c1_r1_000000000000",
		ScriptDir:   t.TempDir(),
	}
}

func TestRunLetsTheDestinationAccountForItsRecords(t *testing.T) {
	runner := func(context.Context, []string, []string) ([]byte, error) { return []byte(selectOnlyOutput), nil }
	dest := &explainingDestination{arrivingDestination: arrivingDestination{step: 1000, total: 1000}}
	result, err := Run(context.Background(), fluentBitExecution(t), runner, dest)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dest.accounted, []int64{1000, 1000}) || result.Records.DropReason != "explained" {
		t.Errorf(
			"accounted %v, records %+v: want the destination's own account of 1000 expected and delivered",
			dest.accounted,
			result.Records,
		)
	}
}

// journal records what happened in a run, in order.
type journal struct{ events []string }

func (j *journal) Start() (Measurement, error) { j.events = append(j.events, "start"); return j, nil }

func (j *journal) Server() (v1alpha1.ProcessUsage, error) {
	j.events = append(j.events, "server")
	return v1alpha1.ProcessUsage{CPUSeconds: new(1.0), WallSeconds: 2}, nil
}

func (j *journal) Shipper() (*v1alpha1.ProcessUsage, error) {
	j.events = append(j.events, "shipper")
	return &v1alpha1.ProcessUsage{CPUSeconds: new(3.0), WallSeconds: 4}, nil
}

func (j *journal) Receiver() (*v1alpha1.ProcessUsage, error) {
	j.events = append(j.events, "receiver")
	return &v1alpha1.ProcessUsage{CPUSeconds: new(5.0), WallSeconds: 4}, nil
}

func (j *journal) End() { j.events = append(j.events, "end") }

type journaledDestination struct {
	arrivingDestination
	journal *journal
}

func (d *journaledDestination) Delivered(ctx context.Context) (int64, error) {
	d.journal.events = append(d.journal.events, "count")
	return d.arrivingDestination.Delivered(ctx)
}

// TestRunMeasuresTheServerDuringPgbenchAndTheShipperUntilTheDrainEnds: the server is
// measured while pgbench runs; the shipper, and a syslog receiver, work on after it,
// until the drain's last count.
func TestRunMeasuresTheServerDuringPgbenchAndTheShipperUntilTheDrainEnds(t *testing.T) {
	var events journal
	runner := func(context.Context, []string, []string) ([]byte, error) {
		events.events = append(events.events, "pgbench")
		return []byte(selectOnlyOutput), nil
	}
	exec := fluentBitExecution(t)
	exec.Meter = &events
	dest := &journaledDestination{arrivingDestination{step: 1000, total: 1000}, &events}
	result, err := Run(context.Background(), exec, runner, dest)
	if err != nil {
		t.Fatal(err)
	}
	// The drain ends at the first count that holds every record; the final recount
	// follows the shipper's measurement.
	want := []string{"start", "pgbench", "server", "count", "shipper", "receiver", "count", "end"}
	if !slices.Equal(events.events, want) {
		t.Errorf("events %v, want %v", events.events, want)
	}
	if result.Server == nil || *result.Server.CPUSeconds != 1 || result.Shipper == nil || *result.Shipper.CPUSeconds != 3 ||
		result.Receiver == nil || *result.Receiver.CPUSeconds != 5 {
		t.Errorf("server %+v, shipper %+v, receiver %+v", result.Server, result.Shipper, result.Receiver)
	}
}

func TestDrainStopsAtTheDeadline(t *testing.T) {
	dest := &arrivingDestination{step: 1, total: 1 << 40}
	began := time.Now()
	drained, err := Drain(context.Background(), dest, records.Expectation{Records: 1 << 41},
		Wait{Ended: began, Deadline: began.Add(500 * time.Millisecond), Quiet: time.Minute}, SystemClock)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(began); elapsed > 2*time.Second || drained.Delivered == 0 ||
		drained.End != v1alpha1.DrainTimeout {
		t.Errorf("drain returned %+v after %v: want a partial count at the 500ms deadline", drained, elapsed)
	}
}

// arrival is the records a destination holds from some time after pgbench ended on.
type arrival struct {
	after time.Duration
	total int64
}

// timeline is a destination whose records arrive on a schedule. A count sees what had
// arrived when it started and takes countTakes of the clock.
type timeline struct {
	clock      *benchtest.SteppingClock
	ended      time.Time
	arrivals   []arrival
	countTakes time.Duration
}

// pipelineTimeline is a timeline whose pipeline tells what it has in flight (InFlight).
type pipelineTimeline struct {
	*timeline
	// inFlightFor is how long after pgbench ended the pipeline says records are still on
	// their way.
	inFlightFor time.Duration
}

func (d pipelineTimeline) InFlight(context.Context) (int64, error) {
	if d.clock.Now().Before(d.ended.Add(d.inFlightFor)) {
		return 1, nil
	}
	return 0, nil
}

func (d *timeline) Delivered(context.Context) (int64, error) {
	var count int64
	now := d.clock.Now()
	for _, a := range d.arrivals {
		if !now.Before(d.ended.Add(a.after)) {
			count = a.total
		}
	}
	d.clock.Spend(d.countTakes)
	return count, nil
}

// TestDrainWaitsForRecordsOnTheirWay checks when a drain ends and what it reports. The
// first two cases end at once with 600 and 700 records under the rule of a 2 s quiet
// period that counts from the end of pgbench. A shipper that tells what it has in flight
// (pipeline) ends its drain without a quiet period once it has none.
func TestDrainWaitsForRecordsOnTheirWay(t *testing.T) {
	file := v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}
	loki := v1alpha1.Destination{Name: "loki", Type: v1alpha1.DestinationLoki}
	nodeAgent := v1alpha1.Destination{Name: "platform", Type: v1alpha1.DestinationStdout, Loki: &v1alpha1.LokiSpec{}}
	rising := make([]arrival, 0, 100)
	for second := range 100 {
		rising = append(rising, arrival{time.Duration(second) * time.Second, int64(second + 1)})
	}
	for name, tc := range map[string]struct {
		destination v1alpha1.Destination
		expected    records.Expectation
		arrivals    []arrival
		countTakes  time.Duration
		timeout     time.Duration
		// pipeline: the destination tells what it has in flight, for inFlightFor.
		pipeline      bool
		inFlightFor   time.Duration
		wantDelivered int64
		wantEnd       v1alpha1.DrainEnd
		wantDrain     time.Duration
		wantCurve     []v1alpha1.DrainPoint
	}{
		// Counts start at 0, 2.7 and 5.4 s: the third sees everything and returns at 7.9 s.
		"the time a count takes is not quiet time": {file, records.Expectation{Records: 1000},
			[]arrival{{0, 600}, {3 * time.Second, 1000}}, 2500 * time.Millisecond, time.Minute, false, 0,
			1000, v1alpha1.DrainComplete, 7900 * time.Millisecond, nil},
		// Counts start every 250 ms; the one at 6 s sees the records a retry brought.
		"records waiting for the shipper's retry": {loki, records.Expectation{Records: 1000},
			[]arrival{{0, 700}, {6 * time.Second, 1000}}, 50 * time.Millisecond, time.Minute, true, 6 * time.Second,
			1000, v1alpha1.DrainComplete, 6050 * time.Millisecond,
			[]v1alpha1.DrainPoint{{AfterSeconds: 0, Delivered: 700}, {AfterSeconds: 1, Delivered: 700}, {AfterSeconds: 5, Delivered: 700}, {AfterSeconds: 6, Delivered: 1000}}},
		// The shipper dropped 300 and holds none: the count after its answer, 250 ms on,
		// finds no record more.
		"records the shipper dropped": {loki, records.Expectation{Records: 1000},
			[]arrival{{0, 700}}, 50 * time.Millisecond, time.Minute, true, 0,
			700, v1alpha1.DrainSettled, 50 * time.Millisecond,
			[]v1alpha1.DrainPoint{{AfterSeconds: 0, Delivered: 700}, {AfterSeconds: 0.25, Delivered: 700}}},
		// Records that reach the backend after the shipper's answer hold the drain for one
		// count more.
		"records stored after the shipper's answer": {loki, records.Expectation{Records: 1000},
			[]arrival{{0, 500}, {100 * time.Millisecond, 700}}, 50 * time.Millisecond, time.Minute, true, 0,
			700, v1alpha1.DrainSettled, 300 * time.Millisecond, nil},
		// Without a pipeline that tells, the count that saw 700 returned at 50 ms and the
		// first count started 10 s later ends the drain.
		"records lost for good": {loki, records.Expectation{Records: 1000},
			[]arrival{{0, 700}}, 50 * time.Millisecond, time.Minute, false, 0,
			700, v1alpha1.DrainQuiet, 50 * time.Millisecond,
			[]v1alpha1.DrainPoint{{AfterSeconds: 0, Delivered: 700}, {AfterSeconds: 1, Delivered: 700}, {AfterSeconds: 5, Delivered: 700}, {AfterSeconds: 10.25, Delivered: 700}}},
		// The collector's backoff grows past the quiet period: while the shipper holds
		// records for a retry the drain waits, and the retry 25 s on delivers them.
		"records a late retry delivers": {loki, records.Expectation{Records: 1000},
			[]arrival{{0, 700}, {25 * time.Second, 1000}}, 50 * time.Millisecond, time.Minute, true, 25 * time.Second,
			1000, v1alpha1.DrainComplete, 25050 * time.Millisecond, nil},
		// Duplicates of a retried push bring the count to the expected one while 300
		// records still wait for a retry: the drain waits for them too.
		"duplicates reach the count before the records a retry delivers": {loki, records.Expectation{Records: 1000},
			[]arrival{{0, 1000}, {25 * time.Second, 1300}}, 50 * time.Millisecond, time.Minute, true, 25 * time.Second,
			1300, v1alpha1.DrainComplete, 25050 * time.Millisecond, nil},
		"records still in the shipper at the deadline": {loki, records.Expectation{Records: 1000},
			[]arrival{{0, 700}}, 50 * time.Millisecond, 20 * time.Second, true, time.Hour,
			700, v1alpha1.DrainTimeout, 50 * time.Millisecond, nil},
		// A node agent retries too, and does not tell: the Stdout destination counted in
		// its Loki waits the shipping quiet period.
		"records waiting for the node agent's retry": {nodeAgent, records.Expectation{Records: 1000},
			[]arrival{{0, 700}, {6 * time.Second, 1000}}, 50 * time.Millisecond, time.Minute, false, 0,
			1000, v1alpha1.DrainComplete, 6050 * time.Millisecond, nil},
		"an estimate is never complete": {file, records.Expectation{Records: 1000, Max: 2000, Estimate: true},
			[]arrival{{0, 1500}}, 0, time.Minute, false, 0,
			1500, v1alpha1.DrainQuiet, 0, nil},
		"records keep arriving until the timeout": {file, records.Expectation{Records: 1000},
			rising, 0, 3 * time.Second, false, 0,
			4, v1alpha1.DrainTimeout, 3 * time.Second, nil},
	} {
		t.Run(name, func(t *testing.T) {
			clock := benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
			ended := clock.Now()
			arriving := &timeline{clock: clock, ended: ended, arrivals: tc.arrivals, countTakes: tc.countTakes}
			var dest Destination = arriving
			if tc.pipeline {
				dest = pipelineTimeline{timeline: arriving, inFlightFor: tc.inFlightFor}
			}
			wait := Wait{Ended: ended, Deadline: ended.Add(tc.timeout), Quiet: QuietPeriod(tc.destination)}
			drained, err := Drain(context.Background(), dest, tc.expected, wait, clock)
			if err != nil {
				t.Fatal(err)
			}
			assertDrained(t, drained, ended, tc.wantDelivered, tc.wantEnd, tc.wantDrain)
			if tc.wantCurve != nil && !slices.Equal(drained.Curve, tc.wantCurve) {
				t.Errorf("curve %v, want %v", drained.Curve, tc.wantCurve)
			}
			if quietFor := clock.Now().Sub(drained.LastArrival); tc.wantEnd == v1alpha1.DrainQuiet && quietFor < wait.Quiet {
				t.Errorf("drain ended quiet %s after the last arrival, want at least %s", quietFor, wait.Quiet)
			}
		})
	}
}

// assertDrained checks what a drain that began when pgbench ended saw: the records, why
// it ended and when the last of them arrived.
func assertDrained(t *testing.T, drained Drained, ended time.Time, delivered int64, end v1alpha1.DrainEnd,
	drain time.Duration,
) {
	t.Helper()
	if got := drained.LastArrival.Sub(ended); drained.Delivered != delivered || drained.End != end || got != drain {
		t.Errorf("drain saw %d records, ended %s, last arrival after %s; want %d, %s, %s",
			drained.Delivered, drained.End, got, delivered, end, drain)
	}
}

// TestDrainOfRecordsAlreadyDeliveredEndsWithTheFirstCount: the records were there when
// the first count returned, maybe earlier; the drain takes that count's time, where it
// took none before.
func TestDrainOfRecordsAlreadyDeliveredEndsWithTheFirstCount(t *testing.T) {
	clock := benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	ended := clock.Now()
	dest := &timeline{clock: clock, ended: ended, arrivals: []arrival{{0, 10}}, countTakes: 300 * time.Millisecond}
	drained, err := Drain(context.Background(), dest, records.Expectation{Records: 10},
		Wait{Ended: ended, Deadline: ended.Add(time.Minute), Quiet: time.Second}, clock)
	if err != nil {
		t.Fatal(err)
	}
	if drain := drained.LastArrival.Sub(ended); drained.Delivered != 10 || drain != 300*time.Millisecond ||
		drained.End != v1alpha1.DrainComplete {
		t.Errorf(
			"drain = %d records, last at %v after pgbench ended, %s: want 10 complete after the first count's 300ms",
			drained.Delivered,
			drain,
			drained.End,
		)
	}
}

// restartingDestination is a timeline that does not answer from down to up after pgbench
// ended, as a backend restarting or unreachable for that long.
type restartingDestination struct {
	timeline
	down, up time.Duration
}

func (d *restartingDestination) Delivered(ctx context.Context) (int64, error) {
	if now := d.clock.Now(); !now.Before(d.ended.Add(d.down)) && now.Before(d.ended.Add(d.up)) {
		d.clock.Spend(d.countTakes)
		return 0, &UnavailableError{Err: fmt.Errorf("connection refused")}
	}
	return d.timeline.Delivered(ctx)
}

// TestDrainCountsThroughABackendThatDoesNotAnswer: a drain counts again until the
// destination answers, and its quiet time starts with the first answer, so that records
// that arrived unseen are not taken as lost; what a destination silent at the deadline
// may hold is unverified.
func TestDrainCountsThroughABackendThatDoesNotAnswer(t *testing.T) {
	shipped := v1alpha1.Destination{Name: "loki", Type: v1alpha1.DestinationLoki}
	for name, tc := range map[string]struct {
		down, up      time.Duration
		arrivals      []arrival
		wantDelivered int64
		wantEnd       v1alpha1.DrainEnd
		wantDrain     time.Duration
		wantErr       string
	}{
		// The restarted backend lost the 700 it held and has 300 from the shipper's retry.
		"down for 15 s, then it lost records": {2 * time.Second, 17 * time.Second,
			[]arrival{{0, 700}, {10 * time.Second, 300}}, 300, v1alpha1.DrainQuiet, 17 * time.Second, ""},
		"down from the first count until past the deadline": {0, time.Hour,
			[]arrival{{0, 1000}}, 0, v1alpha1.DrainTimeout, 0, "connection refused"},
	} {
		t.Run(name, func(t *testing.T) {
			clock := benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
			ended := clock.Now()
			dest := &restartingDestination{timeline{clock: clock, ended: ended, arrivals: tc.arrivals}, tc.down, tc.up}
			wait := Wait{Ended: ended, Deadline: ended.Add(time.Minute), Quiet: QuietPeriod(shipped)}
			drained, err := Drain(context.Background(), dest, records.Expectation{Records: 1000}, wait, clock)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if drained.Unanswered == nil || !strings.Contains(drained.Unanswered.Error(), tc.wantErr) ||
					drained.End != tc.wantEnd || clock.Now().Sub(ended) > time.Minute+time.Second {
					t.Fatalf("drain ended at %s, %s, unanswered %v; want %q at the deadline", clock.Now().Sub(ended),
						drained.End, drained.Unanswered, tc.wantErr)
				}
				// What the silent destination may hold is unverified, not dropped.
				count := unansweredCount(records.Expectation{Records: 1000}, drained)
				accounted := records.Reconcile(records.Expectation{Records: 1000}, count)
				if accounted.Unverified != 1000 || accounted.KnownDropped() != 0 ||
					!strings.Contains(accounted.UnverifiedReason, "did not answer") {
					t.Errorf("records %+v, want 1000 unverified and none dropped", accounted)
				}
				return
			}
			assertDrained(t, drained, ended, tc.wantDelivered, tc.wantEnd, tc.wantDrain)
			if quietFor := clock.Now().Sub(drained.LastArrival); quietFor < wait.Quiet {
				t.Errorf("drain ended quiet %s after the backend answered again, want at least %s", quietFor, wait.Quiet)
			}
		})
	}
}

// lateDestination holds drained records during the drain and late more once the run has
// been accounted, as a shipper's retry would deliver them after the drain ended.
type lateDestination struct {
	drained, late int64
	accounted     bool
}

func (d *lateDestination) Delivered(context.Context) (int64, error) {
	if d.accounted {
		return d.drained + d.late, nil
	}
	return d.drained, nil
}

func (d *lateDestination) Account(
	_ context.Context,
	want records.Expectation,
	delivered int64,
) (v1alpha1.Records, error) {
	d.accounted = true
	accounted := records.Reconcile(want, records.Count{Delivered: delivered})
	accounted.DropReason = "300 records needed retries"
	return accounted, nil
}

// TestRunReportsRecordsThatArriveAfterTheDrain: before the final recount, the 250 late
// records were reported as dropped and never seen again.
func TestRunReportsRecordsThatArriveAfterTheDrain(t *testing.T) {
	runner := func(context.Context, []string, []string) ([]byte, error) { return []byte(selectOnlyOutput), nil }
	dest := &lateDestination{drained: 700, late: 250}
	exec := fluentBitExecution(t)
	exec.DrainTimeout = time.Minute
	exec.Clock = benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	result, err := Run(context.Background(), exec, runner, dest)
	if err != nil {
		t.Fatal(err)
	}
	got := result.Records
	if got.Delivered != 700 || got.ArrivedLate != 250 || got.Dropped == nil || *got.Dropped != 50 || got.DropReason == "" {
		t.Errorf("records %+v, want 700 delivered, 250 late, 50 dropped, with the reason", got)
	}
	if result.DrainEnd != v1alpha1.DrainQuiet || len(result.DrainCurve) == 0 || result.DrainCurve[0].Delivered != 700 {
		t.Errorf("drain ended %q with curve %v, want quiet and a curve from 700 records", result.DrainEnd, result.DrainCurve)
	}
}

// fakeCollector plays PostgreSQL's logging collector in dir: it appends records to its
// current file, line by line, so the file may end inside a record.
type fakeCollector struct {
	t       *testing.T
	dir     string
	current string
	files   int
	// unfinished is the rest of the record the current file ends inside.
	unfinished string
	// markerLine renders a marker record of the log's format.
	markerLine func(text string) string
}

func newFakeCollector(t *testing.T, markerLine func(text string) string) *fakeCollector {
	c := &fakeCollector{t: t, dir: t.TempDir(), markerLine: markerLine}
	c.rotate()
	return c
}

// rotate continues in a new file.
func (c *fakeCollector) rotate() {
	c.files++
	c.current = fmt.Sprintf("postgresql-%02d.log", c.files)
	c.write("")
}

func (c *fakeCollector) write(text string) {
	c.t.Helper()
	f, err := os.OpenFile(filepath.Join(c.dir, c.current), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		c.t.Fatal(err)
	}
}

// mark finishes the record being written, then writes the marker record.
func (c *fakeCollector) mark(_ context.Context, id string) error {
	c.write(c.unfinished + c.markerLine(markerPrefix+id))
	c.unfinished = ""
	return nil
}

func stderrLine(app, message string) string {
	return `2026-11-23 10:00:00.000 UTC [1] postgres@postgres ` + app + " LOG:  " + message + "\n"
}

// stderrMarker is how PostgreSQL writes RAISE LOG's record in the stderr format.
func stderrMarker(text string) string {
	return stderrLine(
		"agent",
		text,
	) + "2026-11-23 10:00:00.000 UTC [1] postgres@postgres agent CONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE\n"
}

func csvRecord(app, message string) string {
	return `2026-11-23 10:00:00.000 UTC,"postgres","postgres",1234,"[local]",6561e8a0.4d2,1,"SELECT",` +
		`2026-11-23 10:00:00 UTC,3/4,0,LOG,00000,"` + message + `",,,,,,,,,"` + app + `","client backend",,0` + "\n"
}

func csvMarker(text string) string { return csvRecord("agent", text) }

// TestFileDestinationCountsOnlyWhatFollows checks that records written before the
// destination was created are not the run's, and that a file created later (rotation)
// is read from its start.
func TestFileDestinationCountsOnlyWhatFollows(t *testing.T) {
	collector := newFakeCollector(t, stderrMarker)
	const tag = "lb_d_c1_r1_000000000000"
	line := func(app string) string { return stderrLine(app, "statement: SELECT 1") }
	collector.write(line(tag) + line("other"))

	dest, err := NewFileDestination(
		context.Background(),
		LocalDirectory(collector.dir),
		collector.mark,
		records.FormatStderr,
		tag,
	)
	if err != nil {
		t.Fatal(err)
	}
	collector.write(line(tag) + line("other") + line(tag))
	collector.rotate()
	collector.write(line(tag))
	for attempt := 1; attempt <= 2; attempt++ { // a second count must not recount
		got, err := dest.Delivered(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got != 3 {
			t.Fatalf("count %d = %d, want 3", attempt, got)
		}
	}
	// Every byte written after the marker's line: its CONTEXT line and the other
	// session's record included.
	contextLine := stderrMarker("x")[len(stderrLine("agent", "x")):]
	want := int64(len(contextLine) + 3*len(line(tag)) + len(line("other")))
	if written, measured := dest.LogBytes(); !measured || written != want {
		t.Errorf("log bytes %d, %v; want the %d bytes written after the marker's line", written, measured, want)
	}
}

// TestFileDestinationStartsAtARecordBoundary creates the destination while the csvlog
// file ends inside a record whose quoted statement holds a newline: read from there,
// every later line would be taken for the inside of a quoted field.
func TestFileDestinationStartsAtARecordBoundary(t *testing.T) {
	collector := newFakeCollector(t, csvMarker)
	const tag = "lb_d_c1_r1_000000000000"
	multiLine := csvRecord("other", "statement: SELECT 1,\n  2")
	cut := strings.Index(multiLine, "\n") + 1
	collector.write(csvRecord("other", "statement: SELECT 1") + multiLine[:cut])
	collector.unfinished = multiLine[cut:]

	dest, err := NewFileDestination(
		context.Background(),
		LocalDirectory(collector.dir),
		collector.mark,
		records.FormatCSVLog,
		tag,
	)
	if err != nil {
		t.Fatal(err)
	}
	const runRecords = 1000
	var run strings.Builder
	for i := range runRecords {
		statement := "statement: SELECT 1 -- " + tag
		if i%10 == 0 {
			statement = "statement: SELECT\n  \"\"quoted\"\" -- " + tag
		}
		run.WriteString(csvRecord(tag, statement) + csvRecord("other", "statement: SELECT 2"))
	}
	collector.write(run.String())
	got, err := dest.Delivered(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != runRecords {
		t.Errorf("counted %d records of the run, want %d", got, runRecords)
	}
}

// splitDirectory reads at most a few bytes at a time, so that the marker and its line
// are split between reads.
type splitDirectory struct{ LocalDirectory }

func (d splitDirectory) ReadAt(ctx context.Context, name string, offset int64, n int) ([]byte, error) {
	return d.LocalDirectory.ReadAt(ctx, name, offset, min(n, 7))
}

func TestFileDestinationFindsAMarkerSplitBetweenReads(t *testing.T) {
	collector := newFakeCollector(t, csvMarker)
	const tag = "lb_d_c1_r1_000000000000"
	collector.write(csvRecord(tag, "statement: before the run"))
	dest, err := NewFileDestination(
		context.Background(),
		splitDirectory{LocalDirectory(collector.dir)},
		collector.mark,
		records.FormatCSVLog,
		tag,
	)
	if err != nil {
		t.Fatal(err)
	}
	collector.write(csvRecord(tag, "statement: SELECT 1") + csvRecord(tag, "statement: SELECT 2"))
	if got, err := dest.Delivered(context.Background()); err != nil || got != 2 {
		t.Errorf("Delivered = %d, %v; want 2", got, err)
	}
}

// TestFileDestinationFollowsTheMarkerIntoANewFile: the collector rotates between the
// listing and the marker; the file it left is no longer counted.
func TestFileDestinationFollowsTheMarkerIntoANewFile(t *testing.T) {
	collector := newFakeCollector(t, stderrMarker)
	const tag = "lb_d_c1_r1_000000000000"
	collector.write(stderrLine(tag, "statement: before the run"))
	mark := func(ctx context.Context, id string) error {
		collector.rotate()
		return collector.mark(ctx, id)
	}
	dest, err := NewFileDestination(context.Background(), LocalDirectory(collector.dir), mark, records.FormatStderr, tag)
	if err != nil {
		t.Fatal(err)
	}
	collector.write(stderrLine(tag, "statement: SELECT 1"))
	collector.rotate()
	collector.write(stderrLine(tag, "statement: SELECT 2"))
	if got, err := dest.Delivered(context.Background()); err != nil || got != 2 {
		t.Errorf("Delivered = %d, %v; want 2", got, err)
	}
}

func TestStreamDestinationFailsWhenTheStreamEnds(t *testing.T) {
	const tag = "lb_d_c1_r1_000000000000"
	reader, writer := io.Pipe()
	dest := NewStreamDestination(reader, records.FormatJSONLog, tag)
	// delivered waits for the background count to reach records or to fail.
	delivered := func(want int64) (int64, error) {
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, err := dest.Delivered(context.Background())
			if got >= want || err != nil || time.Now().After(deadline) {
				return got, err
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := writer.Write([]byte(`{"application_name":"` + tag + `"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := delivered(1); got != 1 || err != nil {
		t.Fatalf("while the stream is open: %d, %v; want 1 record and no error", got, err)
	}
	writer.Close()
	if got, err := delivered(2); got != 1 || err == nil || !strings.Contains(err.Error(), "count is incomplete") {
		t.Errorf("after the stream ended: %d, %v; want 1 record and an incomplete count", got, err)
	}
}

// TestWarmUpRunsBeforeTheFirstRepeatOnly: the warm-up runs for workload.warmup under its
// own tag, before repeat 1 only, and not at all when turned off.
func TestWarmUpRunsBeforeTheFirstRepeatOnly(t *testing.T) {
	for name, tc := range map[string]struct {
		repeat  int32
		warmup  time.Duration
		wantRun bool
	}{
		"first repeat":       {1, 3 * time.Second, true},
		"later repeat":       {2, 3 * time.Second, false},
		"warm-up turned off": {1, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			var calls [][]string
			runner := func(_ context.Context, args, env []string) ([]byte, error) {
				calls = append(calls, append(slices.Clone(args), env...))
				return []byte(selectOnlyOutput), nil
			}
			exec := Execution{
				Workload: v1alpha1.WorkloadSpec{Builtin: v1alpha1.WorkloadSelectOnly, Scale: 1,
					QueryMode: v1alpha1.QueryPrepared, Warmup: metav1.Duration{Duration: tc.warmup}},
				Clients: 2, Repeat: tc.repeat, Tag: "lb_d_c2_r1_000000000000", WarmupTag: "lb_d_c2_r0_000000000000",
				ScriptDir: t.TempDir(),
			}
			if err := WarmUp(context.Background(), exec, runner); err != nil {
				t.Fatal(err)
			}
			if (len(calls) == 1) != tc.wantRun || len(calls) > 1 {
				t.Fatalf("%d pgbench runs, want a warm-up: %v", len(calls), tc.wantRun)
			}
			if tc.wantRun {
				joined := strings.Join(calls[0], " ")
				if !strings.Contains(joined, "-T 3 ") || !strings.Contains(joined, "PGAPPNAME="+exec.WarmupTag) {
					t.Errorf("warm-up ran pgbench %s, want 3 s under the warm-up tag", joined)
				}
			}
		})
	}
}
