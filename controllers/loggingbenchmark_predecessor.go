package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// A benchmark deleted and created again at once (kubectl delete -f, then kubectl apply -f
// of the same file) names its objects as its predecessor did, while the garbage collector
// is still deleting the predecessor's: a new Cluster that CloudNativePG creates beside
// the old one's PersistentVolumeClaims and Jobs, still being released, comes up
// unrecoverable. The names stay the same, since users and their scripts know a
// benchmark's clusters by them (<benchmark>-<destination>); instead, the new benchmark
// creates nothing until every object of its predecessor in the way of its names is gone.

// predecessorRecheck is how often a benchmark waiting for its predecessor's objects
// looks again: the PersistentVolumeClaims and CloudNativePG's Jobs are not watched.
const predecessorRecheck = 3 * time.Second

// waitForPredecessor tells how long to wait before creating the benchmark's clusters,
// 0 when nothing of a predecessor holds the names it creates; while it waits, each
// destination without a cluster says which object it waits for.
func (r *LoggingBenchmarkReconciler) waitForPredecessor(
	ctx context.Context, pass *benchmarkPass, held heldNames,
) (time.Duration, error) {
	waiting, err := r.predecessorInTheWay(ctx, pass.benchmark, held)
	if err != nil || waiting == "" {
		return 0, err
	}
	for i := range pass.destinations {
		state := &pass.destinations[i]
		if state.State == v1alpha1.DestinationPending && pass.hasRunsLeft(state.Name) {
			if previous := previousMessage(pass.benchmark, state.Name); previous != waiting {
				r.Recorder.Event(pass.benchmark, corev1.EventTypeNormal, EventWaitingForPredecessor, waiting)
			}
			state.Message = waiting
		}
	}
	return predecessorRecheck, nil
}

// predecessorInTheWay names the first object in the way of the benchmark's names that a
// predecessor left: one of logbench's, or of CloudNativePG's for a cluster the benchmark
// has not created yet. "" when there is none.
func (r *LoggingBenchmarkReconciler) predecessorInTheWay(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, held heldNames,
) (string, error) {
	for _, name := range held.objects {
		switch {
		case name.shared:
			// The benchmarks of a namespace share it, the new one with the old.
		case name.existing == nil && name.kind == cloudnativepg.ClusterGVK:
			// The Cluster is gone; CloudNativePG's objects of it may not be.
			if waiting, err := r.previousClusterLeftovers(ctx, benchmark.Namespace, name.name); err != nil ||
				waiting != "" {
				return waiting, err
			}
		case name.existing != nil:
			if waiting := predecessorsObject(name.existing, name.kind.Kind, benchmark); waiting != "" {
				return waiting, nil
			}
		}
	}
	ofBenchmark := labels.SelectorFromSet(builders.BenchmarkLabels(benchmark.Name))
	for i := range held.records {
		record := &held.records[i]
		if !ofBenchmark.Matches(labels.Set(record.Labels)) {
			continue
		}
		if waiting := predecessorsObject(record, record.Kind, benchmark); waiting != "" {
			return waiting, nil
		}
	}
	return "", nil
}

// previousClusterLeftovers names the first PersistentVolumeClaim or Job that
// CloudNativePG created for an earlier Cluster named cluster and that is still there:
// owned by that Cluster, or being deleted. A new Cluster of the name would take them
// over half-released. The claims go last of a Cluster's objects, once its pods have
// stopped, so its Secrets, which the operator may not read, are gone by then.
func (r *LoggingBenchmarkReconciler) previousClusterLeftovers(
	ctx context.Context, namespace, cluster string,
) (string, error) {
	for _, kind := range []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"),
		batchv1.SchemeGroupVersion.WithKind("JobList"),
	} {
		leftovers := &metav1.PartialObjectMetadataList{}
		leftovers.SetGroupVersionKind(kind)
		if err := r.apiReader().List(ctx, leftovers, client.InNamespace(namespace),
			client.MatchingLabels{cloudnativepg.ClusterLabel: cluster}); err != nil {
			return "", fmt.Errorf("listing the %ss of cluster %s: %w", kind.Kind, cluster, err)
		}
		for _, leftover := range leftovers.Items {
			if leftover.DeletionTimestamp != nil || ownedByKind(&leftover, cloudnativepg.ClusterGVK.Kind) {
				return fmt.Sprintf("waiting for the previous cluster %s's %s %s to be deleted",
					cluster, kind.Kind[:len(kind.Kind)-len("List")], leftover.Name), nil
			}
		}
	}
	return "", nil
}

// predecessorsObject says what to wait for when object, of the given kind, is in the way
// of the benchmark's names and will go by itself: a predecessor's (its controller is a
// LoggingBenchmark of the same name with another UID, which the garbage collector
// deletes), or any object already being deleted. "" otherwise: the benchmark's own, or
// another owner's, which refuseTakenNames refuses.
func predecessorsObject(object client.Object, kind string, benchmark *v1alpha1.LoggingBenchmark) string {
	if owner := metav1.GetControllerOf(object); owner != nil && owner.Kind == "LoggingBenchmark" &&
		owner.APIVersion == v1alpha1.GroupVersion.String() && owner.Name == benchmark.Name && owner.UID != benchmark.UID {
		return fmt.Sprintf("waiting for the previous benchmark's %s %s to be deleted", kind, object.GetName())
	}
	if object.GetDeletionTimestamp() != nil && !metav1.IsControlledBy(object, benchmark) {
		return fmt.Sprintf("waiting for %s %s to be deleted", kind, object.GetName())
	}
	return ""
}

func ownedByKind(object client.Object, kind string) bool {
	for _, owner := range object.GetOwnerReferences() {
		if owner.Kind == kind {
			return true
		}
	}
	return false
}
