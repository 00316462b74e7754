package schedule

import (
	"slices"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestPlanInterleavesRounds: every round runs each destination once at one client
// count, rounds follow the client counts and repeats, and the seed alone decides the
// order within a round.
func TestPlanInterleavesRounds(t *testing.T) {
	spec := testSpec(4, 1)
	spec.Workload.Repeats = 3
	destinations := len(spec.EffectiveDestinations())
	plan := Plan(spec, 7, nil)
	if int32(len(plan)) != spec.RunsTotal() {
		t.Fatalf("%d runs planned, RunsTotal says %d", len(plan), spec.RunsTotal())
	}
	round := 0
	for _, clients := range spec.Workload.Clients {
		for repeat := int32(1); repeat <= spec.Workload.Repeats; repeat++ {
			runs := plan[round*destinations : (round+1)*destinations]
			seen := map[string]bool{}
			for _, run := range runs {
				if run.Clients != clients || run.Repeat != repeat || seen[run.Destination] {
					t.Errorf("round %d (clients %d, repeat %d) holds %v", round, clients, repeat, runs)
				}
				seen[run.Destination] = true
			}
			round++
		}
	}
	if !slices.Equal(plan, Plan(spec, 7, nil)) {
		t.Error("the same seed planned another order")
	}
	shuffledRounds := 0
	for seed := range int64(20) {
		if !slices.Equal(Plan(spec, seed, nil), plan) {
			shuffledRounds++
		}
	}
	if shuffledRounds == 0 {
		t.Error("no seed changes the order")
	}
	if got := Of(plan[:2], 7); got.Seed != 7 || len(got.Runs) != 2 || got.Runs[0] != plan[0].String() {
		t.Errorf("Of = %+v", got)
	}
}

// testSpec runs csv and stdout against the baseline at the given client counts.
func testSpec(clients ...int32) *v1alpha1.LoggingBenchmarkSpec {
	return &v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{
			{Name: "csv", Type: v1alpha1.DestinationCSVLog},
			{Name: "stdout", Type: v1alpha1.DestinationStdout},
		},
		Baseline: v1alpha1.BaselineSpec{Enabled: true},
		Workload: v1alpha1.WorkloadSpec{Clients: clients, Aggregate: v1alpha1.AggregateMedian},
	}
}

// succeeded is a run at tps whose records were counted exactly.
func succeeded(tps float64, expected, delivered int64) v1alpha1.RepeatResult {
	return v1alpha1.RepeatResult{
		TPS:     tps,
		Records: v1alpha1.Records{Expected: expected, Delivered: delivered, Dropped: new(expected - delivered)},
	}
}
