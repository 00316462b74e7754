package controllers

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/shipping"
)

// cnpgPorts are the ports CloudNativePG's instance pods serve (v1.30.0): PostgreSQL, the
// instance manager's status endpoint the operator calls, and the metrics exporter.
var cnpgPorts = []int32{5432, 8000, 9187}

// jobNameLabel is the label the Job controller puts on the pods of a Job.
const jobNameLabel = "batch.kubernetes.io/job-name"

// buildNetworkPolicy returns the NetworkPolicy of a destination's cluster, without owner
// reference: the meter's port and the shipper's metrics port of the instance pods admit
// only the pods of the benchmark's Jobs for the destination. A NetworkPolicy that selects
// a pod allows only the ingress some policy lists, so CloudNativePG's own ports are
// listed too, from anywhere, as they were before the policy.
func buildNetworkPolicy(benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination) *networkingv1.NetworkPolicy {
	cluster := clusterName(benchmark.Name, dest.Name)
	tcp := corev1.ProtocolTCP
	port := func(number int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: new(intstr.FromInt32(number))}
	}
	open := make([]networkingv1.NetworkPolicyPort, 0, len(cnpgPorts))
	for _, number := range cnpgPorts {
		open = append(open, port(number))
	}
	closed := []networkingv1.NetworkPolicyPort{port(meter.Port)}
	if dest.Ships() {
		closed = append(closed, port(shippingTarget(benchmark, dest).MetricsPort()))
	}
	runPods := runPodSelector(benchmark, dest)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace,
			Name:      cluster + "-logbench",
			Labels:    destinationLabels(benchmark.Name, dest.Name),
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{cnpgClusterLabel: cluster}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: open},
				{Ports: closed, From: []networkingv1.NetworkPolicyPeer{{PodSelector: runPods}}},
			},
		},
	}
}

// runPodSelector selects the pods of the benchmark's Jobs for the destination.
func runPodSelector(benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination) *metav1.LabelSelector {
	return &metav1.LabelSelector{
		MatchLabels:      destinationLabels(benchmark.Name, dest.Name),
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: jobNameLabel, Operator: metav1.LabelSelectorOpExists}},
	}
}

// buildSyslogReceiverNetworkPolicy returns the NetworkPolicy of a forwarding Syslog
// destination's receiver, without owner reference: its syslog port admits only the
// instance pods of the destination's cluster, whose sidecar forwards, and its metrics
// port only the pods of the benchmark's Jobs for the destination, whose agent counts.
func buildSyslogReceiverNetworkPolicy(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination,
) *networkingv1.NetworkPolicy {
	name := syslogReceiverName(benchmark.Name, dest.Name)
	ingress := make([]networkingv1.NetworkPolicyIngressRule, 0, 2)
	for _, port := range shipping.SyslogReceiverPorts(dest) {
		from := networkingv1.NetworkPolicyPeer{PodSelector: runPodSelector(benchmark, dest)}
		if port.Name == shipping.SyslogPortName {
			from = networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{cnpgClusterLabel: clusterName(benchmark.Name, dest.Name)},
			}}
		}
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &port.Protocol, Port: new(intstr.FromInt32(port.ContainerPort))}},
			From:  []networkingv1.NetworkPolicyPeer{from},
		})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace,
			Name:      name,
			Labels:    destinationLabels(benchmark.Name, dest.Name),
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: syslogReceiverLabels(benchmark.Name, dest.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}
