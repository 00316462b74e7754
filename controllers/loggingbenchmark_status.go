package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/status"
)

// setStatus rebuilds the status from what the pass observed and decided, with the
// function local mode uses too.
func setStatus(pass *benchmarkPass) {
	planned := make([]results.RunKey, len(pass.planned))
	for i, run := range pass.planned {
		planned[i] = run.key()
	}
	observed := status.Observation{
		Planned:      planned,
		Seed:         pass.seed,
		Finished:     pass.runs.Finished,
		Destinations: pass.destinations,
		Phase:        pass.phase,
		Done:         pass.done,
	}
	if pass.current != nil {
		current := pass.current.key()
		observed.Current = &current
	}
	status.Set(pass.benchmark, observed)
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
