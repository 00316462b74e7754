package controllers

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/results"
)

// setStatus rebuilds the status from what the pass observed and decided, with the
// function local mode uses too, and leaves the rows their aggregated figures only.
func setStatus(pass *benchmarkPass) {
	planned := make([]results.RunKey, len(pass.planned))
	for i, run := range pass.planned {
		planned[i] = run.Key()
	}
	observed := benchstatus.Observation{
		Planned:      planned,
		Seed:         pass.seed,
		Finished:     pass.runs.Finished,
		Destinations: pass.destinations,
		Phase:        pass.phase,
		Done:         pass.done,
	}
	if pass.current != nil {
		current := pass.current.Key()
		observed.Current = &current
	}
	previous := pass.benchmark.Status.Progress
	benchstatus.Set(pass.benchmark, observed)
	benchstatus.DropRepeats(&pass.benchmark.Status)
	pass.benchmark.Status.Progress.CurrentSince = assignedSince(previous, pass.benchmark.Status)
}

// assignedSince is when the current run of status was assigned to its runner: when the
// previous status assigned it already, then, else now; nil while no run is assigned.
func assignedSince(previous v1alpha1.Progress, status v1alpha1.LoggingBenchmarkStatus) *metav1.Time {
	current := status.Progress.Current
	switch {
	case status.Phase != v1alpha1.PhaseRunning || current == "":
		return nil
	case previous.CurrentSince != nil && previous.Current == current:
		return previous.CurrentSince
	}
	now := metav1.Now()
	return &now
}

// markDestinationsDeleted records that the clusters of the destinations that did not
// fail are gone.
func markDestinationsDeleted(benchmarkStatus *v1alpha1.LoggingBenchmarkStatus) {
	for i := range benchmarkStatus.Destinations {
		if dest := &benchmarkStatus.Destinations[i]; dest.State != v1alpha1.DestinationFailed {
			dest.State = v1alpha1.DestinationDeleted
		}
	}
}

// errStaleStatus says that the status changed since the pass read the benchmark: what
// the pass computed from the older one must not replace it. The write that changed it
// brings the next pass through the benchmark's watch.
var errStaleStatus = errors.New("the status changed since the pass read the benchmark")

// patchStatus writes the status the pass computed from before, when it changed it, and
// retries on conflict: each attempt reads the benchmark from the API server and patches
// the difference to the computed status with optimistic locking, unless the status there
// is no longer before's (errStaleStatus). The patch is computed against the benchmark as
// the server holds it, not as a typed object, which decodes an absent progress into zero
// counters that a merge patch would then leave out although the schema requires them.
func (r *LoggingBenchmarkReconciler) patchStatus(
	ctx context.Context, before, benchmark *v1alpha1.LoggingBenchmark,
) error {
	if equality.Semantic.DeepEqual(before.Status, benchmark.Status) {
		return nil
	}
	computed, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&benchmark.Status)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		held := &unstructured.Unstructured{}
		held.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("LoggingBenchmark"))
		if err := r.apiReader().Get(ctx, client.ObjectKeyFromObject(benchmark), held); err != nil {
			// A deleted benchmark has no status to write.
			return client.IgnoreNotFound(err)
		}
		if held.GetUID() != before.UID {
			return nil
		}
		// The same version needs no comparison, which therefore never holds back the pass
		// that read the latest version.
		if held.GetResourceVersion() != before.ResourceVersion {
			changed, err := statusChanged(held, before)
			if err != nil {
				return err
			}
			if changed {
				return errStaleStatus
			}
		}
		patched := held.DeepCopy()
		patched.Object["status"] = runtime.DeepCopyJSON(computed)
		return r.Status().Patch(ctx, patched, client.MergeFromWithOptions(held, client.MergeFromWithOptimisticLock{}))
	})
}

// statusChanged tells whether the status of held, a later version of before, is no
// longer before's.
func statusChanged(held *unstructured.Unstructured, before *v1alpha1.LoggingBenchmark) (bool, error) {
	var heldStatus v1alpha1.LoggingBenchmarkStatus
	raw, found, err := unstructured.NestedMap(held.Object, "status")
	if err != nil {
		return false, err
	}
	if found {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &heldStatus); err != nil {
			return false, err
		}
	}
	return !equality.Semantic.DeepEqual(heldStatus, before.Status), nil
}
