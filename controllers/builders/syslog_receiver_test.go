package builders

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/shipping"
)

func forwardingDestination(transport v1alpha1.SyslogTransport) v1alpha1.Destination {
	return v1alpha1.Destination{Name: "sys", Type: v1alpha1.DestinationSyslog,
		Syslog: &v1alpha1.SyslogSpec{Transport: transport},
		Shipper: &v1alpha1.ShipperSpec{Image: "fluent-bit:test", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}}
}

// TestSyslogReceiverServesTheTransportAndTheMetrics: one hardened Fluent Bit of the
// destination's image and resources, with its configuration from the ConfigMap of its
// name, behind a Service that selects it alone and serves the syslog port over the
// destination's transport and the metrics and meter ports over TCP.
func TestSyslogReceiverServesTheTransportAndTheMetrics(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"}}
	for transport, protocol := range map[v1alpha1.SyslogTransport]corev1.Protocol{
		v1alpha1.SyslogUDP: corev1.ProtocolUDP, v1alpha1.SyslogTCP: corev1.ProtocolTCP,
	} {
		dest := forwardingDestination(transport)
		deployment, service := SyslogReceiverDeployment(benchmark, dest, "logbench:test", testPullSecrets),
			SyslogReceiverService(benchmark, dest)
		if deployment.Name != "b-sys-syslog" || service.Name != deployment.Name || deployment.Namespace != "team" {
			t.Errorf("%s: named %s/%s and %s, want team/b-sys-syslog", transport, deployment.Namespace, deployment.Name,
				service.Name)
		}
		if *deployment.Spec.Replicas != 1 {
			t.Errorf("%s: %d replicas, want one set of counters", transport, *deployment.Spec.Replicas)
		}
		pod := deployment.Spec.Template.Spec
		if len(pod.Containers) != 2 {
			t.Fatalf("%s: %d containers, want Fluent Bit and the meter", transport, len(pod.Containers))
		}
		// The meter measures the receiver's pod as the instance pod's measures the sidecar.
		if meter := pod.Containers[1]; meter.Image != "logbench:test" || !slices.Equal(meter.Args, []string{"meter", "--receiver"}) ||
			pod.ShareProcessNamespace == nil || !*pod.ShareProcessNamespace || *meter.SecurityContext.RunAsUser == 0 {
			t.Errorf("%s: meter %+v, sharing the process namespace %v; want logbench meter --receiver, unprivileged",
				transport, meter, pod.ShareProcessNamespace)
		}
		container := pod.Containers[0]
		security := container.SecurityContext
		switch {
		case container.Image != "fluent-bit:test":
			t.Errorf("%s: image %s, want the destination's shipper image", transport, container.Image)
		case !container.Resources.Limits.Memory().Equal(resource.MustParse("64Mi")):
			t.Errorf("%s: resources %v, want the shipper's", transport, container.Resources)
		case pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken:
			t.Errorf("%s: the pod mounts a ServiceAccount token", transport)
		case !*security.ReadOnlyRootFilesystem || *security.AllowPrivilegeEscalation || !*pod.SecurityContext.RunAsNonRoot ||
			*pod.SecurityContext.RunAsUser == 0:
			t.Errorf("%s: not hardened: %+v, %+v", transport, pod.SecurityContext, security)
		case pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != deployment.Name:
			t.Errorf("%s: configuration from %+v, want the ConfigMap %s", transport, pod.Volumes, deployment.Name)
		case !slices.Equal(pod.ImagePullSecrets, testPullSecrets):
			t.Errorf("%s: pull secrets %v, want the operator's", transport, pod.ImagePullSecrets)
		case container.ReadinessProbe == nil:
			t.Errorf("%s: no readiness probe: the runs would not wait for the receiver", transport)
		}
		selector, err := metav1.LabelSelectorAsSelector(deployment.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(deployment.Spec.Template.Labels)) ||
			!labels.SelectorFromSet(service.Spec.Selector).Matches(labels.Set(deployment.Spec.Template.Labels)) {
			t.Errorf("%s: the Deployment's or the Service's selector misses the receiver's pod: %v", transport, err)
		}
		run := Run{Destination: dest, Clients: 1, Repeat: 1}
		if labels.SelectorFromSet(service.Spec.Selector).Matches(labels.Set(RunKeyLabels("b", run.Key()))) {
			t.Errorf("%s: the Service selects the run pods too", transport)
		}
		want := []corev1.ServicePort{
			{Name: shipping.SyslogPortName, Protocol: protocol, Port: 5140},
			{Name: "shipper-metrics", Protocol: corev1.ProtocolTCP, Port: 2020},
			{Name: "logbench-meter", Protocol: corev1.ProtocolTCP, Port: 9190},
		}
		if len(service.Spec.Ports) != len(want) {
			t.Fatalf("%s: ports %+v, want %+v", transport, service.Spec.Ports, want)
		}
		for i, port := range service.Spec.Ports {
			if port.Name != want[i].Name || port.Protocol != want[i].Protocol || port.Port != want[i].Port ||
				port.TargetPort.StrVal != want[i].Name {
				t.Errorf("%s: port %+v, want %+v to the container port of that name", transport, port, want[i])
			}
		}
	}
}

// TestSyslogReceiverPrefersAnotherNodeThanThePrimary: the receiver only prefers nodes
// without its cluster's primary, most of all, or any of its pods, so that a single-node
// cluster still runs it; it requires nothing and leaves the other clusters' pods alone.
func TestSyslogReceiverPrefersAnotherNodeThanThePrimary(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"}}
	affinity := SyslogReceiverDeployment(benchmark, forwardingDestination(v1alpha1.SyslogTCP), "logbench:test", nil).Spec.Template.Spec.Affinity
	if affinity == nil || affinity.PodAntiAffinity == nil || affinity.PodAffinity != nil || affinity.NodeAffinity != nil ||
		affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Fatalf("affinity %+v, want only a preferred pod anti-affinity", affinity)
	}
	primary, otherInstance := labels.Set(cloudnativepg.PrimaryPodLabels("b-sys")), labels.Set{
		cloudnativepg.ClusterLabel: "b-sys", cloudnativepg.InstanceRoleLabel: "replica",
	}
	for _, tc := range []struct {
		pod        labels.Set
		wantWeight int32
	}{
		{primary, 150},
		{otherInstance, 50},
		{labels.Set(cloudnativepg.PrimaryPodLabels("b-other")), 0},
	} {
		weight := int32(0)
		for _, term := range affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			selector, err := metav1.LabelSelectorAsSelector(term.PodAffinityTerm.LabelSelector)
			if err != nil {
				t.Fatal(err)
			}
			if term.PodAffinityTerm.TopologyKey != corev1.LabelHostname {
				t.Errorf("topology key %s, want the node's", term.PodAffinityTerm.TopologyKey)
			}
			if selector.Matches(tc.pod) {
				weight += term.Weight
			}
		}
		if weight != tc.wantWeight {
			t.Errorf("a pod labelled %v weighs %d against the receiver's node, want %d", tc.pod, weight, tc.wantWeight)
		}
	}
}

// TestSyslogReceiverNetworkPolicyAdmitsTheClusterAndTheRuns: the receiver's syslog port
// takes only the destination's instance pods, not those of a cluster of the same name
// logbench did not create, its metrics and meter ports only the destination's run pods.
func TestSyslogReceiverNetworkPolicyAdmitsTheClusterAndTheRuns(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"}}
	dest := forwardingDestination(v1alpha1.SyslogUDP)
	policy := SyslogReceiverNetworkPolicy(benchmark, dest)
	deployment := SyslogReceiverDeployment(benchmark, dest, "logbench:test", nil)
	if selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector); err != nil ||
		!selector.Matches(labels.Set(deployment.Spec.Template.Labels)) {
		t.Fatalf("the policy does not select the receiver's pod: %v", err)
	}
	if policy.Name == NetworkPolicy(benchmark, dest, NetworkPeers{}).Name {
		t.Errorf("the receiver's policy %s replaces the cluster's", policy.Name)
	}
	runner, err := Runner(benchmark, dest, RunnerInput{ClusterImage: "pg", InstallerImage: "logbench"})
	if err != nil {
		t.Fatal(err)
	}
	runPod := labels.Set(runner.Spec.Template.Labels)
	instance := labels.Set{cloudnativepg.ClusterLabel: "b-sys", cloudnativepg.InstanceRoleLabel: cloudnativepg.PrimaryRole, LabelCluster: "b-sys"}
	foreignInstance := labels.Set{cloudnativepg.ClusterLabel: "b-sys", cloudnativepg.InstanceRoleLabel: cloudnativepg.PrimaryRole}
	otherInstance := labels.Set{cloudnativepg.ClusterLabel: "b-csv", LabelCluster: "b-csv"}
	admitted := func(rule networkingv1.NetworkPolicyIngressRule, pod labels.Set) bool {
		for _, peer := range rule.From {
			selector, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			if peer.NamespaceSelector == nil && peer.IPBlock == nil && selector.Matches(pod) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		port     int32
		protocol corev1.Protocol
		pod      string
		labels   labels.Set
		admit    bool
	}{
		{5140, corev1.ProtocolUDP, "the instance pod", instance, true},
		{5140, corev1.ProtocolUDP, "another cluster's instance pod", otherInstance, false},
		{5140, corev1.ProtocolUDP, "an instance pod of a foreign cluster b-sys", foreignInstance, false},
		{5140, corev1.ProtocolUDP, "the runner pod", runPod, false},
		{2020, corev1.ProtocolTCP, "the runner pod", runPod, true},
		{2020, corev1.ProtocolTCP, "the instance pod", instance, false},
		{9190, corev1.ProtocolTCP, "the runner pod", runPod, true},
		{9190, corev1.ProtocolTCP, "the instance pod", instance, false},
	} {
		got := false
		for _, rule := range policy.Spec.Ingress {
			for _, port := range rule.Ports {
				if port.Port.IntVal == tc.port && *port.Protocol == tc.protocol && admitted(rule, tc.labels) {
					got = true
				}
			}
		}
		if got != tc.admit {
			t.Errorf("%s admitted to %s %d: %v, want %v", tc.pod, tc.protocol, tc.port, got, tc.admit)
		}
	}
}
