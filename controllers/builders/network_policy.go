package builders

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/shipping"
)

// PodPeer selects the pods of one namespace by their labels, as a NetworkPolicy peer.
type PodPeer struct {
	// Namespace is the name of the pods' namespace.
	Namespace string
	// Labels are labels the pods carry; none selects every pod of the namespace.
	Labels map[string]string
}

// IsZero reports whether the peer names no namespace, and so selects no pod.
func (p PodPeer) IsZero() bool {
	return p.Namespace == ""
}

// validate returns why the peer makes no valid NetworkPolicy peer; what names it in the
// error.
func (p PodPeer) validate(what string) error {
	if p.IsZero() {
		if len(p.Labels) > 0 {
			return fmt.Errorf("%s: pod labels without a namespace", what)
		}
		return nil
	}
	if problems := validation.IsDNS1123Label(p.Namespace); len(problems) > 0 {
		return fmt.Errorf("%s: namespace %q: %s", what, p.Namespace, strings.Join(problems, "; "))
	}
	if problems := metav1validation.ValidateLabels(p.Labels, field.NewPath("labels")); len(problems) > 0 {
		return fmt.Errorf("%s: %w", what, problems.ToAggregate())
	}
	return nil
}

func (p PodPeer) networkPolicyPeer() networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: p.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(p.Labels)},
	}
}

// NetworkPeers are the pods from outside a benchmark that its instance pods admit.
type NetworkPeers struct {
	// CloudNativePG selects CloudNativePG's operator, which calls the instance manager of
	// every instance, and PostgreSQL as CloudNativePG's networking documentation asks.
	CloudNativePG PodPeer
	// MetricsScraper selects the pods that may scrape the instances' metrics exporter;
	// zero, none may.
	MetricsScraper PodPeer
}

// Validate returns why the peers make no valid NetworkPolicy.
func (p NetworkPeers) Validate() error {
	if p.CloudNativePG.IsZero() {
		return errors.New("CloudNativePG's operator: no namespace")
	}
	return errors.Join(p.CloudNativePG.validate("CloudNativePG's operator"),
		p.MetricsScraper.validate("the instances' metrics scraper"))
}

// DefaultCloudNativePGOperator selects the pods of CloudNativePG's operator as its
// release manifest and its Helm chart install them.
func DefaultCloudNativePGOperator() PodPeer {
	return PodPeer{Namespace: "cnpg-system", Labels: map[string]string{"app.kubernetes.io/name": "cloudnative-pg"}}
}

// instancePodSelector selects the pods of a cluster logbench created: CloudNativePG's
// label alone would select those of any cluster of that name, the one of another owner
// included.
func instancePodSelector(cluster string) *metav1.LabelSelector {
	return &metav1.LabelSelector{
		MatchLabels: map[string]string{cloudnativepg.ClusterLabel: cluster, LabelCluster: cluster},
	}
}

// NetworkPolicy returns the NetworkPolicy of a destination's cluster, without owner
// reference. It selects the cluster's instance pods and admits, each to the ports it
// needs only:
//   - the destination's runner pod (and an older operator's run Job pods): PostgreSQL,
//     the meter and the shipper's metrics;
//   - the cluster's other instances and CloudNativePG's operator: PostgreSQL and the
//     instance manager;
//   - the metrics scraper of peers, if any: the metrics exporter.
//
// A NetworkPolicy that selects a pod allows only the ingress some policy lists: every
// other pod of the cluster is refused, also where the namespace denies nothing.
func NetworkPolicy(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, peers NetworkPeers,
) *networkingv1.NetworkPolicy {
	cluster := ClusterName(benchmark.Name, dest.Name)
	runPorts := []int32{cloudnativepg.PostgresPort, meter.Port}
	if dest.Ships() {
		runPorts = append(runPorts, ShippingTarget(benchmark, dest).MetricsPort())
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{
		ingressRule(runPorts, runPodPeers(benchmark, dest)...),
		ingressRule([]int32{cloudnativepg.PostgresPort, cloudnativepg.InstanceManagerPort},
			networkingv1.NetworkPolicyPeer{PodSelector: instancePodSelector(cluster)},
			peers.CloudNativePG.networkPolicyPeer()),
	}
	if !peers.MetricsScraper.IsZero() {
		ingress = append(ingress, ingressRule([]int32{cloudnativepg.MetricsPort}, peers.MetricsScraper.networkPolicyPeer()))
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace,
			Name:      ClusterNetworkPolicyName(cluster),
			Labels:    DestinationLabels(benchmark.Name, dest.Name),
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *instancePodSelector(cluster),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

// ingressRule admits from to the TCP ports.
func ingressRule(ports []int32, from ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	tcp := corev1.ProtocolTCP
	rule := networkingv1.NetworkPolicyIngressRule{From: from}
	for _, number := range ports {
		rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: new(intstr.FromInt32(number))})
	}
	return rule
}

// runPodPeers are the pods that run the destination's runs: its runner's, and those of
// the Jobs of an older operator, which the Job controller labels with their Job's name,
// still running at the upgrade.
func runPodPeers(benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination) []networkingv1.NetworkPolicyPeer {
	return []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: RunnerLabels(benchmark.Name, dest.Name)}},
		{PodSelector: &metav1.LabelSelector{
			MatchLabels: DestinationLabels(benchmark.Name, dest.Name),
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: batchv1.JobNameLabel, Operator: metav1.LabelSelectorOpExists},
			},
		}},
	}
}

// SyslogReceiverNetworkPolicy returns the NetworkPolicy of a forwarding Syslog
// destination's receiver, without owner reference: its syslog port admits only the
// instance pods of the destination's cluster, whose sidecar forwards, and its metrics
// and meter ports only the destination's run pods (runPodPeers), whose agent counts and
// measures.
func SyslogReceiverNetworkPolicy(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination,
) *networkingv1.NetworkPolicy {
	name := SyslogReceiverName(benchmark.Name, dest.Name)
	ingress := make([]networkingv1.NetworkPolicyIngressRule, 0, 2)
	for _, port := range syslogReceiverPorts(dest) {
		from := runPodPeers(benchmark, dest)
		if port.Name == shipping.SyslogPortName {
			from = []networkingv1.NetworkPolicyPeer{{PodSelector: instancePodSelector(ClusterName(benchmark.Name, dest.Name))}}
		}
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &port.Protocol, Port: new(intstr.FromInt32(port.ContainerPort))}},
			From:  from,
		})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace,
			Name:      name,
			Labels:    DestinationLabels(benchmark.Name, dest.Name),
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: SyslogReceiverLabels(benchmark.Name, dest.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}
