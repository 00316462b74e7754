package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/shipping"
)

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
// one that is not says why (diagnoseCluster), and fails its destination and its runs at
// once when the cause cannot heal, else once its ready timeout passes.
func (r *LoggingBenchmarkReconciler) reconcileCluster(
	ctx context.Context,
	pass *benchmarkPass,
	dest v1alpha1.Destination,
) (clusterOutcome, error) {
	state := pass.destination(dest.Name)
	cluster := pass.clusters[state.ClusterName]
	if cluster == nil {
		return r.createCluster(ctx, pass, state, dest)
	}
	readiness := cloudnativepg.ObserveReadiness(cluster)
	if readiness.Ready && shipping.ForwardsSyslog(dest) {
		outcome, err := r.checkSyslogReceiver(ctx, pass, dest)
		outcome.Image = readiness.Image
		return outcome, err
	}
	if readiness.Ready {
		state.State = v1alpha1.DestinationReady
		return clusterOutcome{State: clusterReady, Image: readiness.Image}, nil
	}
	diagnosis, err := r.diagnoseCluster(ctx, cluster, pass.benchmark.Spec.PodStartTimeoutOrDefault())
	if err != nil {
		return clusterOutcome{}, err
	}
	if diagnosis.Final {
		// Waiting out the ready timeout would only hide the reason.
		pass.failDestination(state, notReadyReason(&pass.benchmark.Spec, dest,
			fmt.Sprintf("cluster %s: %s", cluster.GetName(), diagnosis.Detail)))
		return clusterOutcome{State: clusterFailed}, nil
	}
	timeout := r.clusterReadyTimeout(pass.benchmark)
	waited := time.Since(readiness.NotReadySince)
	if waited < timeout {
		state.Message = benchstatus.Truncate(fmt.Sprintf("cluster %s: %s", cluster.GetName(), diagnosis.Detail))
		if diagnosis.Trouble && state.Message != previousMessage(pass.benchmark, dest.Name) {
			r.Recorder.Event(pass.benchmark, corev1.EventTypeWarning, EventClusterNotReady, state.Message)
		}
		wait := min(timeout-waited, notReadyRecheck)
		if diagnosis.Recheck > 0 {
			wait = min(wait, diagnosis.Recheck)
		}
		return clusterOutcome{State: clusterWaiting, Wait: wait}, nil
	}
	pass.failDestination(state, notReadyReason(&pass.benchmark.Spec, dest,
		fmt.Sprintf("cluster %s not ready within %s: %s", cluster.GetName(), timeout, diagnosis.Detail)))
	return clusterOutcome{State: clusterFailed}, nil
}

// notReadyReason says why a destination failed whose cluster did not become ready.
func notReadyReason(spec *v1alpha1.LoggingBenchmarkSpec, dest v1alpha1.Destination, reason string) string {
	if v1alpha1.UsesPgaudit(spec.ServerParameters(dest)) {
		// A server told to preload a library its image lacks never starts.
		reason += "; " + spec.PgauditField(dest) + " needs an image with the pgaudit extension, as CloudNativePG's are"
	}
	switch counter := spec.Postgres.Counter; {
	case counter == nil:
	case counter.Source == v1alpha1.CounterInExtensionImage:
		reason += "; spec.postgres.counter needs PostgreSQL 18 or later and a node that mounts image volumes " +
			"(Kubernetes 1.35, or 1.33 and 1.34 with the ImageVolume feature gate), and " + counter.ExtensionImage +
			" built for the operand image's PostgreSQL, distribution and architecture"
	default:
		reason += "; spec.postgres.counter needs an operand image with the " + v1alpha1.CounterExtension +
			" extension installed, as logbench's PostgreSQL images have it"
	}
	return reason
}

// createCluster creates the destination's cluster, after the objects it needs.
func (r *LoggingBenchmarkReconciler) createCluster(
	ctx context.Context, pass *benchmarkPass, state *v1alpha1.DestinationStatus, dest v1alpha1.Destination,
) (clusterOutcome, error) {
	benchmark := pass.benchmark
	if failure, err := r.reconcileDestinationObjects(ctx, benchmark, dest); err != nil {
		return clusterOutcome{}, err
	} else if failure != "" {
		pass.failDestination(state, failure)
		return clusterOutcome{State: clusterFailed}, nil
	}
	created, err := builders.Cluster(benchmark, dest, r.AgentImage, r.ImagePullSecrets, r.RsyslogImage)
	if err != nil {
		return clusterOutcome{}, err
	}
	// Strict field validation makes a CloudNativePG whose Cluster lacks a field logbench
	// sets refuse the cluster rather than prune the field and run another benchmark.
	isNew, err := ensureOwned(ctx, r, benchmark, created, controlledBy, nil,
		client.FieldValidation(metav1.FieldValidationStrict))
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		// A rejected spec does not get better by retrying: fail the destination now.
		pass.failDestination(state, rejectedReason(created.GetName(), err))
		return clusterOutcome{State: clusterFailed}, nil
	} else if err != nil {
		return clusterOutcome{}, err
	}
	pass.clusters[created.GetName()] = created
	state.State = v1alpha1.DestinationProvisioning
	if isNew {
		r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventClusterCreated,
			"Created CloudNativePG cluster %s for destination %s", created.GetName(), dest.Name)
	}
	return clusterOutcome{State: clusterWaiting, Wait: min(r.clusterReadyTimeout(benchmark), notReadyRecheck)}, nil
}

// reconcileDestinationObjects creates, or restores when they were deleted, the objects a
// destination's cluster needs, before the cluster and then on every pass while it has
// runs left: its shipper configuration, its syslog receiver, its NetworkPolicy. failure
// says why the destination's settings make no configuration, which retrying cannot
// change.
func (r *LoggingBenchmarkReconciler) reconcileDestinationObjects(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination,
) (failure string, err error) {
	cluster := builders.ClusterName(benchmark.Name, dest.Name)
	if dest.Ships() {
		config, err := shipping.Config(builders.ShippingTarget(benchmark, dest))
		if err != nil {
			return fmt.Sprintf("cannot configure the shipper of cluster %s: %v", cluster, err), nil
		}
		if err := r.reconcileShipperConfig(ctx, benchmark, dest, builders.ShipperConfigMapName(cluster), config); err != nil {
			return "", err
		}
	}
	if shipping.ForwardsSyslog(dest) {
		config, err := shipping.SyslogReceiverConfig(builders.ShippingTarget(benchmark, dest))
		if err != nil {
			return fmt.Sprintf("cannot configure the syslog receiver of cluster %s: %v", cluster, err), nil
		}
		if err := r.createSyslogReceiver(ctx, benchmark, dest, config); err != nil {
			return "", err
		}
	}
	return "", r.reconcileNetworkPolicy(ctx, benchmark, builders.NetworkPolicy(benchmark, dest, r.NetworkPeers))
}

// rejectedReason says why a destination failed whose cluster the API server refused.
func rejectedReason(cluster string, err error) string {
	reason := fmt.Sprintf("CloudNativePG rejected cluster %s: %v", cluster, err)
	if strings.Contains(err.Error(), "unknown field") {
		reason += "; this CloudNativePG lacks a field logbench sets: install a supported version (docs/compatibility.md)"
	}
	return reason
}

// clusterReadyTimeout is the benchmark's spec.clusterReadyTimeout, else the operator's.
func (r *LoggingBenchmarkReconciler) clusterReadyTimeout(benchmark *v1alpha1.LoggingBenchmark) time.Duration {
	if timeout := benchmark.Spec.ClusterReadyTimeout; timeout != nil {
		return timeout.Duration
	}
	return r.ClusterReadyTimeout
}

// reconcileShipperConfig creates or updates the ConfigMap name holding the configuration
// of a shipping destination's sidecar, or of a syslog receiver. It runs before the
// Cluster is created: CloudNativePG's instance pods mount the ConfigMap from their start,
// and a pod whose ConfigMap is missing does not start.
func (r *LoggingBenchmarkReconciler) reconcileShipperConfig(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, name string, config []byte,
) error {
	// Updating an existing ConfigMap makes it the one this operator generates, also when
	// an earlier pass created it and stopped before the Cluster.
	_, err := ensureOwned(ctx, r, benchmark, builders.ShipperConfigMap(benchmark, dest, name, config), controlledBy,
		func(existing, want *corev1.ConfigMap) { existing.Data = want.Data })
	return err
}

// reconcileNetworkPolicy creates or updates a NetworkPolicy as want says: the one that
// closes the meter and shipper ports of a destination's instance pods to all but the
// destination's runner (builders.NetworkPolicy), or a syslog receiver's
// (builders.SyslogReceiverNetworkPolicy), before the pods it selects, so that none runs
// without it.
func (r *LoggingBenchmarkReconciler) reconcileNetworkPolicy(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, want *networkingv1.NetworkPolicy,
) error {
	_, err := ensureOwned(ctx, r, benchmark, want, controlledBy, func(existing, want *networkingv1.NetworkPolicy) {
		existing.Spec = want.Spec
	})
	return err
}
