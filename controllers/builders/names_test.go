package builders

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

func TestRunRecordName(t *testing.T) {
	long := strings.Repeat("b", 240)
	tests := []struct {
		name      string
		benchmark string
		run       results.RunKey
		want      string
	}{
		{"readable", "bench", results.RunKey{Destination: "csv", Clients: 4, Repeat: 2}, "bench-csv-c4-r2"},
		{"longer than a Job's", strings.Repeat("b", 60), results.RunKey{Destination: "csv", Clients: 4, Repeat: 2},
			strings.Repeat("b", 60) + "-csv-c4-r2"},
		{"hashed", long, results.RunKey{Destination: "destination", Clients: 1000, Repeat: 100},
			(long + "-destination-c1000-r100")[:244] + "-554bb495"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RunRecordName(tt.benchmark, tt.run)
			if got != tt.want || len(got) > maxObjectNameLength {
				t.Errorf("RunRecordName = %q (%d characters), want %q", got, len(got), tt.want)
			}
		})
	}
}

func TestRunKeyFromLabelsRoundTrip(t *testing.T) {
	run := Run{Destination: v1alpha1.Destination{Name: "csv"}, Clients: 8, Repeat: 3}
	if got, err := RunKeyFromLabels(RunKeyLabels("bench", run.Key())); err != nil || got != run.Key() {
		t.Fatalf("runKeyFromLabels = %+v, %v; want %+v", got, err, run.Key())
	}
	if _, err := RunKeyFromLabels(map[string]string{LabelDestination: "csv", LabelClients: "x"}); err == nil {
		t.Fatal("labels without a valid run were accepted")
	}
}
