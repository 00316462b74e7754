package builders

import (
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/results"
)

// policyPeer is a pod as a NetworkPolicy sees it: its namespace and its labels.
type policyPeer struct {
	namespace string
	labels    labels.Set
}

// admits reports whether policy, which must select the pod it is asked about, admits
// from to the TCP port: whether one of its ingress rules lists the port and a peer that
// selects from, as the API defines them (a peer without namespace selector is of the
// policy's namespace; a rule without peers or ports admits all of them).
func admits(t *testing.T, policy *networkingv1.NetworkPolicy, from policyPeer, port int32) bool {
	t.Helper()
	matches := func(selector *metav1.LabelSelector, set labels.Set) bool {
		parsed, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			t.Fatal(err)
		}
		return parsed.Matches(set)
	}
	namespaceLabels := labels.Set{corev1.LabelMetadataName: from.namespace}
	for _, rule := range policy.Spec.Ingress {
		listed := len(rule.Ports) == 0 || slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) && p.Port.IntVal == port
		})
		peered := len(rule.From) == 0 || slices.ContainsFunc(rule.From, func(peer networkingv1.NetworkPolicyPeer) bool {
			if peer.IPBlock != nil {
				return false
			}
			if peer.NamespaceSelector == nil && from.namespace != policy.Namespace ||
				peer.NamespaceSelector != nil && !matches(peer.NamespaceSelector, namespaceLabels) {
				return false
			}
			return peer.PodSelector == nil || matches(peer.PodSelector, from.labels)
		})
		if listed && peered {
			return true
		}
	}
	return false
}

// TestNetworkPolicyAdmitsOnlyItsPeers: the policy selects the instance pods of the
// cluster logbench created, not those of a cluster of the same name it did not, and
// admits each peer to the ports it needs only: the destination's run pods to PostgreSQL,
// the meter and the shipper; the cluster's instances and CloudNativePG's operator to
// PostgreSQL and the instance manager; the metrics scraper, when there is one, to the
// metrics exporter; any other pod to nothing.
func TestNetworkPolicyAdmitsOnlyItsPeers(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"}}
	dest := v1alpha1.Destination{Name: "fb", Type: v1alpha1.DestinationFluentBitSidecar}
	operator := DefaultCloudNativePGOperator()
	scraper := PodPeer{Namespace: "monitoring", Labels: map[string]string{"app.kubernetes.io/name": "prometheus"}}
	policy := NetworkPolicy(benchmark, dest, NetworkPeers{CloudNativePG: operator, MetricsScraper: scraper})

	cluster, err := Cluster(benchmark, dest, "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inherited, _, err := unstructured.NestedStringMap(cluster.Object, "spec", "inheritedMetadata", "labels")
	if err != nil {
		t.Fatal(err)
	}
	instance := labels.Merge(labels.Set{cloudnativepg.ClusterLabel: "b-fb", cloudnativepg.InstanceRoleLabel: cloudnativepg.PrimaryRole}, labels.Set(inherited))
	foreignInstance := labels.Set{cloudnativepg.ClusterLabel: "b-fb", cloudnativepg.InstanceRoleLabel: cloudnativepg.PrimaryRole}
	selected, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !selected.Matches(instance) {
		t.Errorf("the policy does not select the instance pods of b-fb, labelled %v", instance)
	}
	if selected.Matches(foreignInstance) {
		t.Errorf("the policy selects the pods of a cluster b-fb logbench did not create, labelled %v", foreignInstance)
	}
	if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy types %v, want Ingress only: egress stays as CloudNativePG needs it", policy.Spec.PolicyTypes)
	}
	for _, rule := range policy.Spec.Ingress {
		if len(rule.From) == 0 || len(rule.Ports) == 0 {
			t.Errorf("rule %+v admits every peer or every port", rule)
		}
	}

	runner, err := Runner(benchmark, dest, RunnerInput{ClusterImage: "pg", InstallerImage: "logbench"})
	if err != nil {
		t.Fatal(err)
	}
	runnerPod := labels.Set(runner.Spec.Template.Labels)
	runLabels := RunKeyLabels("b", results.RunKey{Destination: dest.Name, Clients: 4, Repeat: 2})
	olderJobPod := labels.Merge(runLabels, labels.Set{batchv1.JobNameLabel: "b-fb-c4-r2"})
	otherDestination := labels.Merge(RunKeyLabels("b", results.RunKey{Destination: "csv"}),
		labels.Set{batchv1.JobNameLabel: "b-csv-c1-r1"})
	const shipperMetrics = 2020
	ports := []int32{cloudnativepg.PostgresPort, cloudnativepg.InstanceManagerPort, cloudnativepg.MetricsPort, meter.Port, shipperMetrics}
	for name, tc := range map[string]struct {
		peer  policyPeer
		admit []int32
	}{
		"the destination's runner":                      {policyPeer{"team", runnerPod}, []int32{cloudnativepg.PostgresPort, meter.Port, shipperMetrics}},
		"an older operator's run Job":                   {policyPeer{"team", olderJobPod}, []int32{cloudnativepg.PostgresPort, meter.Port, shipperMetrics}},
		"another destination's run":                     {policyPeer{"team", otherDestination}, nil},
		"a pod copying a Job's labels but the job-name": {policyPeer{"team", runLabels}, nil},
		"another instance of the cluster":               {policyPeer{"team", instance}, []int32{cloudnativepg.PostgresPort, cloudnativepg.InstanceManagerPort}},
		"an instance of the foreign cluster b-fb":       {policyPeer{"team", foreignInstance}, nil},
		"CloudNativePG's operator":                      {policyPeer{"cnpg-system", operator.Labels}, []int32{cloudnativepg.PostgresPort, cloudnativepg.InstanceManagerPort}},
		"a pod labelled as the operator elsewhere":      {policyPeer{"team", operator.Labels}, nil},
		"another pod of CloudNativePG's namespace":      {policyPeer{"cnpg-system", labels.Set{"app": "other"}}, nil},
		"the metrics scraper":                           {policyPeer{"monitoring", scraper.Labels}, []int32{cloudnativepg.MetricsPort}},
		"another pod of the scraper's namespace":        {policyPeer{"monitoring", labels.Set{"app": "other"}}, nil},
		"any pod of the namespace":                      {policyPeer{"team", labels.Set{"app": "client"}}, nil},
		"any pod of another namespace":                  {policyPeer{"elsewhere", nil}, nil},
	} {
		for _, port := range ports {
			if got, want := admits(t, policy, tc.peer, port), slices.Contains(tc.admit, port); got != want {
				t.Errorf("%s admitted to port %d: %v, want %v", name, port, got, want)
			}
		}
	}

	csv := NetworkPolicy(benchmark, v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog},
		NetworkPeers{CloudNativePG: operator})
	csvRun := policyPeer{"team", labels.Merge(RunKeyLabels("b", results.RunKey{Destination: "csv"}),
		labels.Set{batchv1.JobNameLabel: "b-csv-c1-r1"})}
	for _, port := range ports {
		want := port == cloudnativepg.PostgresPort || port == meter.Port
		if got := admits(t, csv, csvRun, port); got != want {
			t.Errorf("a destination without shipper admits its run to port %d: %v, want %v", port, got, want)
		}
		if admits(t, csv, policyPeer{"monitoring", scraper.Labels}, port) {
			t.Errorf("without a metrics scraper, a scraper is admitted to port %d", port)
		}
	}
}

// TestNetworkPeersValidate: peers that would make the API server refuse every policy are
// refused when the operator starts.
func TestNetworkPeersValidate(t *testing.T) {
	operator := DefaultCloudNativePGOperator()
	for name, tc := range map[string]struct {
		peers NetworkPeers
		valid bool
	}{
		"the defaults":                   {NetworkPeers{CloudNativePG: operator}, true},
		"a scraper namespace":            {NetworkPeers{CloudNativePG: operator, MetricsScraper: PodPeer{Namespace: "monitoring"}}, true},
		"no CloudNativePG namespace":     {NetworkPeers{}, false},
		"a namespace that is no name":    {NetworkPeers{CloudNativePG: PodPeer{Namespace: "Cnpg System"}}, false},
		"a label key that is no key":     {NetworkPeers{CloudNativePG: PodPeer{Namespace: "cnpg", Labels: map[string]string{"a b": "c"}}}, false},
		"scraper labels, no namespace":   {NetworkPeers{CloudNativePG: operator, MetricsScraper: PodPeer{Labels: map[string]string{"app": "p"}}}, false},
		"a label value that is no value": {NetworkPeers{CloudNativePG: operator, MetricsScraper: PodPeer{Namespace: "m", Labels: map[string]string{"app": "a/b"}}}, false},
	} {
		if err := tc.peers.Validate(); (err == nil) != tc.valid {
			t.Errorf("%s: error %v, want valid %v", name, err, tc.valid)
		}
	}
}
