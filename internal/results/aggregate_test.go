package results

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
)

func testSpec(how v1alpha1.Aggregate, clients ...int32) *v1alpha1.LoggingBenchmarkSpec {
	return &v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{
			{Name: "csv", Type: v1alpha1.DestinationCSVLog},
			{Name: "stdout", Type: v1alpha1.DestinationStdout},
		},
		Baseline: v1alpha1.BaselineSpec{Enabled: true},
		Workload: v1alpha1.WorkloadSpec{Clients: clients, Aggregate: how},
	}
}

// exact is a successful repeat whose records were counted exactly.
func exact(tps float64, expected, delivered int64) v1alpha1.RepeatResult {
	return v1alpha1.RepeatResult{
		TPS: tps, LatencyAvgMs: 1000 / tps, LatencyStdDevMs: 1, DrainSeconds: tps / 1000,
		Records: v1alpha1.Records{Expected: expected, Delivered: delivered, Dropped: new(expected - delivered)},
	}
}

func withStages(r v1alpha1.RepeatResult, written, read, sent int64, stored *int64) v1alpha1.RepeatResult {
	r.Records.Stages = &v1alpha1.RecordStages{Written: &written, Read: &read, Sent: &sent, Stored: stored}
	r.Records.Stages.LostAt = r.Records.Stages.LosingStage(nil)
	return r
}

// withPipelineStages counts a Stdout destination's records in the container log and in
// its node agent's Loki.
func withPipelineStages(r v1alpha1.RepeatResult, containerLog, stored int64) v1alpha1.RepeatResult {
	r.Records.Stages = &v1alpha1.RecordStages{ContainerLog: &containerLog, Stored: &stored}
	r.Records.Stages.LostAt = r.Records.Stages.LosingStage(r.Records.ExactExpected())
	return r
}

func withPause(r v1alpha1.RepeatResult, seconds float64) v1alpha1.RepeatResult {
	r.Records.Stages.InputPausedSeconds = seconds
	return r
}

func withLogBytes(r v1alpha1.RepeatResult, bytes int64) v1alpha1.RepeatResult {
	r.LogBytes = &bytes
	return r
}

// withServer adds a server measurement of wall seconds to a repeat, whose transactions
// then are its TPS over them.
func withServer(r v1alpha1.RepeatResult, cpuSeconds, wallSeconds float64, peak *int64) v1alpha1.RepeatResult {
	r.Server = &v1alpha1.ProcessUsage{CPUSeconds: &cpuSeconds, WallSeconds: wallSeconds, PeakMemoryBytes: peak}
	r.Transactions = int64(r.TPS * wallSeconds)
	return r
}

// withShipper adds a shipper measurement to a repeat.
func withShipper(r v1alpha1.RepeatResult, cpuSeconds, wallSeconds float64, peak int64) v1alpha1.RepeatResult {
	r.Shipper = &v1alpha1.ProcessUsage{CPUSeconds: &cpuSeconds, WallSeconds: wallSeconds, PeakMemoryBytes: &peak}
	return r
}

// TestServerCost: the median of the repeats' cores and CPU per 1,000 transactions, the
// highest memory peak; repeats without a measurement (a cluster's, so far) count for none.
func TestServerCost(t *testing.T) {
	spec := testSpec(v1alpha1.AggregateMedian, 2)
	rows := Aggregate(spec, map[RunKey]v1alpha1.RepeatResult{
		{"csv", 2, 1}:    withServer(exact(1000, 100, 100), 4, 2, new(int64(300<<20))),
		{"csv", 2, 2}:    withServer(exact(1000, 100, 100), 3, 2, nil),
		{"csv", 2, 3}:    withServer(exact(2000, 100, 100), 2, 2, new(int64(200<<20))),
		{"csv", 2, 4}:    exact(1000, 100, 100),
		{"stdout", 2, 1}: exact(1000, 100, 100),
	})
	csv, stdout := rows[0], rows[1]
	if csv.ServerCPUCores == nil || *csv.ServerCPUCores != 1.5 {
		t.Errorf("cores %v, want the median of 2, 1.5 and 1", csv.ServerCPUCores)
	}
	// 4 s, 3 s and 2 s of CPU for 2000, 2000 and 4000 transactions.
	if got := csv.ServerCPUMsPer1kTransactions; got == nil || *got != 1500 {
		t.Errorf("CPU per 1,000 transactions %v ms, want the median of 2000, 1500 and 500", got)
	}
	if got := csv.ServerPeakMemoryBytes; got == nil || *got != 300<<20 {
		t.Errorf("peak memory %v, want the highest, 300 MiB", got)
	}
	if stdout.ServerCPUCores != nil || stdout.ServerCPUMsPer1kTransactions != nil || stdout.ServerPeakMemoryBytes != nil {
		t.Errorf("a row without a measurement has %+v", stdout)
	}
}

// TestShipperCost: the median of the sidecar's cores and CPU per 1,000 records the
// server wrote (lost ones too: the shipper handled them), the highest memory peak.
func TestShipperCost(t *testing.T) {
	spec := testSpec(v1alpha1.AggregateMedian, 2)
	rows := Aggregate(spec, map[RunKey]v1alpha1.RepeatResult{
		{"csv", 2, 1}: withShipper(exact(1000, 10000, 10000), 2, 10, 30<<20),
		{"csv", 2, 2}: withShipper(exact(1000, 20000, 5000), 2, 8, 50<<20),
		{"csv", 2, 3}: withShipper(exact(1000, 40000, 40000), 6, 12, 40<<20),
	})
	fluent := rows[0]
	if got := fluent.ShipperCPUCores; got == nil || *got != 0.25 {
		t.Errorf("cores %v, want the median of 0.2, 0.25 and 0.5", got)
	}
	if got := fluent.ShipperCPUMsPer1kRecords; got == nil || *got != 150 {
		t.Errorf("CPU per 1,000 records %v ms, want the median of 200, 100 and 150", got)
	}
	if got := fluent.ShipperPeakMemoryBytes; got == nil || *got != 50<<20 {
		t.Errorf("peak memory %v, want the highest, 50 MiB", got)
	}
	if fluent.ServerCPUCores != nil {
		t.Errorf("server cores %v from no server measurement", *fluent.ServerCPUCores)
	}
	if fluent.ReceiverCPUCores != nil || fluent.ReceiverPeakMemoryBytes != nil {
		t.Errorf("receiver cores %v from no receiver measurement", *fluent.ReceiverCPUCores)
	}
}

// TestReceiverCost: a forwarding Syslog destination's receiver, as the shipper: per
// second and per 1,000 records the server wrote, beside the sidecar's own figures.
func TestReceiverCost(t *testing.T) {
	spec := testSpec(v1alpha1.AggregateMedian, 2)
	withReceiver := func(r v1alpha1.RepeatResult, cpuSeconds, wallSeconds float64, peak int64) v1alpha1.RepeatResult {
		r = withShipper(r, 1, wallSeconds, 10<<20)
		r.Receiver = &v1alpha1.ProcessUsage{CPUSeconds: &cpuSeconds, WallSeconds: wallSeconds, PeakMemoryBytes: &peak}
		return r
	}
	rows := Aggregate(spec, map[RunKey]v1alpha1.RepeatResult{
		{"csv", 2, 1}: withReceiver(exact(1000, 10000, 10000), 3, 10, 20<<20),
		{"csv", 2, 2}: withReceiver(exact(1000, 20000, 20000), 4, 10, 60<<20),
	})
	row := rows[0]
	if got := row.ReceiverCPUCores; got == nil || *got != 0.35 {
		t.Errorf("receiver cores %v, want the median of 0.3 and 0.4", got)
	}
	if got := row.ReceiverCPUMsPer1kRecords; got == nil || *got != 250 {
		t.Errorf("receiver CPU per 1,000 records %v ms, want the median of 300 and 200", got)
	}
	if got := row.ReceiverPeakMemoryBytes; got == nil || *got != 60<<20 {
		t.Errorf("receiver peak memory %v, want the highest, 60 MiB", got)
	}
	if got := row.ShipperCPUCores; got == nil || *got != 0.1 {
		t.Errorf("shipper cores %v, want the sidecar's 0.1 alone", got)
	}
}

// TestLogVolume: bytes per record of the run written, and an hour's worth at the runs'
// rate; repeats without log bytes (Stdout, the baseline) leave the row without either.
func TestLogVolume(t *testing.T) {
	spec := testSpec(v1alpha1.AggregateMedian, 1)
	spec.Workload.Duration = metav1.Duration{Duration: 10 * time.Second}
	rows := Aggregate(spec, map[RunKey]v1alpha1.RepeatResult{
		{"baseline", 1, 1}: exact(1000, 0, 0),
		// A shipping run: per record of the file, not of what reached the backend.
		{"csv", 1, 1}:    withLogBytes(withStages(exact(1000, 10000, 9000), 10000, 10000, 9000, nil), 2_000_000),
		{"csv", 1, 2}:    withLogBytes(exact(1000, 10000, 10000), 3_000_000),
		{"csv", 1, 3}:    failed("pgbench: exit status 1"),
		{"stdout", 1, 1}: exact(1000, 10000, 10000),
	})
	byName := map[string]v1alpha1.Result{}
	for _, row := range rows {
		byName[row.Destination] = row
	}
	csv := byName["csv"]
	if csv.LogBytesPerRecord == nil || *csv.LogBytesPerRecord != 250 ||
		csv.LogGigabytesPerHour == nil || math.Abs(*csv.LogGigabytesPerHour-0.9) > 1e-9 {
		t.Errorf("csv: %v B/record, %v GB/h; want 250 (5 MB over 20000 records) and 0.9 (5 MB in 20 s)",
			csv.LogBytesPerRecord, csv.LogGigabytesPerHour)
	}
	for _, name := range []string{"baseline", "stdout"} {
		if row := byName[name]; row.LogBytesPerRecord != nil || row.LogGigabytesPerHour != nil {
			t.Errorf("%s has no log bytes, yet %v B/record, %v GB/h", name, *row.LogBytesPerRecord, *row.LogGigabytesPerHour)
		}
	}
}

func withDropReason(r v1alpha1.RepeatResult, reason string) v1alpha1.RepeatResult {
	r.Records.DropReason = reason
	return r
}

func failed(msg string) v1alpha1.RepeatResult { return v1alpha1.RepeatResult{Error: msg} }

func TestAggregate(t *testing.T) {
	tests := []struct {
		name  string
		spec  *v1alpha1.LoggingBenchmarkSpec
		runs  map[RunKey]v1alpha1.RepeatResult
		check func(t *testing.T, rows []v1alpha1.Result)
	}{
		{
			name: "rows follow spec order and skip pairs without runs",
			spec: testSpec(v1alpha1.AggregateMedian, 4, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"stdout", 1, 1}:   exact(100, 10, 10),
				{"csv", 1, 1}:      exact(100, 10, 10),
				{"csv", 4, 1}:      exact(100, 10, 10),
				{"baseline", 1, 1}: exact(100, 0, 0),
				{"unknown", 1, 1}:  exact(100, 0, 0),
				{"csv", 2, 1}:      exact(100, 0, 0),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				got := make([]string, 0, len(rows))
				for _, r := range rows {
					got = append(got, fmt.Sprintf("%s/%d", r.Destination, r.Clients))
				}
				if want := []string{"baseline/1", "csv/4", "csv/1", "stdout/1"}; !slices.Equal(got, want) {
					t.Errorf("rows = %v, want %v", got, want)
				}
			},
		},
		{
			name: "odd median takes the middle repeat and its latency",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: exact(300, 30, 30),
				{"csv", 1, 2}: exact(100, 10, 9),
				{"csv", 1, 3}: exact(200, 20, 18),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				r := rows[0]
				assertFloat(t, "TPS", r.TPS, 200)
				assertFloat(t, "latency", r.LatencyAvgMs, 5)
				assertFloat(t, "stddev", r.TPSStdDev, 100)
				assertFloat(t, "CV", r.TPSCoefficientOfVariation, 50)
				assertFloat(t, "drain", r.DrainSeconds, 0.3)
				if r.Records.Expected != 60 || r.Records.Delivered != 57 || *r.Records.Dropped != 3 {
					t.Errorf("records = %+v", r.Records)
				}
				for i, rep := range r.Repeats {
					if rep.Repeat != int32(i+1) {
						t.Errorf("repeat %d has index %d", i, rep.Repeat)
					}
				}
			},
		},
		{
			name: "even median is the mean of the middle two; latency from the lower",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: exact(400, 0, 0),
				{"csv", 1, 2}: exact(100, 0, 0),
				{"csv", 1, 3}: exact(250, 0, 0),
				{"csv", 1, 4}: exact(200, 0, 0),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				assertFloat(t, "TPS", rows[0].TPS, 225)
				assertFloat(t, "latency", rows[0].LatencyAvgMs, 5)
			},
		},
		{
			name: "best takes the fastest repeat",
			spec: testSpec(v1alpha1.AggregateBest, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: exact(100, 0, 0),
				{"csv", 1, 2}: exact(250, 0, 0),
				{"csv", 1, 3}: exact(200, 0, 0),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				assertFloat(t, "TPS", rows[0].TPS, 250)
				assertFloat(t, "latency", rows[0].LatencyAvgMs, 4)
			},
		},
		{
			name: "single repeat has no spread",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{{"csv", 1, 1}: exact(100, 0, 0)},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				assertFloat(t, "stddev", rows[0].TPSStdDev, 0)
				assertFloat(t, "CV", rows[0].TPSCoefficientOfVariation, 0)
			},
		},
		{
			name: "failed repeats are kept but not counted",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: exact(100, 10, 10),
				{"csv", 1, 2}: failed("pgbench: connection refused"),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				r := rows[0]
				assertFloat(t, "TPS", r.TPS, 100)
				if len(r.Repeats) != 2 || r.Records.Expected != 10 {
					t.Errorf("row = %+v", r)
				}
			},
		},
		{
			name: "estimates and accounting errors propagate; dropped needs every repeat exact",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: exact(100, 10, 10),
				{"csv", 1, 2}: {
					TPS:     100,
					Records: v1alpha1.Records{Expected: 10, Delivered: 12, AccountingError: "delivered 12 > expected 10"},
				},
				{"csv", 1, 3}: {TPS: 100, Records: v1alpha1.Records{Expected: 10, Delivered: 5, ExpectedIsEstimate: true}},
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				rec := rows[0].Records
				if rec.Dropped != nil || !rec.ExpectedIsEstimate || rec.Expected != 30 || rec.Delivered != 27 {
					t.Errorf("records = %+v", rec)
				}
				if rec.AccountingError != "repeat 2: delivered 12 > expected 10" {
					t.Errorf("accounting error = %q", rec.AccountingError)
				}
			},
		},
		{
			name: "each repeat's drop reason is kept with its repeat",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: withDropReason(
					exact(100, 10, 5),
					"loki refused pushes of 5 samples, retries included (rate_limited 5); 5 records needed retries",
				),
				{"csv", 1, 2}: exact(100, 10, 10),
				{"csv", 1, 3}: withDropReason(exact(100, 10, 8), "the shipper dropped 2 records (errors or retries exhausted)"),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				want := "repeat 1: loki refused pushes of 5 samples, retries included (rate_limited 5); 5 records needed retries | " +
					"repeat 3: the shipper dropped 2 records (errors or retries exhausted)"
				if rec := rows[0].Records; rec.DropReason != want || rec.Dropped == nil || *rec.Dropped != 7 {
					t.Errorf("records = %+v, want 7 dropped because %q", rec, want)
				}
			},
		},
		{
			name: "stages add up over repeats, and the sums name the losing stage",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: withStages(exact(100, 10, 10), 10, 10, 10, new(int64(10))),
				{"csv", 1, 2}: withStages(exact(100, 10, 6), 10, 10, 10, new(int64(6))),
				{"csv", 1, 3}: withStages(exact(100, 10, 10), 10, 10, 10, new(int64(10))),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				want := v1alpha1.RecordStages{Written: new(int64(30)), Read: new(int64(30)), Sent: new(int64(30)), Stored: new(int64(26)), LostAt: "stored"}
				if got := rows[0].Records.Stages; got == nil || !reflect.DeepEqual(*got, want) {
					t.Errorf("stages %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "a Stdout pipeline's stages add up, and a container log short of the expectation lost records",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"stdout", 1, 1}: withPipelineStages(exact(100, 10, 10), 10, 10),
				{"stdout", 1, 2}: withPipelineStages(exact(100, 10, 9), 9, 9),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				want := v1alpha1.RecordStages{ContainerLog: new(int64(19)), Stored: new(int64(19)), LostAt: "containerLog"}
				if got := rows[0].Records.Stages; got == nil || !reflect.DeepEqual(*got, want) {
					t.Errorf("stages %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "stages are left out when a repeat has none",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: withStages(exact(100, 10, 10), 10, 10, 10, nil),
				{"csv", 1, 2}: exact(100, 10, 10),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				if got := rows[0].Records.Stages; got != nil {
					t.Errorf("stages %+v, want none", got)
				}
			},
		},
		{
			name: "a repeat that delivered more than expected does not offset another's drops",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: exact(100, 10, 5),
				{"csv", 1, 2}: {
					TPS: 100,
					Records: v1alpha1.Records{
						Expected:        10,
						Delivered:       13,
						Dropped:         new(int64(-3)),
						AccountingError: "13 delivered, at most 10",
					},
				},
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				rec := rows[0].Records
				if rec.Dropped != nil || rec.Expected != 20 || rec.Delivered != 18 || rec.AccountingError == "" {
					t.Errorf("records = %+v, want no dropped count and the accounting error", rec)
				}
				if rec.DroppedAtLeast == nil || *rec.DroppedAtLeast != 5 {
					t.Errorf("dropped at least %v, want the other repeat's 5", rec.DroppedAtLeast)
				}
			},
		},
		{
			name: "late records and drops below a lower bound are summed",
			spec: testSpec(v1alpha1.AggregateMedian, 1),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"csv", 1, 1}: {
					TPS:     100,
					Records: v1alpha1.Records{Expected: 10, Delivered: 6, ArrivedLate: 2, Dropped: new(int64(2))},
				},
				{"csv", 1, 2}: {
					TPS: 100,
					Records: v1alpha1.Records{
						Expected:           10,
						Delivered:          7,
						ArrivedLate:        1,
						DroppedAtLeast:     new(int64(2)),
						ExpectedIsEstimate: true,
					},
				},
				{"csv", 1, 3}: {TPS: 100, Records: v1alpha1.Records{Expected: 10, Delivered: 12, ExpectedIsEstimate: true}},
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				rec := rows[0].Records
				if rec.Dropped != nil || rec.DroppedAtLeast == nil || *rec.DroppedAtLeast != 4 || rec.ArrivedLate != 3 ||
					rec.Delivered != 25 {
					t.Errorf("records = %+v, want 25 delivered, 3 late, at least 4 dropped", rec)
				}
			},
		},
		{
			name: "overhead against the baseline at the same client count, negative kept",
			spec: testSpec(v1alpha1.AggregateMedian, 1, 4),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"baseline", 1, 1}: exact(200, 0, 0),
				{"baseline", 4, 1}: exact(400, 0, 0),
				{"csv", 1, 1}:      exact(150, 0, 0),
				{"csv", 4, 1}:      exact(440, 0, 0),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				if rows[0].OverheadPercent != nil || rows[1].OverheadPercent != nil {
					t.Errorf("baseline rows have an overhead")
				}
				assertFloat(t, "overhead at 1", *rows[2].OverheadPercent, 25)
				assertFloat(t, "overhead at 4", *rows[3].OverheadPercent, -10)
			},
		},
		{
			name: "no overhead without a successful baseline, or for an all-failed row",
			spec: testSpec(v1alpha1.AggregateMedian, 1, 4),
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"baseline", 1, 1}: failed("boom"),
				{"baseline", 4, 1}: exact(400, 0, 0),
				{"csv", 1, 1}:      exact(150, 0, 0),
				{"csv", 4, 1}:      failed("boom"),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				for _, r := range rows {
					if r.OverheadPercent != nil {
						t.Errorf("%s/%d has overhead %v", r.Destination, r.Clients, *r.OverheadPercent)
					}
				}
				failedRow := rows[3]
				if failedRow.TPS != 0 || len(failedRow.Repeats) != 1 || failedRow.Records.Dropped != nil {
					t.Errorf("all-failed row = %+v", failedRow)
				}
			},
		},
		{
			name: "a listed None destination is the baseline",
			spec: &v1alpha1.LoggingBenchmarkSpec{
				Destinations: []v1alpha1.Destination{
					{Name: "csv", Type: v1alpha1.DestinationCSVLog},
					{Name: "quiet", Type: v1alpha1.DestinationNone},
				},
				Baseline: v1alpha1.BaselineSpec{Enabled: true},
				Workload: v1alpha1.WorkloadSpec{Clients: []int32{1}},
			},
			runs: map[RunKey]v1alpha1.RepeatResult{
				{"quiet", 1, 1}: exact(100, 0, 0),
				{"csv", 1, 1}:   exact(50, 0, 0),
			},
			check: func(t *testing.T, rows []v1alpha1.Result) {
				assertFloat(t, "overhead", *rows[0].OverheadPercent, 50)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, Aggregate(tt.spec, tt.runs))
		})
	}
}

func TestSummarize(t *testing.T) {
	succeeded := []v1alpha1.RepeatResult{{Repeat: 1}}
	row := func(destination string, overhead *float64, records v1alpha1.Records) v1alpha1.Result {
		return v1alpha1.Result{
			Destination:     destination,
			Clients:         1,
			OverheadPercent: overhead,
			Records:         records,
			Repeats:         succeeded,
		}
	}
	tests := []struct {
		name string
		rows []v1alpha1.Result
		want v1alpha1.Summary
	}{
		{name: "empty"},
		{
			name: "worst overhead and exact drops",
			rows: []v1alpha1.Result{
				row("a", new(12.34), v1alpha1.Records{Dropped: new(int64(5))}),
				row("b", new(42.06), v1alpha1.Records{Dropped: new(int64(7))}),
				{Destination: "failed", Clients: 1, Repeats: []v1alpha1.RepeatResult{failed("boom")}},
			},
			want: v1alpha1.Summary{WorstOverhead: "42.1%", DroppedRecords: 12, Dropped: "12"},
		},
		{
			// The exact sum alone was all the summary showed: the 40 dropped below the
			// bound and the row whose counts are wrong went unseen.
			name: "exact, lower-bound and unknown drops apart",
			rows: []v1alpha1.Result{
				row("csv", new(10.0), v1alpha1.Records{Dropped: new(int64(0))}),
				row("loki", new(20.0), v1alpha1.Records{Dropped: new(int64(120))}),
				row("slow", new(3.0), v1alpha1.Records{ExpectedIsEstimate: true, DroppedAtLeast: new(int64(40))}),
				row("reached", new(4.0), v1alpha1.Records{ExpectedIsEstimate: true}),
				row("wrong", new(5.0), v1alpha1.Records{AccountingError: "repeat 1: 13 records arrived"}),
			},
			want: v1alpha1.Summary{WorstOverhead: "20.0%", DroppedRecords: 120, DroppedAtLeast: 40,
				DropsUnknown: []string{"reached/1", "wrong/1"}, Dropped: "120 + ≥40, 2 rows unknown"},
		},
		{
			// A rotation hid 17,327 records from logbench, and a retried push stored 112
			// twice: neither is dropped, both are shown beside the drops.
			name: "unverified records and duplicates are not drops",
			rows: []v1alpha1.Result{
				row("rotated", new(10.0), v1alpha1.Records{Dropped: new(int64(0)), Unverified: 17327}),
				row("retried", new(20.0), v1alpha1.Records{DroppedAtLeast: new(int64(10)), Duplicates: 112}),
			},
			want: v1alpha1.Summary{WorstOverhead: "20.0%", DroppedAtLeast: 10, UnverifiedRecords: 17327,
				DuplicateRecords: 112, Dropped: "0 + ≥10"},
		},
		{
			name: "only unknown drops",
			rows: []v1alpha1.Result{row("slow", nil, v1alpha1.Records{ExpectedIsEstimate: true})},
			want: v1alpha1.Summary{DropsUnknown: []string{"slow/1"}, Dropped: "1 row unknown"},
		},
		{
			name: "negative worst is shown as is",
			rows: []v1alpha1.Result{{OverheadPercent: new(-1.25)}},
			want: v1alpha1.Summary{WorstOverhead: "-1.2%"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.rows); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAccountingErrorsNamesTheRows(t *testing.T) {
	rows := []v1alpha1.Result{
		{Destination: "csv", Clients: 1},
		{Destination: "csv", Clients: 4, Records: v1alpha1.Records{AccountingError: "repeat 2: 13 records arrived"}},
	}
	if got := AccountingErrors(rows); !slices.Equal(got, []string{"csv/4"}) {
		t.Errorf("AccountingErrors = %v, want csv/4", got)
	}
}

func assertFloat(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestRowDuplicatesExactOnlyWhenEveryRepeatCounted: a row's duplicates are counted by
// identity when each of its repeats' were; one lower bound makes the row's a lower bound.
func TestRowDuplicatesExactOnlyWhenEveryRepeatCounted(t *testing.T) {
	repeat := func(exactDuplicates bool) v1alpha1.RepeatResult {
		r := withStages(exact(100, 1000, 1000), 1000, 1000, 1000, new(int64(1000)))
		r.Records.Stages.DuplicatesExact = exactDuplicates
		return r
	}
	for _, tc := range []struct {
		repeats []bool
		want    bool
	}{{[]bool{true, true}, true}, {[]bool{true, false}, false}, {[]bool{false}, false}} {
		ok := make([]v1alpha1.RepeatResult, 0, len(tc.repeats))
		for _, exactDuplicates := range tc.repeats {
			ok = append(ok, repeat(exactDuplicates))
		}
		if got := sumStages(ok, nil).DuplicatesExact; got != tc.want {
			t.Errorf("repeats counted by identity %v: row's %t, want %t", tc.repeats, got, tc.want)
		}
	}
}

// TestAggregateBoundsTheRunsText feeds runs whose every text is far longer than the
// status admits, as a Job's result annotation may hold, and a destination's line prefix
// that a row's logging settings quote: the rows keep each cut to its bound, and the runs
// given are left as they were.
func TestAggregateBoundsTheRunsText(t *testing.T) {
	huge := strings.Repeat("é", 64<<10)
	run := func(failed bool) v1alpha1.RepeatResult {
		r := exact(100, 10, 8)
		r.ClientNode, r.ServerNode = huge, huge
		r.Records.DropReason, r.Records.UnverifiedReason, r.Records.AccountingError = huge, huge, huge
		r.Records.Sampler = &v1alpha1.SamplerCheck{Verdict: v1alpha1.SamplerUnknown, Message: huge}
		r.Records.Stages = &v1alpha1.RecordStages{LostAt: huge, UnverifiedAt: huge}
		if failed {
			r = v1alpha1.RepeatResult{Error: huge, ClientNode: huge}
		}
		return r
	}
	runs := map[RunKey]v1alpha1.RepeatResult{}
	for repeat := range int32(10) {
		runs[RunKey{"csv", 1, repeat + 1}] = run(repeat == 9)
	}
	spec := testSpec(v1alpha1.AggregateMedian, 1)
	spec.Destinations[0].Logging = &v1alpha1.LoggingOverride{LinePrefix: new(v1alpha1.LinePrefix("%a" + huge))}
	rows := Aggregate(spec, runs)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	bounded := func(what, value string, bound int) {
		t.Helper()
		if len(value) > bound+len("…") || !utf8.ValidString(value) || !strings.HasSuffix(value, "…") {
			t.Errorf("%s is %d bytes (valid UTF-8: %t), want it cut to %d", what, len(value), utf8.ValidString(value), bound)
		}
	}
	row := rows[0]
	for _, r := range row.Repeats {
		name := fmt.Sprintf("repeat %d's ", r.Repeat)
		bounded(name+"client node", r.ClientNode, v1alpha1.MaxNodeNameLength)
		if r.Error != "" {
			bounded(name+"error", r.Error, v1alpha1.MaxMessageLength)
			continue
		}
		bounded(name+"server node", r.ServerNode, v1alpha1.MaxNodeNameLength)
		bounded(name+"drop reason", r.Records.DropReason, v1alpha1.MaxRunReasonLength)
		bounded(name+"unverified reason", r.Records.UnverifiedReason, v1alpha1.MaxRunReasonLength)
		bounded(name+"accounting error", r.Records.AccountingError, v1alpha1.MaxRunReasonLength)
		bounded(name+"sampler message", r.Records.Sampler.Message, v1alpha1.MaxRunReasonLength)
		bounded(name+"lostAt", r.Records.Stages.LostAt, v1alpha1.MaxStageNameLength)
		bounded(name+"unverifiedAt", r.Records.Stages.UnverifiedAt, v1alpha1.MaxStageNameLength)
	}
	bounded("the row's logging settings", row.Logging, v1alpha1.MaxRowTextLength)
	bounded("the row's drop reason", row.Records.DropReason, v1alpha1.MaxRowTextLength)
	bounded("the row's unverified reason", row.Records.UnverifiedReason, v1alpha1.MaxRowTextLength)
	bounded("the row's accounting error", row.Records.AccountingError, v1alpha1.MaxRowTextLength)
	bounded("the row's sampler message", row.Records.Sampler.Message, v1alpha1.MaxRowTextLength)
	if given := runs[RunKey{"csv", 1, 1}].Records; given.Sampler.Message != huge || given.Stages.LostAt != huge {
		t.Error("aggregating changed the runs it was given")
	}
}

// TestScripts: each script's median TPS and latency over the repeats that report it, in
// the files' order, its transactions summed, beside the runs' own; failed repeats and
// repeats of one script count for none.
func TestScripts(t *testing.T) {
	repeat := func(transactions int64, read, write v1alpha1.ScriptResult) v1alpha1.RepeatResult {
		return v1alpha1.RepeatResult{TPS: 1, Transactions: transactions, Scripts: []v1alpha1.ScriptResult{read, write}}
	}
	row := v1alpha1.Result{Repeats: []v1alpha1.RepeatResult{
		repeat(100, v1alpha1.ScriptResult{Key: "read.sql", Transactions: 70, TPS: 7, LatencyAvgMs: 1},
			v1alpha1.ScriptResult{Key: "write.sql", Transactions: 30, TPS: 3, LatencyAvgMs: 4}),
		repeat(120, v1alpha1.ScriptResult{Key: "read.sql", Transactions: 80, TPS: 8, LatencyAvgMs: 2},
			v1alpha1.ScriptResult{Key: "write.sql", Transactions: 38, TPS: 4, LatencyAvgMs: 6}),
		{Error: "pgbench failed", Scripts: []v1alpha1.ScriptResult{{Key: "read.sql", Transactions: 1000}}},
		{TPS: 1, Transactions: 50},
	}}
	scripts, runTransactions := Scripts(row)
	want := []ScriptSummary{
		{Key: "read.sql", TPS: 7.5, LatencyAvgMs: 1.5, Transactions: 150},
		{Key: "write.sql", TPS: 3.5, LatencyAvgMs: 5, Transactions: 68},
	}
	if !slices.Equal(scripts, want) || runTransactions != 220 {
		t.Errorf("Scripts = %+v, %d; want %+v, 220", scripts, runTransactions, want)
	}
	if scripts, _ := Scripts(v1alpha1.Result{Repeats: []v1alpha1.RepeatResult{{TPS: 1, Transactions: 5}}}); scripts != nil {
		t.Errorf("a row of one script has scripts %+v", scripts)
	}
}
