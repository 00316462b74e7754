package controllers

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/logbench/logbench/api/v1alpha1"
)

// ownership says how a benchmark holds an object it creates.
type ownership int

const (
	// controlledBy: the object is the benchmark's alone, which is its controller.
	controlledBy ownership = iota
	// sharedBy: the benchmarks of a namespace share the object, each among its owners, so
	// that the garbage collector deletes it with the last of them.
	sharedBy
)

// ensureOwned creates desired, owned by benchmark as how says, or brings the object that
// holds its name up to date, and says whether it created desired. An object that is not
// logbench's is refused (foreignObjectError), not adopted. Into one that is, it merges
// desired's labels and the fields keep copies from desired, and benchmark's owner
// reference; keep nil leaves a controlled object as it is, as the operator never
// changes the Clusters, runners and receivers it creates.
//
// The change is a JSON merge patch of what differs, under optimistic locking: a patch
// rather than an update, so that what other writers set (defaults, annotations, labels
// of their own) is neither sent back nor lost; locked because a merge patch replaces a
// list whole, the owner references too, which another benchmark may be extending.
func ensureOwned[T client.Object](
	ctx context.Context, r *LoggingBenchmarkReconciler, benchmark *v1alpha1.LoggingBenchmark,
	desired T, how ownership, keep func(existing, desired T), options ...client.CreateOption,
) (created bool, err error) {
	kind := kindOf(desired)
	existing, ok := desired.DeepCopyObject().(T)
	if !ok {
		return false, fmt.Errorf("%T copies into %T", desired, existing)
	}
	err = r.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if apierrors.IsNotFound(err) {
		if err := r.setOwner(benchmark, desired, how); err != nil {
			return false, err
		}
		err = r.Create(ctx, desired, options...)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return false, fmt.Errorf("creating %s %s: %w", kind, desired.GetName(), err)
			}
			return true, nil
		}
		// Created since the read, or before it by a pass the cache has not caught up
		// with: the API server tells whose it is.
		err = r.apiReader().Get(ctx, client.ObjectKeyFromObject(desired), existing)
	}
	if err != nil {
		return false, fmt.Errorf("reading %s %s: %w", kind, desired.GetName(), err)
	}
	if err := refuseAdoption(existing, benchmark, how == controlledBy); err != nil {
		return false, err
	}
	if keep == nil && how == controlledBy {
		return false, nil
	}
	read, ok := existing.DeepCopyObject().(T)
	if !ok {
		return false, fmt.Errorf("%T copies into %T", existing, read)
	}
	if labels := desired.GetLabels(); len(labels) > 0 {
		merged := maps.Clone(existing.GetLabels())
		if merged == nil {
			merged = map[string]string{}
		}
		maps.Copy(merged, labels)
		existing.SetLabels(merged)
	}
	if keep != nil {
		keep(existing, desired)
	}
	if err := r.setOwner(benchmark, existing, how); err != nil {
		return false, err
	}
	if equality.Semantic.DeepEqual(read, existing) {
		return false, nil
	}
	if err := r.Patch(ctx, existing, client.MergeFromWithOptions(read, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("updating %s %s: %w", kind, desired.GetName(), err)
	}
	return false, nil
}

// setOwner makes benchmark the controller of object, or one of its owners.
func (r *LoggingBenchmarkReconciler) setOwner(
	benchmark *v1alpha1.LoggingBenchmark, object client.Object, how ownership,
) error {
	if how == controlledBy {
		return controllerutil.SetControllerReference(benchmark, object, r.Scheme)
	}
	return controllerutil.SetOwnerReference(benchmark, object, r.Scheme)
}

// deleteControlled deletes object when benchmark is its controller and it is not being
// deleted already; one gone meanwhile counts as deleted. what names it in the error.
func (r *LoggingBenchmarkReconciler) deleteControlled(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, object client.Object, what string,
	options ...client.DeleteOption,
) error {
	if !metav1.IsControlledBy(object, benchmark) || object.GetDeletionTimestamp() != nil {
		return nil
	}
	if err := r.Delete(ctx, object, options...); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the %s %s: %w", what, object.GetName(), err)
	}
	return nil
}

// deleteControlledList lists into list the objects of the benchmark's namespace that
// carry labels, and deletes those the benchmark controls (deleteControlled).
func (r *LoggingBenchmarkReconciler) deleteControlledList(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, list client.ObjectList, labels map[string]string,
	what string, options ...client.DeleteOption,
) error {
	if err := r.List(ctx, list, client.InNamespace(benchmark.Namespace), client.MatchingLabels(labels)); err != nil {
		return fmt.Errorf("listing the benchmark's %ss: %w", what, err)
	}
	return meta.EachListItem(list, func(item runtime.Object) error {
		object, ok := item.(client.Object)
		if !ok {
			return fmt.Errorf("%T is not a Kubernetes object", item)
		}
		return r.deleteControlled(ctx, benchmark, object, what, options...)
	})
}
