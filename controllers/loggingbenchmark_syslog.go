package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
)

// A forwarding Syslog destination (transport udp or tcp) has a receiver of its own in the
// benchmark's namespace, to which its cluster's sidecar forwards: a Deployment, its
// Service, its configuration and its NetworkPolicy, created before the cluster, and waited
// for as the cluster is before the destination's runs.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;create;delete

// syslogReceiverPoll is how often a pass checks a receiver that is not ready yet: the
// operator watches no Deployments.
const syslogReceiverPoll = 2 * time.Second

// createSyslogReceiver creates the receiver of a forwarding Syslog destination, whose
// configuration is config. An existing ConfigMap or NetworkPolicy of the benchmark is
// updated, an existing Deployment or Service of the benchmark left as it is, and one that
// no benchmark owns refused.
func (r *LoggingBenchmarkReconciler) createSyslogReceiver(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, config []byte,
) error {
	name := syslogReceiverName(benchmark.Name, dest.Name)
	if err := r.reconcileShipperConfig(ctx, benchmark, dest, name, config); err != nil {
		return err
	}
	if err := r.reconcileNetworkPolicy(ctx, benchmark, buildSyslogReceiverNetworkPolicy(benchmark, dest)); err != nil {
		return err
	}
	deployment, service := buildSyslogReceiver(benchmark, dest, r.ImagePullSecrets)
	for _, object := range []client.Object{deployment, service} {
		if err := r.createControlled(ctx, benchmark, object); err != nil {
			return err
		}
	}
	return nil
}

// createControlled creates object, controlled by the benchmark, unless the benchmark's
// exists already.
func (r *LoggingBenchmarkReconciler) createControlled(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, object client.Object,
) error {
	if err := ctrl.SetControllerReference(benchmark, object, r.Scheme); err != nil {
		return err
	}
	err := r.Create(ctx, object)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s: %w", object.GetName(), err)
		}
		return nil
	}
	existing, ok := object.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is no client.Object", object)
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(object), existing); err != nil {
		return fmt.Errorf("reading %s: %w", object.GetName(), err)
	}
	return refuseAdoption(existing, benchmark, true)
}

// checkSyslogReceiver tells whether the receiver of a forwarding Syslog destination, whose
// cluster is ready, serves; a receiver not ready within the cluster ready timeout of its
// creation fails its destination, as a cluster does.
func (r *LoggingBenchmarkReconciler) checkSyslogReceiver(
	ctx context.Context, pass *benchmarkPass, dest v1alpha1.Destination,
) (clusterOutcome, error) {
	state := pass.destination(dest.Name)
	benchmark := pass.benchmark
	deployment := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: benchmark.Namespace, Name: syslogReceiverName(benchmark.Name, dest.Name)}
	if err := r.Get(ctx, key, deployment); apierrors.IsNotFound(err) {
		pass.failDestination(state, fmt.Sprintf("the syslog receiver Deployment %s is gone: logbench creates it "+
			"with the cluster only", key.Name))
		return clusterOutcome{State: clusterFailed}, nil
	} else if err != nil {
		return clusterOutcome{}, fmt.Errorf("reading the syslog receiver %s: %w", key.Name, err)
	}
	if syslogReceiverReady(deployment) {
		state.State = v1alpha1.DestinationReady
		return clusterOutcome{State: clusterReady}, nil
	}
	timeout := r.clusterReadyTimeout(benchmark)
	if waited := time.Since(deployment.CreationTimestamp.Time); waited < timeout {
		// The destination is not ready while its receiver is not, whatever its cluster.
		state.State = v1alpha1.DestinationProvisioning
		return clusterOutcome{State: clusterWaiting, Wait: min(syslogReceiverPoll, timeout-waited)}, nil
	}
	pass.failDestination(state, fmt.Sprintf("syslog receiver %s not ready within %s: check its pod and events",
		key.Name, timeout))
	return clusterOutcome{State: clusterFailed}, nil
}

// deleteSyslogReceivers deletes the Deployments and Services of a benchmark's forwarding
// Syslog destinations with its clusters; their ConfigMaps go with the shipper
// configurations, their NetworkPolicies with the benchmark.
func (r *LoggingBenchmarkReconciler) deleteSyslogReceivers(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark,
) error {
	for _, dest := range benchmark.Spec.EffectiveDestinations() {
		if !shipping.ForwardsSyslog(dest) {
			continue
		}
		key := client.ObjectKey{Namespace: benchmark.Namespace, Name: syslogReceiverName(benchmark.Name, dest.Name)}
		for _, object := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := r.Get(ctx, key, object); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return fmt.Errorf("reading the syslog receiver %s: %w", key.Name, err)
			}
			if !metav1.IsControlledBy(object, benchmark) || object.GetDeletionTimestamp() != nil {
				continue
			}
			if err := r.Delete(ctx, object); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting the syslog receiver %s: %w", key.Name, err)
			}
		}
	}
	return nil
}
