package results

import (
	"slices"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestPlanInterleavesRounds: every round runs each destination once at one client
// count, rounds follow the client counts and repeats, and the seed alone decides the
// order within a round.
func TestPlanInterleavesRounds(t *testing.T) {
	spec := testSpec(v1alpha1.AggregateMedian, 4, 1)
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
	if got := ScheduleOf(plan[:2], 7); got.Seed != 7 || len(got.Runs) != 2 || got.Runs[0] != plan[0].String() {
		t.Errorf("ScheduleOf = %+v", got)
	}
}
