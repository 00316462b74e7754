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

func TestExpectedSourceNote(t *testing.T) {
	row := func(destination string, source v1alpha1.ExpectedSource, ok bool) v1alpha1.Result {
		repeat := v1alpha1.RepeatResult{Repeat: 1}
		if !ok {
			repeat.Error = "failed"
		}
		return v1alpha1.Result{Destination: destination, Clients: 2, Repeats: []v1alpha1.RepeatResult{repeat},
			Records: v1alpha1.Records{ExpectedSource: source}}
	}
	tests := []struct {
		name string
		rows []v1alpha1.Result
		want string
	}{
		{"no measurement", []v1alpha1.Result{row("a", v1alpha1.ExpectedCounted, false)}, ""},
		{"every row counted", []v1alpha1.Result{row("a", v1alpha1.ExpectedCounted, true), row("b", v1alpha1.ExpectedPredicted, false)},
			"expected: " + countedAtTheSource + " in every row"},
		{"every row predicted, one written before the source was recorded",
			[]v1alpha1.Result{row("a", v1alpha1.ExpectedPredicted, true), row("b", "", true)},
			"expected: " + predictedFromTheRuns + " in every row"},
		{"both", []v1alpha1.Result{row("a", v1alpha1.ExpectedCounted, true), row("b", v1alpha1.ExpectedPredicted, true)},
			"expected: " + countedAtTheSource + " in a/2; " + predictedFromTheRuns + " in b/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpectedSourceNote(tt.rows); got != tt.want {
				t.Errorf("ExpectedSourceNote = %q, want %q", got, tt.want)
			}
		})
	}
}
