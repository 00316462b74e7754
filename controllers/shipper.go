package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
)

// shipperConfigMapName is the ConfigMap holding the shipper configuration of a shipping
// destination's cluster; the cluster's pod patch mounts it.
func shipperConfigMapName(cluster string) string {
	return cluster + "-shipper"
}

func shippingTarget(benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination) shipping.Target {
	return shipping.Target{Namespace: benchmark.Namespace, Benchmark: benchmark.Name, Destination: dest}
}

// reconcileShipperConfig creates or updates the ConfigMap holding the configuration of a
// shipping destination's sidecar. It runs before the Cluster is created: CloudNativePG's instance pods mount
// the ConfigMap from their start, and a pod whose ConfigMap is missing does not start.
func (r *LoggingBenchmarkReconciler) reconcileShipperConfig(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, config []byte,
) error {
	cluster := clusterName(benchmark.Name, dest.Name)
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: benchmark.Namespace, Name: shipperConfigMapName(cluster)}}
	// Updating an existing ConfigMap makes it the one this operator generates, also when
	// an earlier pass created it and stopped before the Cluster.
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, configMap, func() error {
		configMap.Labels = destinationLabels(benchmark.Name, dest.Name)
		configMap.Data = map[string]string{shipping.ConfigKey: string(config)}
		return ctrl.SetControllerReference(benchmark, configMap, r.Scheme)
	})
	if err != nil {
		return fmt.Errorf("writing the shipper configuration %s: %w", configMap.Name, err)
	}
	return nil
}

// deleteShipperConfigs deletes the shipper ConfigMaps of a benchmark with its clusters.
func (r *LoggingBenchmarkReconciler) deleteShipperConfigs(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) error {
	var configMaps corev1.ConfigMapList
	if err := r.List(ctx, &configMaps, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(benchmarkLabels(benchmark.Name))); err != nil {
		return fmt.Errorf("listing the benchmark's shipper configurations: %w", err)
	}
	for i := range configMaps.Items {
		configMap := &configMaps.Items[i]
		if !metav1.IsControlledBy(configMap, benchmark) || configMap.DeletionTimestamp != nil {
			continue
		}
		if err := r.Delete(ctx, configMap); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the shipper configuration %s: %w", configMap.Name, err)
		}
	}
	return nil
}
