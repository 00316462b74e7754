package benchstatus

import (
	"cmp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// TestDegradation: an accounting error left Degraded False, as if every count were right.
func TestDegradation(t *testing.T) {
	consistent := v1alpha1.Result{Destination: "csv", Clients: 1}
	inconsistent := v1alpha1.Result{Destination: "loki", Clients: 4,
		Records: v1alpha1.Records{AccountingError: "repeat 1: 13 records arrived"}}
	boom := results.Failure{Run: results.RunKey{Destination: "csv", Clients: 1, Repeat: 1}, Error: "boom"}
	for name, tc := range map[string]struct {
		failures    []results.Failure
		rows        []v1alpha1.Result
		wantReason  string
		wantMessage []string
	}{
		"nothing wrong": {nil, []v1alpha1.Result{consistent}, "", nil},
		"a run failed": {[]results.Failure{boom}, []v1alpha1.Result{consistent}, v1alpha1.ReasonRunsFailed,
			[]string{"1 of 4 runs failed", "csv/1/1: boom"}},
		"an accounting error": {nil, []v1alpha1.Result{consistent, inconsistent}, v1alpha1.ReasonAccountingError,
			[]string{"accounting errors in loki/4"}},
		"both": {[]results.Failure{boom, boom}, []v1alpha1.Result{inconsistent}, v1alpha1.ReasonRunsFailed,
			[]string{"2 of 4 runs failed", "accounting errors in loki/4", "csv/1/1: boom"}},
	} {
		t.Run(name, func(t *testing.T) {
			reason, message := degradation(tc.failures, 4, tc.rows)
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

func csvBenchmark(clients ...int32) *v1alpha1.LoggingBenchmark {
	return &v1alpha1.LoggingBenchmark{Spec: v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
		Workload:     v1alpha1.WorkloadSpec{Clients: clients, Repeats: 1},
	}}
}

func csvRun(clients int32) results.RunKey {
	return results.RunKey{Destination: "csv", Clients: clients, Repeat: 1}
}

// TestSetReportsAccountingErrors: a local run saved an accounting error without any
// condition.
func TestSetReportsAccountingErrors(t *testing.T) {
	benchmark := csvBenchmark(1)
	run := csvRun(1)
	Set(benchmark, Observation{
		Planned: []results.RunKey{run},
		Finished: map[results.RunKey]v1alpha1.RepeatResult{run: {Repeat: 1, Records: v1alpha1.Records{
			Expected: 10, Delivered: 12, AccountingError: "12 records arrived"}}},
		Done: true,
	})
	degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != v1alpha1.ReasonAccountingError ||
		!strings.Contains(degraded.Message, "csv/1") {
		t.Errorf("Degraded = %+v, want True for the accounting error of csv/1", degraded)
	}
	if benchmark.Status.Phase != v1alpha1.PhaseSucceeded ||
		!meta.IsStatusConditionTrue(benchmark.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("phase %s, conditions %+v: want Succeeded and Ready, the runs did run",
			benchmark.Status.Phase, benchmark.Status.Conditions)
	}
	if benchmark.Status.CompletionTime == nil {
		t.Error("no completion time on a finished benchmark")
	}
	if schedule := benchmark.Status.Schedule; schedule == nil || len(schedule.Runs) != 1 || schedule.Runs[0] != "csv/1/1" {
		t.Errorf("schedule %+v, want the one planned run", schedule)
	}
}

// TestSetPhase: the phase follows the runs, and a run that never ran fails a finished
// benchmark, as an interrupted local run or a skipped destination leaves it.
func TestSetPhase(t *testing.T) {
	succeeded := v1alpha1.RepeatResult{Repeat: 1, TPS: 100}
	failed := v1alpha1.RepeatResult{Repeat: 1, Error: "boom"}
	planned := []results.RunKey{csvRun(1), csvRun(2)}
	for name, tc := range map[string]struct {
		finished     map[results.RunKey]v1alpha1.RepeatResult
		observed     Observation
		wantPhase    v1alpha1.Phase
		wantDegraded string
	}{
		"running": {map[results.RunKey]v1alpha1.RepeatResult{csvRun(1): succeeded},
			Observation{Phase: v1alpha1.PhaseRunning, Current: &planned[1]}, v1alpha1.PhaseRunning, v1alpha1.ReasonNoFailures},
		"every run succeeded": {map[results.RunKey]v1alpha1.RepeatResult{csvRun(1): succeeded, csvRun(2): succeeded},
			Observation{Done: true}, v1alpha1.PhaseSucceeded, v1alpha1.ReasonNoFailures},
		"a run failed": {map[results.RunKey]v1alpha1.RepeatResult{csvRun(1): succeeded, csvRun(2): failed},
			Observation{Done: true}, v1alpha1.PhaseFailed, v1alpha1.ReasonRunsFailed},
		"a run never ran": {map[results.RunKey]v1alpha1.RepeatResult{csvRun(1): succeeded},
			Observation{Done: true}, v1alpha1.PhaseFailed, v1alpha1.ReasonNoFailures},
	} {
		t.Run(name, func(t *testing.T) {
			benchmark := csvBenchmark(1, 2)
			tc.observed.Planned, tc.observed.Finished = planned, tc.finished
			Set(benchmark, tc.observed)
			got := benchmark.Status
			if got.Phase != tc.wantPhase || got.Progress.RunsTotal != 2 || got.Progress.RunsDone != int32(len(tc.finished)) {
				t.Errorf("phase %s, progress %+v; want %s with %d of 2 runs done", got.Phase, got.Progress, tc.wantPhase,
					len(tc.finished))
			}
			degraded := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionDegraded)
			if degraded.Reason != tc.wantDegraded {
				t.Errorf("Degraded reason %s, want %s", degraded.Reason, tc.wantDegraded)
			}
			if (got.CompletionTime != nil) != got.Phase.IsFinished() {
				t.Errorf("completion time %v in phase %s", got.CompletionTime, got.Phase)
			}
			for conditionType, want := range map[string]bool{
				v1alpha1.ConditionComplete: got.Phase == v1alpha1.PhaseSucceeded,
				v1alpha1.ConditionFailed:   got.Phase == v1alpha1.PhaseFailed,
			} {
				if meta.IsStatusConditionTrue(got.Conditions, conditionType) != want {
					t.Errorf("%s = %+v in phase %s, want True: %v", conditionType,
						meta.FindStatusCondition(got.Conditions, conditionType), got.Phase, want)
				}
			}
		})
	}
}

// TestSetBlocked: a benchmark no operator can run looked Progressing, or lost its phase.
func TestSetBlocked(t *testing.T) {
	for _, phase := range []v1alpha1.Phase{"", v1alpha1.PhaseRunning} {
		benchmark := csvBenchmark(1)
		benchmark.Status.Phase = phase
		SetBlocked(benchmark, v1alpha1.ReasonCloudNativePGUnavailable, "no CloudNativePG")
		if want := cmp.Or(phase, v1alpha1.PhasePending); benchmark.Status.Phase != want {
			t.Errorf("phase %q became %s, want %s", phase, benchmark.Status.Phase, want)
		}
		for _, condition := range benchmark.Status.Conditions {
			wantStatus := metav1.ConditionFalse
			if condition.Type == v1alpha1.ConditionDegraded {
				wantStatus = metav1.ConditionTrue
			}
			if condition.Status != wantStatus || condition.Reason != v1alpha1.ReasonCloudNativePGUnavailable ||
				condition.Message != "no CloudNativePG" {
				t.Errorf("%s = %+v, want %s for the missing CloudNativePG", condition.Type, condition, wantStatus)
			}
		}
		if len(benchmark.Status.Conditions) != 5 {
			t.Errorf("conditions %+v, want all five", benchmark.Status.Conditions)
		}
	}
}

// TestReadySaysWhy: the Ready condition, which kubectl get shows, said only the phase
// while a destination waited for a reason its status held.
func TestReadySaysWhy(t *testing.T) {
	waiting := v1alpha1.DestinationStatus{Name: "csv", State: v1alpha1.DestinationProvisioning,
		Message: "cluster b-csv: pod b-csv-1: not scheduled: 0/1 nodes are available"}
	failed := v1alpha1.DestinationStatus{Name: "typo", State: v1alpha1.DestinationFailed,
		Message: "cluster b-typo: pod b-typo-1: container fluent-bit: ErrImagePull: not found"}
	ready := v1alpha1.DestinationStatus{Name: "json", State: v1alpha1.DestinationReady, Message: "ignored"}
	for name, tc := range map[string]struct {
		observed Observation
		want     string
	}{
		"provisioning": {
			Observation{Planned: []results.RunKey{csvRun(1)}, Phase: v1alpha1.PhaseProvisioning,
				Destinations: []v1alpha1.DestinationStatus{waiting, failed, ready}},
			"Provisioning: 0/1 runs done; destination csv: " + waiting.Message + "; destination typo failed: " +
				failed.Message,
		},
		"failed": {
			Observation{Planned: []results.RunKey{csvRun(1)}, Done: true,
				Finished:     map[results.RunKey]v1alpha1.RepeatResult{csvRun(1): {Repeat: 1, Error: failed.Message}},
				Destinations: []v1alpha1.DestinationStatus{failed}},
			"Failed: 1/1 runs done; 1 of 1 runs failed; first csv/1/1: " + failed.Message,
		},
		"nothing to say": {
			Observation{Planned: []results.RunKey{csvRun(1)}, Phase: v1alpha1.PhaseRunning,
				Destinations: []v1alpha1.DestinationStatus{ready}},
			"Running: 0/1 runs done",
		},
	} {
		t.Run(name, func(t *testing.T) {
			benchmark := csvBenchmark(1)
			Set(benchmark, tc.observed)
			if got := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionReady); got == nil ||
				got.Message != tc.want {
				t.Errorf("Ready = %+v, want the message %q", got, tc.want)
			}
		})
	}
}
