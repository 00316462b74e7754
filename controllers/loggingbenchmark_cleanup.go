package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
)

// reconcileCleanup deletes the runners of a finished benchmark, whatever its cleanup
// policy, then its clusters, their shipper configurations and syslog receivers, as the
// policy says, and marks its destinations deleted; the run records stay, holding the
// results.
func (r *LoggingBenchmarkReconciler) reconcileCleanup(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) error {
	if err := r.deleteRunners(ctx, benchmark); err != nil {
		return err
	}
	policy := benchmark.Spec.Cleanup
	if policy != v1alpha1.CleanupAlways &&
		(policy != v1alpha1.CleanupOnSuccess || benchmark.Status.Phase != v1alpha1.PhaseSucceeded) {
		return nil
	}
	clusters, err := r.ownedClusters(ctx, benchmark)
	if err != nil {
		return err
	}
	deleted := 0
	for _, cluster := range clusters {
		if cluster.GetDeletionTimestamp() != nil {
			continue
		}
		if err := r.Delete(ctx, cluster); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting CloudNativePG cluster %s: %w", cluster.GetName(), err)
		}
		deleted++
	}
	if err := r.deleteShipperConfigs(ctx, benchmark); err != nil {
		return err
	}
	if err := r.deleteSyslogReceivers(ctx, benchmark); err != nil {
		return err
	}
	markDestinationsDeleted(&benchmark.Status)
	if deleted > 0 {
		r.Recorder.Eventf(
			benchmark,
			corev1.EventTypeNormal,
			EventClustersDeleted,
			"Deleted %d CloudNativePG clusters (cleanup %s)",
			deleted,
			policy,
		)
	}
	return nil
}

// deleteShipperConfigs deletes the shipper ConfigMaps of a benchmark with its clusters.
func (r *LoggingBenchmarkReconciler) deleteShipperConfigs(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) error {
	return r.deleteControlledList(ctx, benchmark, &corev1.ConfigMapList{},
		builders.BenchmarkLabels(benchmark.Name), "shipper configuration")
}
