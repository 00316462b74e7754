package results

import (
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestRowExpectedSource: a row's expected records are counted at the source only when
// every successful repeat's were; a repeat written before the source was recorded was
// predicted.
func TestRowExpectedSource(t *testing.T) {
	counted, predicted, unrecorded := exact(100, 10, 10), exact(100, 10, 10), exact(100, 10, 10)
	counted.Records.ExpectedSource = v1alpha1.ExpectedCounted
	predicted.Records.ExpectedSource = v1alpha1.ExpectedPredicted
	failed := v1alpha1.RepeatResult{Error: "pgbench: exit status 1"}
	tests := []struct {
		name    string
		repeats []v1alpha1.RepeatResult
		want    v1alpha1.ExpectedSource
	}{
		{"every repeat counted", []v1alpha1.RepeatResult{counted, counted}, v1alpha1.ExpectedCounted},
		{"a failed repeat leaves the others counted", []v1alpha1.RepeatResult{counted, failed}, v1alpha1.ExpectedCounted},
		{"one repeat predicted", []v1alpha1.RepeatResult{counted, predicted}, v1alpha1.ExpectedPredicted},
		{"the first repeat predicted", []v1alpha1.RepeatResult{predicted, counted}, v1alpha1.ExpectedPredicted},
		{"written before the source was recorded", []v1alpha1.RepeatResult{unrecorded, counted}, v1alpha1.ExpectedPredicted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sumRecords(Successful(tt.repeats)).ExpectedSource; got != tt.want {
				t.Errorf("expected source %q, want %q", got, tt.want)
			}
		})
	}
}
