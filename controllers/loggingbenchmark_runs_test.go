package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/schedule"
)

// TestPlannedRunsFollowTheSchedule: the operator plans schedule.Plan's order with a seed
// of the benchmark's own, the spec's when it sets one, so that every pass of every
// operator process plans the same order.
func TestPlannedRunsFollowTheSchedule(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{UID: "6f1c3e0a-1f5e-4b8e-9a57-1d2b3c4d5e6f"},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
			Baseline:     v1alpha1.BaselineSpec{Enabled: true},
			Workload:     v1alpha1.WorkloadSpec{Clients: []int32{4, 1}, Repeats: 2},
		},
	}
	seed := scheduleSeed(benchmark)
	if again := scheduleSeed(benchmark.DeepCopy()); again != seed {
		t.Fatalf("the seed of one benchmark changed from %d to %d", seed, again)
	}
	planned := plannedRuns(&benchmark.Spec, seed, nil)
	plan := schedule.Plan(&benchmark.Spec, seed, nil)
	if int32(len(planned)) != benchmark.Spec.RunsTotal() || len(planned) != len(plan) {
		t.Fatalf("%d runs planned, RunsTotal says %d", len(planned), benchmark.Spec.RunsTotal())
	}
	for i, run := range planned {
		if run.Key() != plan[i] || run.Destination.Type == "" {
			t.Errorf("run %d is %+v, the plan says %v", i, run, plan[i])
		}
	}
	benchmark.Spec.Workload.Seed = new(int64(42))
	if got := scheduleSeed(benchmark); got != 42 {
		t.Errorf("scheduleSeed = %d, want the spec's 42", got)
	}
}
