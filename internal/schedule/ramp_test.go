package schedule

import (
	"fmt"
	"slices"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

func TestClientCounts(t *testing.T) {
	tests := []struct {
		ramp v1alpha1.RampSpec
		want []int32
	}{
		{v1alpha1.RampSpec{Start: 1, Factor: 2, Max: 10}, []int32{1, 2, 4, 8, 10}},
		{v1alpha1.RampSpec{Start: 4, Factor: 2, Max: 16}, []int32{4, 8, 16}},
		{v1alpha1.RampSpec{Start: 2, Step: 3, Max: 8}, []int32{2, 5, 8}},
		{v1alpha1.RampSpec{Start: 5, Step: 1, Max: 5}, []int32{5}},
	}
	for _, test := range tests {
		workload := v1alpha1.WorkloadSpec{Clients: []int32{1, 4}, Ramp: &test.ramp}
		if got := workload.ClientCounts(); !slices.Equal(got, test.want) {
			t.Errorf("%+v: counts %v, want %v", test.ramp, got, test.want)
		}
	}
}

// rampSpec ramps csv and stdout against the baseline from 1 to 8 clients, doubling.
func rampSpec(stop v1alpha1.RampStopConditions) *v1alpha1.LoggingBenchmarkSpec {
	spec := testSpec()
	spec.Workload.Repeats = 2
	spec.Workload.Ramp = &v1alpha1.RampSpec{Start: 1, Factor: 2, Max: 8, StopWhen: stop}
	return spec
}

// TestRampPlanGrowsRoundByRound runs a ramp as the operator and local mode do, planning
// again after every run: stdout's overhead passes the bound at 4 clients, so its ramp
// stops there with its knee at 2, while csv's reaches the maximum and the baseline runs
// as long as it does.
func TestRampPlanGrowsRoundByRound(t *testing.T) {
	spec := rampSpec(v1alpha1.RampStopConditions{OverheadAbovePercent: new(int32(50))})
	overhead := map[string]map[int32]float64{
		"csv":    {1: 0.1, 2: 0.1, 4: 0.2, 8: 0.3},
		"stdout": {1: 0.1, 2: 0.4, 4: 0.6, 8: 0.7},
	}
	finished := map[results.RunKey]v1alpha1.RepeatResult{}
	var executed []string
	for {
		plan := Plan(spec, 3, finished)
		next := slices.IndexFunc(plan, func(run results.RunKey) bool { _, done := finished[run]; return !done })
		if next < 0 {
			break
		}
		run := plan[next]
		tps := 1000 * float64(run.Clients) * (1 - overhead[run.Destination][run.Clients])
		finished[run] = succeeded(tps, 100, 100)
		if run.Repeat == 1 {
			executed = append(executed, fmt.Sprintf("%s/%d", run.Destination, run.Clients))
		}
	}
	slices.Sort(executed)
	want := []string{"baseline/1", "baseline/2", "baseline/4", "baseline/8", "csv/1", "csv/2", "csv/4", "csv/8",
		"stdout/1", "stdout/2", "stdout/4"}
	if !slices.Equal(executed, want) {
		t.Errorf("ran %v, want %v", executed, want)
	}

	rows := results.Aggregate(spec, finished)
	knees := Knees(spec, rows)
	wantKnees := []v1alpha1.Knee{
		{Destination: "csv", Clients: 8, Reason: ReachedMax},
		{Destination: "stdout", Clients: 2, StoppedAt: 4, Reason: "overhead 60.0% above 50% at 4 clients"},
	}
	if !slices.Equal(knees, wantKnees) {
		t.Errorf("knees %+v, want %+v", knees, wantKnees)
	}
	MarkKnees(rows, knees)
	for _, row := range rows {
		wantKnee := (row.Destination == "csv" && row.Clients == 8) || (row.Destination == "stdout" && row.Clients == 2)
		if row.Knee != wantKnee || (row.RampStop != "") != (row.Destination == "stdout" && row.Clients == 4) {
			t.Errorf("%s: knee %v, ramp stop %q", results.RowName(row), row.Knee, row.RampStop)
		}
	}
}

// TestRampPlanWaitsForItsRound: the next client count is planned only once every run of
// the current one finished, and nothing is planned for a destination without a ramp
// beyond its list.
func TestRampPlanWaitsForItsRound(t *testing.T) {
	spec := rampSpec(v1alpha1.RampStopConditions{DroppedRecords: true})
	first := Plan(spec, 1, nil)
	if len(first) != 3*2 {
		t.Fatalf("planned %v before any run, want the 6 runs at 1 client", first)
	}
	finished := map[results.RunKey]v1alpha1.RepeatResult{}
	for _, run := range first[:len(first)-1] {
		finished[run] = succeeded(1000, 100, 100)
	}
	if got := Plan(spec, 1, finished); !slices.Equal(got, first) {
		t.Errorf("with a run of the round left, planned %v", got)
	}
	finished[first[len(first)-1]] = succeeded(1000, 100, 100)
	if got := Plan(spec, 1, finished); len(got) != 2*len(first) {
		t.Errorf("with the round done, planned %d runs, want %d", len(got), 2*len(first))
	}
}

func TestRampStopConditions(t *testing.T) {
	tests := []struct {
		name     string
		stop     v1alpha1.RampStopConditions
		at2      v1alpha1.RepeatResult
		baseline v1alpha1.RepeatResult
		want     string
	}{
		{name: "nothing met", stop: v1alpha1.RampStopConditions{DroppedRecords: true,
			OverheadAbovePercent: new(int32(20)), TPSGainBelowPercent: new(int32(10))},
			at2: succeeded(1800, 100, 100), baseline: succeeded(2000, 0, 0)},
		{name: "dropped", stop: v1alpha1.RampStopConditions{DroppedRecords: true},
			at2: succeeded(1800, 100, 90), baseline: succeeded(2000, 0, 0), want: "dropped 10 records at 2 clients"},
		{name: "dropped at least", stop: v1alpha1.RampStopConditions{DroppedRecords: true},
			at2: v1alpha1.RepeatResult{TPS: 1800, Records: v1alpha1.Records{Expected: 100, Delivered: 80,
				ExpectedIsEstimate: true, DroppedAtLeast: new(int64(20))}},
			baseline: succeeded(2000, 0, 0), want: "dropped at least 20 records at 2 clients"},
		{name: "unverified records are not drops", stop: v1alpha1.RampStopConditions{DroppedRecords: true},
			at2: v1alpha1.RepeatResult{TPS: 1800, Records: v1alpha1.Records{Expected: 100, Delivered: 60,
				Dropped: new(int64(0)), Unverified: 40}},
			baseline: succeeded(2000, 0, 0)},
		{name: "drops ignored without the condition", stop: v1alpha1.RampStopConditions{},
			at2: succeeded(1800, 100, 90), baseline: succeeded(2000, 0, 0)},
		{name: "overhead above", stop: v1alpha1.RampStopConditions{OverheadAbovePercent: new(int32(5))},
			at2: succeeded(1800, 100, 100), baseline: succeeded(2000, 0, 0), want: "overhead 10.0% above 5% at 2 clients"},
		{name: "baseline failed", stop: v1alpha1.RampStopConditions{OverheadAbovePercent: new(int32(5))},
			at2: succeeded(1800, 100, 100), baseline: v1alpha1.RepeatResult{Error: "no cluster"},
			want: "no overhead at 2 clients: the baseline's runs failed"},
		{name: "TPS gain below", stop: v1alpha1.RampStopConditions{TPSGainBelowPercent: new(int32(10))},
			at2: succeeded(1050, 100, 100), baseline: succeeded(2000, 0, 0),
			want: "TPS went from 1000 at 1 clients to 1050 at 2 (+5.0%), a gain below 10%"},
		{name: "TPS still rising", stop: v1alpha1.RampStopConditions{TPSGainBelowPercent: new(int32(0))},
			at2: succeeded(1001, 100, 100), baseline: succeeded(2000, 0, 0)},
		{name: "TPS fell", stop: v1alpha1.RampStopConditions{TPSGainBelowPercent: new(int32(0))},
			at2: succeeded(900, 100, 100), baseline: succeeded(2000, 0, 0),
			want: "TPS went from 1000 at 1 clients to 900 at 2 (-10.0%), a gain below 0%"},
		{name: "every run failed", stop: v1alpha1.RampStopConditions{},
			at2: v1alpha1.RepeatResult{Error: "pgbench exited 1"}, baseline: succeeded(2000, 0, 0),
			want: "every run at 2 clients failed"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			spec := rampSpec(test.stop)
			spec.Workload.Repeats = 1
			spec.Workload.Ramp.Max = 2
			spec.Destinations = spec.Destinations[:1]
			finished := map[results.RunKey]v1alpha1.RepeatResult{
				{Destination: "baseline", Clients: 1, Repeat: 1}: succeeded(1000, 0, 0),
				{Destination: "csv", Clients: 1, Repeat: 1}:      succeeded(1000, 100, 100),
				{Destination: "baseline", Clients: 2, Repeat: 1}: test.baseline,
				{Destination: "csv", Clients: 2, Repeat: 1}:      test.at2,
			}
			knees := Knees(spec, results.Aggregate(spec, finished))
			want := v1alpha1.Knee{Destination: "csv", Clients: 1, StoppedAt: 2, Reason: test.want}
			if test.want == "" {
				want = v1alpha1.Knee{Destination: "csv", Clients: 2, Reason: ReachedMax}
			}
			if !slices.Equal(knees, []v1alpha1.Knee{want}) {
				t.Errorf("knees %+v, want %+v", knees, want)
			}
		})
	}
}
