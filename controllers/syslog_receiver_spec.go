package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
)

// buildSyslogReceiver returns the Deployment and the Service of a forwarding Syslog
// destination's receiver, without owner references: one Fluent Bit, its configuration
// from the ConfigMap of the same name, behind a ClusterIP Service on the syslog port, over
// the destination's transport, and on the metrics port the agent scrapes. It pulls its
// image with pullSecrets.
func buildSyslogReceiver(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, pullSecrets []corev1.LocalObjectReference,
) (*appsv1.Deployment, *corev1.Service) {
	name := syslogReceiverName(benchmark.Name, dest.Name)
	labels := syslogReceiverLabels(benchmark.Name, dest.Name)
	meta := metav1.ObjectMeta{Namespace: benchmark.Namespace, Name: name, Labels: labels}
	pod := shipping.SyslogReceiverPodSpec(shippingTarget(benchmark, dest), name)
	pod.ImagePullSecrets = pullSecrets
	deployment := &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			// A second receiver would split the records between two sets of counters.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
	containerPorts := shipping.SyslogReceiverPorts(dest)
	ports := make([]corev1.ServicePort, 0, len(containerPorts))
	for _, port := range containerPorts {
		ports = append(ports, corev1.ServicePort{
			Name: port.Name, Protocol: port.Protocol, Port: port.ContainerPort, TargetPort: intstr.FromString(port.Name),
		})
	}
	service := &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: labels,
			Ports:    ports,
		},
	}
	return deployment, service
}

// syslogReceiverReady tells whether the receiver's pod serves: the Deployment's current
// generation has a ready replica.
func syslogReceiverReady(deployment *appsv1.Deployment) bool {
	return deployment.Status.ObservedGeneration >= deployment.Generation && deployment.Status.ReadyReplicas > 0
}
