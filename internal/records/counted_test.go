package records

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

func TestSettingsForNamesWhatNoModelPredicts(t *testing.T) {
	zero, off, tenth, none := int32(0), int32(-1), 0.1, 0.0
	tests := []struct {
		name    string
		logging v1alpha1.LoggingSpec
		want    []string
	}{
		{"nothing unpredicted", v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll}, nil},
		{"a sample of the statements", v1alpha1.LoggingSpec{MinDurationSample: &zero, StatementSampleRate: &tenth},
			[]string{"minDurationSample=0", "statementSampleRate=0.1"}},
		{"a rate without a sample threshold samples nothing", v1alpha1.LoggingSpec{StatementSampleRate: &tenth}, nil},
		{"a sample threshold at rate 0 logs nothing", v1alpha1.LoggingSpec{MinDurationSample: &zero, StatementSampleRate: &none}, nil},
		{"a threshold turned off", v1alpha1.LoggingSpec{MinDurationSample: &off}, nil},
		{"transactions sampled", v1alpha1.LoggingSpec{TransactionSampleRate: &tenth}, []string{"transactionSampleRate=0.1"}},
		{"plans, lock waits and temporary files",
			v1alpha1.LoggingSpec{AutoExplain: &v1alpha1.AutoExplainSpec{MinDuration: 5, Analyze: true}, LockWaits: true, TempFiles: &zero},
			[]string{"autoExplain=5/analyze", "lockWaits=on", "tempFiles=0"}},
		{"temporary files not logged", v1alpha1.LoggingSpec{TempFiles: &off}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SettingsFor(v1alpha1.Destination{Name: "d", Type: v1alpha1.DestinationCSVLog}, tt.logging).Unpredicted
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Unpredicted = %q, want %q", got, tt.want)
			}
			baseline := SettingsFor(v1alpha1.Destination{Name: "b", Type: v1alpha1.DestinationNone}, tt.logging)
			if len(baseline.Unpredicted) > 0 {
				t.Errorf("the baseline runs with %q, want no logging", baseline.Unpredicted)
			}
		})
	}
}

// TestExpectedOfUnpredictedSettingsIsALowerBound: sampling, plans and the like add to
// what log_statement and the durations log and remove nothing, so the prediction is
// the least the server can log, with nothing above it.
func TestExpectedOfUnpredictedSettingsIsALowerBound(t *testing.T) {
	tpcb := builtinScript(t, v1alpha1.WorkloadTPCBLike)
	exec := Execution{Script: tpcb, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 100}
	got := Expected(exec, Settings{Statement: v1alpha1.StatementAll, MinDurationStatementMs: -1, Connections: true,
		Unpredicted: []string{"minDurationSample=0", "statementSampleRate=0.1"}})
	if !got.Estimate || !got.Unpredictable || got.Records != 703 || got.Upper() != math.MaxInt64 {
		t.Errorf("Expected = %+v, want an unbounded estimate of at least 700 statements and 3 connections", got)
	}
	if !strings.Contains(got.Reason, "minDurationSample=0, statementSampleRate=0.1 log records no model predicts") ||
		!strings.Contains(got.Reason, "at least 703 records") {
		t.Errorf("reason %q, want the settings named and the lower bound", got.Reason)
	}
}

func TestCountedAgreesWithThePrediction(t *testing.T) {
	exact := Expectation{Records: 700}
	estimate := Expectation{Records: 100, Max: 200, Estimate: true, Reason: "log_min_duration_statement=100 ms"}
	unbounded := Expectation{Records: 100, Max: math.MaxInt64, Estimate: true, Unpredictable: true,
		Reason: "minDurationSample=0 log records no model predicts: at least 100 records"}
	tests := []struct {
		name         string
		counted      int64
		predicted    Expectation
		disagreement string
	}{
		{"equal to an exact prediction", 700, exact, ""},
		{"above an exact prediction", 701, exact, "the server counted 701 records of the run at the source and the model predicts 700"},
		{"below an exact prediction", 699, exact, "the model predicts 700"},
		{"within an estimate's bounds", 150, estimate, ""},
		{"at an estimate's upper bound", 200, estimate, ""},
		{"above an estimate's bounds", 201, estimate, "outside the model's bounds (log_min_duration_statement=100 ms)"},
		{"below an estimate's bounds", 99, estimate, "outside the model's bounds"},
		{"far above an unbounded estimate", 1_000_000, unbounded, ""},
		{"below an unbounded estimate", 99, unbounded, "the server counted 99 records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Counted(tt.counted, tt.predicted)
			if got.Records != tt.counted || got.Estimate || !got.Counted || got.Source() != v1alpha1.ExpectedCounted {
				t.Errorf("Counted = %+v, want exactly %d counted at the source", got, tt.counted)
			}
			if (tt.disagreement == "") != (got.Disagreement == "") || !strings.Contains(got.Disagreement, tt.disagreement) {
				t.Errorf("disagreement %q, want %q", got.Disagreement, tt.disagreement)
			}
		})
	}
}

// TestReconcileCounted: a counted expectation is exact whatever the settings, a drop
// against it is exact, and a disagreement with the model is an accounting error of the
// run, not a drop.
func TestReconcileCounted(t *testing.T) {
	agreed := Counted(1000, Expectation{Records: 1000})
	r := Reconcile(agreed, Count{Delivered: 990})
	if r.ExpectedSource != v1alpha1.ExpectedCounted || r.ExpectedIsEstimate || r.Dropped == nil || *r.Dropped != 10 ||
		r.AccountingError != "" {
		t.Errorf("Reconcile = %+v, want 10 dropped of 1000 counted at the source", r)
	}
	disagreed := Counted(1002, Expectation{Records: 1000})
	r = Reconcile(disagreed, Count{Delivered: 1002})
	if r.Dropped == nil || *r.Dropped != 0 || !strings.Contains(r.AccountingError, "the model predicts 1000") {
		t.Errorf("Reconcile = %+v, want none dropped and the disagreement as an accounting error", r)
	}
	r = Reconcile(disagreed, Count{Delivered: 1003})
	if parts := strings.Split(r.AccountingError, "; "); len(parts) != 2 || !strings.Contains(parts[1], "1003 records arrived") {
		t.Errorf("accounting error %q, want the disagreement and the excess, both", r.AccountingError)
	}
	if predicted := Reconcile(Expectation{Records: 5}, Count{Delivered: 5}); predicted.ExpectedSource != v1alpha1.ExpectedPredicted {
		t.Errorf("a predicted expectation reconciles as %q", predicted.ExpectedSource)
	}
	recounted := Recount(Reconcile(agreed, Count{Delivered: 990}), agreed, 1000)
	if recounted.ExpectedSource != v1alpha1.ExpectedCounted || recounted.ArrivedLate != 10 {
		t.Errorf("Recount = %+v, want counted at the source with 10 late", recounted)
	}
}
