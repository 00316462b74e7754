package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
)

// ShipperConfigMap returns the ConfigMap name holding config, the configuration of a
// shipping destination's sidecar (ShipperConfigMapName) or of a forwarding Syslog
// destination's receiver (SyslogReceiverName), without owner reference.
func ShipperConfigMap(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, name string, config []byte,
) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace, Name: name, Labels: DestinationLabels(benchmark.Name, dest.Name),
		},
		Data: map[string]string{shipping.ConfigKey: string(config)},
	}
}
