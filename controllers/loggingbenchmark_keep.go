package controllers

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/controllers/builders"
)

// What logbench creates for a benchmark, it keeps until the benchmark's runs are done: a
// shipper ConfigMap, a NetworkPolicy or a syslog receiver deleted mid-benchmark is
// created again by the next pass, which the deletion itself brings (the manager watches
// these kinds, metadata only), and the agent's ServiceAccount and RoleBindings on every
// pass once runs have started. A deleted Cluster is created again too, as any missing
// one is (reconcileCluster), once its predecessor's volumes are gone
// (waitForPredecessor). The runner of the assigned run's destination is restored by the
// pass that watches over the run (superviseRun).
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=list;watch

// keepCreatedObjects restores what the benchmark created for each destination whose
// cluster exists and that has runs left, and the agent's access while runs are left.
func (r *LoggingBenchmarkReconciler) keepCreatedObjects(ctx context.Context, pass *benchmarkPass) error {
	for _, dest := range pass.benchmark.Spec.EffectiveDestinations() {
		if !pass.hasRunsLeft(dest.Name) || pass.clusters[builders.ClusterName(pass.benchmark.Name, dest.Name)] == nil {
			continue
		}
		failure, err := r.reconcileDestinationObjects(ctx, pass.benchmark, dest)
		if err != nil {
			return err
		}
		if failure != "" {
			pass.failDestination(pass.destination(dest.Name), failure)
		}
	}
	if next := pass.nextRun(); next != nil && (len(pass.runs.Started) > 0 || pass.assigned(*next)) {
		return r.reconcileAgentAccess(ctx, pass.benchmark)
	}
	return nil
}

// keptKinds are the kinds of the objects of a benchmark, labelled
// builders.LabelBenchmark, that the manager watches so that it creates them again once
// deleted, and sees a syslog receiver become ready; the reads of them go to the API
// server (ClientOptions).
func keptKinds() []client.Object {
	return []client.Object{
		&corev1.ConfigMap{}, &networkingv1.NetworkPolicy{}, &appsv1.Deployment{}, &corev1.Service{},
	}
}
