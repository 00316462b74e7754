package controllers

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestNotReadyReasonPointsAtPgaudit: an audited destination's cluster that never starts
// may lack the extension in its image; the baseline's never loads it.
func TestNotReadyReasonPointsAtPgaudit(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{Logging: v1alpha1.LoggingSpec{
		Pgaudit: &v1alpha1.PgauditSpec{Log: []v1alpha1.PgauditClass{v1alpha1.PgauditAll}},
	}}
	const (
		why  = `cluster bench-csv not ready within 1m0s: CloudNativePG phase "Setting up primary"`
		hint = "needs an image with the pgaudit extension"
	)
	audited := notReadyReason(spec, v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}, why)
	if !strings.HasPrefix(audited, why) || !strings.Contains(audited, hint) {
		t.Errorf("audited destination: %q, want the reason and the pgaudit hint", audited)
	}
	if !strings.Contains(audited, "spec.logging.pgaudit needs") {
		t.Errorf("audited destination: %q, want the field that set pgaudit named", audited)
	}
	if baseline := notReadyReason(spec, v1alpha1.Destination{Name: "baseline", Type: v1alpha1.DestinationNone},
		why); baseline != why {
		t.Errorf("baseline: %q, which loads no pgaudit", baseline)
	}
	// pgaudit set by the destination's own logging is named there.
	own := v1alpha1.Destination{Name: "audit", Type: v1alpha1.DestinationCSVLog, Logging: &v1alpha1.LoggingOverride{
		Pgaudit: &v1alpha1.PgauditSpec{Log: []v1alpha1.PgauditClass{v1alpha1.PgauditAll}},
	}}
	if reason := notReadyReason(&v1alpha1.LoggingBenchmarkSpec{}, own, why); !strings.Contains(reason,
		"destination audit's logging.pgaudit needs") {
		t.Errorf("destination's own pgaudit: %q, want it named", reason)
	}
}

// TestNotReadyReasonPointsAtTheCounter: every cluster of a benchmark with a counter
// preloads it, and one whose image lacks it never starts.
func TestNotReadyReasonPointsAtTheCounter(t *testing.T) {
	const why = `cluster bench-baseline not ready within 1m0s: CloudNativePG phase "Setting up primary"`
	baseline := v1alpha1.Destination{Name: "baseline", Type: v1alpha1.DestinationNone}
	for _, tc := range []struct {
		counter *v1alpha1.CounterSpec
		hint    string
	}{
		{counter: nil},
		{counter: &v1alpha1.CounterSpec{Source: v1alpha1.CounterInOperandImage},
			hint: "spec.postgres.counter needs an operand image with the logbench_counter extension"},
		{counter: &v1alpha1.CounterSpec{Source: v1alpha1.CounterInExtensionImage, ExtensionImage: "counter:18"},
			hint: "spec.postgres.counter needs PostgreSQL 18"},
	} {
		spec := &v1alpha1.LoggingBenchmarkSpec{Postgres: v1alpha1.PostgresSpec{Counter: tc.counter}}
		reason := notReadyReason(spec, baseline, why)
		if tc.hint == "" && reason != why || !strings.HasPrefix(reason, why) || !strings.Contains(reason, tc.hint) {
			t.Errorf("counter %+v: %q, want the reason and %q", tc.counter, reason, tc.hint)
		}
	}
}
