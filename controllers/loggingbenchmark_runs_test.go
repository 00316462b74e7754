package controllers

import (
	"strings"
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
		if run.key() != plan[i] || run.Destination.Type == "" {
			t.Errorf("run %d is %+v, the plan says %v", i, run, plan[i])
		}
	}
	benchmark.Spec.Workload.Seed = new(int64(42))
	if got := scheduleSeed(benchmark); got != 42 {
		t.Errorf("scheduleSeed = %d, want the spec's 42", got)
	}
}

func TestJobName(t *testing.T) {
	run := func(destination string, clients, repeat int32) plannedRun {
		return plannedRun{Destination: v1alpha1.Destination{Name: destination}, Clients: clients, Repeat: repeat}
	}
	long := strings.Repeat("b", 29)
	tests := []struct {
		name      string
		benchmark string
		run       plannedRun
		want      string
	}{
		{"short", "bench", run("csv", 4, 2), "bench-csv-c4-r2"},
		{"at the limit", long, run("destination-of-20-ch", 1, 1), long + "-destination-of-20-ch-c1-r1"},
		{"hashed", long + "-tail", run("destination-of-20-ch", 1000, 100), long + "-tail-destination-of-20-c-308c9195"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jobName(tt.benchmark, tt.run)
			if got != tt.want || len(got) > maxJobNameLength {
				t.Errorf("jobName = %q (%d characters), want %q", got, len(got), tt.want)
			}
		})
	}
}

func TestRunKeyFromLabelsRoundTrip(t *testing.T) {
	run := plannedRun{Destination: v1alpha1.Destination{Name: "csv"}, Clients: 8, Repeat: 3}
	got, err := runKeyFromLabels(runLabels("bench", run))
	if err != nil || got != run.key() {
		t.Fatalf("runKeyFromLabels = %+v, %v; want %+v", got, err, run.key())
	}
	if _, err := runKeyFromLabels(map[string]string{LabelDestination: "csv", LabelClients: "x"}); err == nil {
		t.Fatal("labels without a valid run were accepted")
	}
}
