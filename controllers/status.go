package controllers

import (
	"context"
	"fmt"

	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// Condition types of a LoggingBenchmark.
const (
	// ConditionReady is True once every run succeeded.
	ConditionReady = "Ready"
	// ConditionProgressing is True while clusters are provisioned or runs execute.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a run or a destination failed or the spec is unusable.
	ConditionDegraded = "Degraded"
)

// Condition reasons.
const (
	ReasonPending             = "Pending"
	ReasonProvisioningCluster = "ProvisioningCluster"
	ReasonRunningBenchmark    = "RunningBenchmark"
	ReasonBenchmarkSucceeded  = "BenchmarkSucceeded"
	ReasonBenchmarkFailed     = "BenchmarkFailed"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonRunsFailed          = "RunsFailed"
	ReasonAccountingError     = "AccountingError"
	ReasonNoFailures          = "NoFailures"
)

var phaseReasons = map[v1alpha1.Phase]string{
	v1alpha1.PhasePending:      ReasonPending,
	v1alpha1.PhaseProvisioning: ReasonProvisioningCluster,
	v1alpha1.PhaseRunning:      ReasonRunningBenchmark,
	v1alpha1.PhaseSucceeded:    ReasonBenchmarkSucceeded,
	v1alpha1.PhaseFailed:       ReasonBenchmarkFailed,
}

func isFinished(phase v1alpha1.Phase) bool {
	return phase == v1alpha1.PhaseSucceeded || phase == v1alpha1.PhaseFailed
}

// Degradation returns the reason and message of the Degraded condition from the runs that
// failed (failed of total, the first one's error) and the result rows whose records
// cannot all be right; the reason is empty when there is neither. Failed runs give the
// reason when there are both.
func Degradation(failed, total int, firstError string, rows []v1alpha1.Result) (reason, message string) {
	var accounting string
	if inconsistent := results.AccountingErrors(rows); len(inconsistent) > 0 {
		accounting = fmt.Sprintf("accounting errors in %s: more records arrived than the server can have emitted "+
			"(status.results[].records.accountingError)", strings.Join(inconsistent, ", "))
	}
	switch {
	case failed > 0 && accounting != "":
		return ReasonRunsFailed, truncate(fmt.Sprintf("%d of %d runs failed; %s; first failure %s", failed, total, accounting, firstError))
	case failed > 0:
		return ReasonRunsFailed, truncate(fmt.Sprintf("%d of %d runs failed; first %s", failed, total, firstError))
	case accounting != "":
		return ReasonAccountingError, truncate(accounting)
	}
	return "", ""
}

// SetConditions derives the conditions from the phase and progress; degradedReason is
// empty when nothing failed and every count is consistent.
func SetConditions(benchmark *v1alpha1.LoggingBenchmark, degradedReason, degradedMessage string) {
	status := &benchmark.Status
	phase := status.Phase
	phaseMessage := fmt.Sprintf("%s: %s runs done", phase, status.Progress.Text)
	set := func(conditionType string, isTrue bool, reason, message string) {
		conditionStatus := metav1.ConditionFalse
		if isTrue {
			conditionStatus = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type:               conditionType,
			Status:             conditionStatus,
			ObservedGeneration: benchmark.Generation,
			Reason:             reason,
			Message:            message,
		})
	}
	set(ConditionReady, phase == v1alpha1.PhaseSucceeded, phaseReasons[phase], phaseMessage)
	set(ConditionProgressing, !isFinished(phase), phaseReasons[phase], phaseMessage)
	if degradedReason == "" {
		set(ConditionDegraded, false, ReasonNoFailures, "no run or destination failed and every count is consistent")
	} else {
		set(ConditionDegraded, true, degradedReason, degradedMessage)
	}
}

// patchStatus writes the status when the pass changed it, with optimistic locking so that
// a pass working from a stale read never overwrites a newer status.
func (r *LoggingBenchmarkReconciler) patchStatus(ctx context.Context, old, benchmark *v1alpha1.LoggingBenchmark) error {
	if equality.Semantic.DeepEqual(old.Status, benchmark.Status) {
		return nil
	}
	if old.Status.Progress == (v1alpha1.Progress{}) {
		// A merge patch leaves out what equals the old version, so it cannot add the
		// required zero counters of a progress the server does not hold yet; an update
		// sends them, and its resourceVersion locks as optimistically.
		return r.Status().Update(ctx, benchmark)
	}
	return r.Status().Patch(ctx, benchmark, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
}
