package controllers

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

func TestPlannedRunsOrder(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
		Baseline:     v1alpha1.BaselineSpec{Enabled: true},
		Workload:     v1alpha1.WorkloadSpec{Clients: []int32{4, 1}, Repeats: 2},
	}
	planned := plannedRuns(spec)
	got := make([]string, 0, len(planned))
	for _, run := range planned {
		got = append(got, jobName("b", run))
	}
	want := []string{
		"b-baseline-c4-r1", "b-baseline-c4-r2", "b-baseline-c1-r1", "b-baseline-c1-r2",
		"b-csv-c4-r1", "b-csv-c4-r2", "b-csv-c1-r1", "b-csv-c1-r2",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("plannedRuns order = %v, want %v", got, want)
	}
	if int32(len(got)) != spec.RunsTotal() {
		t.Errorf("%d runs planned, RunsTotal says %d", len(got), spec.RunsTotal())
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
