package builders

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/shipping"
)

// SyslogReceiverDeployment returns the Deployment of a forwarding Syslog destination's
// receiver, without owner reference: one Fluent Bit, its configuration from the ConfigMap
// of the same name (SyslogReceiverConfigMap), and the meter from meterImage, which
// measures it as the instance pod's meter measures the sidecar; pulling its images with
// pullSecrets, on another node than its cluster's primary when one can take it.
func SyslogReceiverDeployment(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, meterImage string,
	pullSecrets []corev1.LocalObjectReference,
) *appsv1.Deployment {
	name := SyslogReceiverName(benchmark.Name, dest.Name)
	labels := SyslogReceiverLabels(benchmark.Name, dest.Name)
	pod := shipping.SyslogReceiverPodSpec(ShippingTarget(benchmark, dest), name)
	pod.ShareProcessNamespace = new(true)
	pod.Containers = append(pod.Containers, meterContainer(meterImage, "meter", "--receiver"))
	pod.ImagePullSecrets = pullSecrets
	pod.Affinity = syslogReceiverAffinity(ClusterName(benchmark.Name, dest.Name))
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchmark.Namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			// A second receiver would split the records between two sets of counters.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
}

// SyslogReceiverService returns the ClusterIP Service of a forwarding Syslog
// destination's receiver, without owner reference: the syslog port, over the
// destination's transport, and the metrics and meter ports the agent reads.
func SyslogReceiverService(benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination) *corev1.Service {
	labels := SyslogReceiverLabels(benchmark.Name, dest.Name)
	containerPorts := syslogReceiverPorts(dest)
	ports := make([]corev1.ServicePort, 0, len(containerPorts))
	for _, port := range containerPorts {
		ports = append(ports, corev1.ServicePort{
			Name: port.Name, Protocol: port.Protocol, Port: port.ContainerPort, TargetPort: intstr.FromString(port.Name),
		})
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace, Name: SyslogReceiverName(benchmark.Name, dest.Name), Labels: labels,
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: labels,
			Ports:    ports,
		},
	}
}

// syslogReceiverPorts are the ports of a receiver's pod: Fluent Bit's syslog and
// metrics ports, and the meter's.
func syslogReceiverPorts(dest v1alpha1.Destination) []corev1.ContainerPort {
	return append(shipping.SyslogReceiverPorts(dest), meterPort)
}

// syslogReceiverAffinity prefers another node than the cluster's primary's, so that the
// forwarded records cross the network between nodes. The receiver is created before its
// cluster, and the scheduler weighs a running pod's preferred anti-affinity against the
// pods it places after it: the lighter term, against any pod of the cluster, also keeps
// the cluster's instances off the receiver's node.
func syslogReceiverAffinity(cluster string) *corev1.Affinity {
	return preferApart(
		corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: nodeOfPods(cloudnativepg.PrimaryPodLabels(cluster))},
		corev1.WeightedPodAffinityTerm{
			Weight: 50, PodAffinityTerm: nodeOfPods(map[string]string{cloudnativepg.ClusterLabel: cluster}),
		},
	)
}
