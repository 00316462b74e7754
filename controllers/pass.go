package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/shipping"
)

// benchmarkPass is what one reconciliation of a running benchmark observed and decided.
type benchmarkPass struct {
	benchmark *v1alpha1.LoggingBenchmark
	planned   []plannedRun
	runs      runsObservation
	// clusters holds the benchmark's Clusters by name.
	clusters     map[string]*unstructured.Unstructured
	destinations []v1alpha1.DestinationStatus
	// current is the run executing or waiting for its cluster.
	current *plannedRun
	phase   v1alpha1.Phase
}

// observe reads the benchmark's Jobs and Clusters.
func (r *LoggingBenchmarkReconciler) observe(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) (*benchmarkPass, error) {
	runs, err := r.observeRuns(ctx, benchmark)
	if err != nil {
		return nil, err
	}
	clusters, err := r.ownedClusters(ctx, benchmark)
	if err != nil {
		return nil, err
	}
	pass := &benchmarkPass{
		benchmark:    benchmark,
		planned:      plannedRuns(&benchmark.Spec),
		runs:         runs,
		clusters:     clusters,
		destinations: destinationStates(benchmark, clusters),
	}
	for _, dest := range pass.destinations {
		if dest.State == v1alpha1.DestinationFailed {
			pass.failDestinationRuns(dest.Name, dest.Message)
		}
	}
	return pass, nil
}

func (r *LoggingBenchmarkReconciler) ownedClusters(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) (map[string]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ClusterGVK.GroupVersion().WithKind(ClusterGVK.Kind + "List"))
	if err := r.List(ctx, list, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(benchmarkLabels(benchmark.Name))); err != nil {
		return nil, fmt.Errorf("listing the benchmark's CloudNativePG clusters (is CloudNativePG installed?): %w", err)
	}
	clusters := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], benchmark) {
			clusters[list.Items[i].GetName()] = &list.Items[i]
		}
	}
	return clusters, nil
}

// destinationStates derives each destination's state from its cluster; Failed and Deleted
// are final and come from the previous status.
func destinationStates(benchmark *v1alpha1.LoggingBenchmark, clusters map[string]*unstructured.Unstructured) []v1alpha1.DestinationStatus {
	previous := map[string]v1alpha1.DestinationStatus{}
	for _, dest := range benchmark.Status.Destinations {
		previous[dest.Name] = dest
	}
	var states []v1alpha1.DestinationStatus
	for _, dest := range benchmark.Spec.EffectiveDestinations() {
		state := v1alpha1.DestinationStatus{
			Name:        dest.Name,
			Type:        dest.Type,
			ClusterName: clusterName(benchmark.Name, dest.Name),
			State:       v1alpha1.DestinationPending,
		}
		cluster := clusters[state.ClusterName]
		switch before := previous[dest.Name]; {
		case before.State == v1alpha1.DestinationFailed || before.State == v1alpha1.DestinationDeleted:
			state.State, state.Message = before.State, before.Message
		case cluster != nil && observeCluster(cluster).Ready:
			state.State = v1alpha1.DestinationReady
		case cluster != nil:
			state.State = v1alpha1.DestinationProvisioning
		}
		states = append(states, state)
	}
	return states
}

func (p *benchmarkPass) destination(name string) *v1alpha1.DestinationStatus {
	for i := range p.destinations {
		if p.destinations[i].Name == name {
			return &p.destinations[i]
		}
	}
	return nil
}

// failDestination marks a destination failed, and its unfinished runs with it.
func (p *benchmarkPass) failDestination(state *v1alpha1.DestinationStatus, reason string) {
	state.State = v1alpha1.DestinationFailed
	state.Message = truncate(reason)
	p.failDestinationRuns(state.Name, state.Message)
}

// failDestinationRuns records the unfinished runs of a failed destination as failed with
// its reason.
func (p *benchmarkPass) failDestinationRuns(destination, reason string) {
	for _, run := range p.planned {
		if _, done := p.runs.Finished[run.key()]; done || run.Destination.Name != destination {
			continue
		}
		p.runs.Finished[run.key()] = v1alpha1.RepeatResult{Repeat: run.Repeat, Error: reason}
	}
}

func (p *benchmarkPass) failedRuns() int {
	failed := 0
	for _, run := range p.planned {
		if result, done := p.runs.Finished[run.key()]; done && result.Error != "" {
			failed++
		}
	}
	return failed
}

func (p *benchmarkPass) currentText() string {
	if p.current == nil {
		return ""
	}
	return fmt.Sprintf("%s/%d/%d", p.current.Destination.Name, p.current.Clients, p.current.Repeat)
}

// writeStatus rebuilds the status from what the pass observed.
func (p *benchmarkPass) writeStatus() {
	status := &p.benchmark.Status
	finished := map[results.RunKey]v1alpha1.RepeatResult{}
	firstError := ""
	for _, run := range p.planned {
		if result, done := p.runs.Finished[run.key()]; done {
			finished[run.key()] = result
			if firstError == "" && result.Error != "" {
				firstError = fmt.Sprintf("%s/%d/%d: %s", run.Destination.Name, run.Clients, run.Repeat, result.Error)
			}
		}
	}
	status.Phase = p.phase
	status.Destinations = p.destinations
	status.Results = results.Aggregate(&p.benchmark.Spec, finished)
	status.Summary = results.Summarize(status.Results)
	status.Progress = v1alpha1.Progress{
		RunsDone:  int32(len(finished)),
		RunsTotal: int32(len(p.planned)),
		Text:      fmt.Sprintf("%d/%d", len(finished), len(p.planned)),
		Current:   p.currentText(),
	}
	if isFinished(status.Phase) && status.CompletionTime == nil {
		now := metav1.Now()
		status.CompletionTime = &now
	}
	reason, message := Degradation(p.failedRuns(), len(p.planned), firstError, status.Results)
	SetConditions(p.benchmark, reason, message)
}

type clusterState int

const (
	clusterReady clusterState = iota
	clusterWaiting
	clusterFailed
)

// clusterOutcome tells whether a destination's cluster can serve runs.
type clusterOutcome struct {
	State clusterState
	// Image of a ready cluster.
	Image string
	// Wait is when the ready timeout of a waiting cluster ends.
	Wait time.Duration
}

// reconcileCluster creates the destination's cluster when missing and checks it is ready;
// a cluster not ready within ClusterReadyTimeout fails its destination and its runs.
func (r *LoggingBenchmarkReconciler) reconcileCluster(ctx context.Context, pass *benchmarkPass, dest v1alpha1.Destination) (clusterOutcome, error) {
	benchmark := pass.benchmark
	state := pass.destination(dest.Name)
	cluster := pass.clusters[state.ClusterName]
	if cluster == nil {
		if dest.Ships() {
			config, err := shipping.Config(shippingTarget(benchmark, dest))
			if err != nil {
				// The destination's settings make no configuration: retrying cannot help.
				pass.failDestination(state, fmt.Sprintf("cannot configure the shipper of cluster %s: %v", state.ClusterName, err))
				return clusterOutcome{State: clusterFailed}, nil
			}
			if err := r.reconcileShipperConfig(ctx, benchmark, dest, config); err != nil {
				return clusterOutcome{}, err
			}
		}
		created, err := buildCluster(benchmark, dest)
		if err != nil {
			return clusterOutcome{}, err
		}
		if err := ctrl.SetControllerReference(benchmark, created, r.Scheme); err != nil {
			return clusterOutcome{}, err
		}
		if err := r.Create(ctx, created); apierrors.IsInvalid(err) {
			// A rejected spec does not get better by retrying: fail the destination now.
			pass.failDestination(state, fmt.Sprintf("CloudNativePG rejected cluster %s: %v", created.GetName(), err))
			return clusterOutcome{State: clusterFailed}, nil
		} else if err != nil {
			return clusterOutcome{}, fmt.Errorf("creating CloudNativePG cluster %s: %w", created.GetName(), err)
		}
		pass.clusters[created.GetName()] = created
		state.State = v1alpha1.DestinationProvisioning
		r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventClusterCreated, "Created CloudNativePG cluster %s for destination %s", created.GetName(), dest.Name)
		return clusterOutcome{State: clusterWaiting, Wait: r.ClusterReadyTimeout}, nil
	}

	readiness := observeCluster(cluster)
	if readiness.Ready {
		state.State = v1alpha1.DestinationReady
		return clusterOutcome{State: clusterReady, Image: readiness.Image}, nil
	}
	waited := time.Since(readiness.NotReadySince)
	if waited < r.ClusterReadyTimeout {
		return clusterOutcome{State: clusterWaiting, Wait: r.ClusterReadyTimeout - waited}, nil
	}
	phase, _, _ := unstructured.NestedString(cluster.Object, "status", "phase")
	pass.failDestination(state, fmt.Sprintf("cluster %s not ready within %s (CloudNativePG phase %q): check its pods and events",
		cluster.GetName(), r.ClusterReadyTimeout, phase))
	return clusterOutcome{State: clusterFailed}, nil
}

// reconcileCleanup deletes the clusters of a finished benchmark, and their shipper
// configurations, as its cleanup policy says; the Jobs stay, holding the results.
func (r *LoggingBenchmarkReconciler) reconcileCleanup(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) error {
	policy := benchmark.Spec.Cleanup
	if policy != v1alpha1.CleanupAlways && (policy != v1alpha1.CleanupOnSuccess || benchmark.Status.Phase != v1alpha1.PhaseSucceeded) {
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
	for i := range benchmark.Status.Destinations {
		if dest := &benchmark.Status.Destinations[i]; dest.State != v1alpha1.DestinationFailed {
			dest.State = v1alpha1.DestinationDeleted
		}
	}
	if deleted > 0 {
		r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventClustersDeleted, "Deleted %d CloudNativePG clusters (cleanup %s)", deleted, policy)
	}
	return nil
}
