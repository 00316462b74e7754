package controllers

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestDegradation: an accounting error left Degraded False, as if every count were right.
func TestDegradation(t *testing.T) {
	consistent := v1alpha1.Result{Destination: "csv", Clients: 1}
	inconsistent := v1alpha1.Result{Destination: "loki", Clients: 4, Records: v1alpha1.Records{AccountingError: "repeat 1: 13 records arrived"}}
	for name, tc := range map[string]struct {
		failed      int
		rows        []v1alpha1.Result
		wantReason  string
		wantMessage []string
	}{
		"nothing wrong":       {0, []v1alpha1.Result{consistent}, "", nil},
		"a run failed":        {1, []v1alpha1.Result{consistent}, ReasonRunsFailed, []string{"1 of 4 runs failed", "csv/1/1: boom"}},
		"an accounting error": {0, []v1alpha1.Result{consistent, inconsistent}, ReasonAccountingError, []string{"accounting errors in loki/4"}},
		"both": {2, []v1alpha1.Result{inconsistent}, ReasonRunsFailed,
			[]string{"2 of 4 runs failed", "accounting errors in loki/4", "csv/1/1: boom"}},
	} {
		t.Run(name, func(t *testing.T) {
			reason, message := Degradation(tc.failed, 4, "csv/1/1: boom", tc.rows)
			if reason != tc.wantReason {
				t.Errorf("reason %q, want %q", reason, tc.wantReason)
			}
			for _, want := range tc.wantMessage {
				if !strings.Contains(message, want) {
					t.Errorf("message %q, want it to contain %q", message, want)
				}
			}
		})
	}
}
