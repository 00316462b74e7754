package controllers

import (
	"cmp"
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/shipping"
)

// A forwarding Syslog destination (transport udp or tcp) has a receiver of its own in the
// benchmark's namespace, to which its cluster's sidecar forwards: a Deployment, its
// Service, its configuration and its NetworkPolicy, created before the cluster, and waited
// for as the cluster is before the destination's runs.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;create;delete

// createSyslogReceiver creates the receiver of a forwarding Syslog destination, whose
// configuration is config. An existing ConfigMap or NetworkPolicy of the benchmark is
// updated, an existing Deployment or Service of the benchmark left as it is, and one that
// no benchmark owns refused.
func (r *LoggingBenchmarkReconciler) createSyslogReceiver(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, config []byte,
) error {
	name := builders.SyslogReceiverName(benchmark.Name, dest.Name)
	if err := r.reconcileShipperConfig(ctx, benchmark, dest, name, config); err != nil {
		return err
	}
	if err := r.reconcileNetworkPolicy(ctx, benchmark, builders.SyslogReceiverNetworkPolicy(benchmark, dest)); err != nil {
		return err
	}
	deployment := builders.SyslogReceiverDeployment(benchmark, dest, r.AgentImage, r.ImagePullSecrets)
	_, err := ensureOwned(ctx, r, benchmark, deployment, controlledBy, nil)
	if err != nil {
		return err
	}
	_, err = ensureOwned(ctx, r, benchmark, builders.SyslogReceiverService(benchmark, dest), controlledBy, nil)
	return err
}

// checkSyslogReceiver tells whether the receiver of a forwarding Syslog destination, whose
// cluster is ready, serves; a receiver whose image does not exist fails its destination
// at once, one not ready within the cluster ready timeout of its creation when that
// ends, as a cluster does.
func (r *LoggingBenchmarkReconciler) checkSyslogReceiver(
	ctx context.Context, pass *benchmarkPass, dest v1alpha1.Destination,
) (clusterOutcome, error) {
	state := pass.destination(dest.Name)
	benchmark := pass.benchmark
	deployment := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: benchmark.Namespace, Name: builders.SyslogReceiverName(benchmark.Name, dest.Name)}
	if err := r.Get(ctx, key, deployment); apierrors.IsNotFound(err) {
		// Deleted since this pass restored it (keepCreatedObjects): the next pass does again.
		state.State = v1alpha1.DestinationProvisioning
		state.Message = fmt.Sprintf("syslog receiver %s: the Deployment is being created again", key.Name)
		return clusterOutcome{State: clusterWaiting, Wait: notReadyRecheck}, nil
	} else if err != nil {
		return clusterOutcome{}, fmt.Errorf("reading the syslog receiver %s: %w", key.Name, err)
	}
	if syslogReceiverReady(deployment) {
		state.State = v1alpha1.DestinationReady
		return clusterOutcome{State: clusterReady}, nil
	}
	// The destination is not ready while its receiver is not, whatever its cluster.
	state.State = v1alpha1.DestinationProvisioning
	trouble, err := r.receiverTrouble(ctx, benchmark, dest)
	if err != nil {
		return clusterOutcome{}, err
	}
	giveUp, graceLeft := unstartableFor(trouble.podTrouble, trouble.created, time.Now(),
		benchmark.Spec.PodStartTimeoutOrDefault())
	if giveUp {
		pass.failDestination(state, fmt.Sprintf("syslog receiver %s: %s", key.Name, trouble.Message))
		return clusterOutcome{State: clusterFailed}, nil
	}
	state.Message = fmt.Sprintf("syslog receiver %s: %s", key.Name, cmp.Or(trouble.Message, "starting"))
	timeout := r.clusterReadyTimeout(benchmark)
	if waited := time.Since(deployment.CreationTimestamp.Time); waited < timeout {
		// The Deployment's watch brings the pass that sees it ready; the recheck looks
		// again at its pods, which no watch follows, for trouble to report.
		wait := min(notReadyRecheck, timeout-waited)
		if graceLeft > 0 {
			wait = min(wait, graceLeft)
		}
		return clusterOutcome{State: clusterWaiting, Wait: wait}, nil
	}
	reason := fmt.Sprintf("syslog receiver %s not ready within %s: check its pod and events", key.Name, timeout)
	if trouble.Message != "" {
		reason = fmt.Sprintf("syslog receiver %s not ready within %s: %s", key.Name, timeout, trouble.Message)
	}
	pass.failDestination(state, reason)
	return clusterOutcome{State: clusterFailed}, nil
}

// syslogReceiverReady tells whether the receiver's pod serves: the Deployment's current
// generation has a ready replica.
func syslogReceiverReady(deployment *appsv1.Deployment) bool {
	return deployment.Status.ObservedGeneration >= deployment.Generation && deployment.Status.ReadyReplicas > 0
}

// receiverPodTrouble is what is wrong with a syslog receiver's pod, created then.
type receiverPodTrouble struct {
	podTrouble
	created time.Time
}

// receiverTrouble says what is wrong with the newest pod of a syslog receiver that has
// trouble, with the pod's name; empty when nothing is.
func (r *LoggingBenchmarkReconciler) receiverTrouble(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination,
) (receiverPodTrouble, error) {
	var pods corev1.PodList
	if err := r.apiReader().List(ctx, &pods, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(builders.SyslogReceiverLabels(benchmark.Name, dest.Name))); err != nil {
		return receiverPodTrouble{}, fmt.Errorf("listing the pods of the syslog receiver of %s: %w", dest.Name, err)
	}
	for _, pod := range podsToExamine(pods.Items) {
		if trouble := diagnosePod(pod, nil); trouble.Message != "" {
			trouble.Message = fmt.Sprintf("pod %s: %s", pod.Name, trouble.Message)
			return receiverPodTrouble{podTrouble: trouble, created: pod.CreationTimestamp.Time}, nil
		}
	}
	return receiverPodTrouble{}, nil
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
		key := client.ObjectKey{Namespace: benchmark.Namespace, Name: builders.SyslogReceiverName(benchmark.Name, dest.Name)}
		for _, object := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := r.Get(ctx, key, object); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return fmt.Errorf("reading the syslog receiver %s: %w", key.Name, err)
			}
			if err := r.deleteControlled(ctx, benchmark, object, "syslog receiver"); err != nil {
				return err
			}
		}
	}
	return nil
}
