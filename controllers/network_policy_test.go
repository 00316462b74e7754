package controllers

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/meter"
)

// TestNetworkPolicyAdmitsOnlyTheRunsToTheMeterAndShipper: the policy selects the
// destination's instance pods, leaves CloudNativePG's ports open, and admits to the
// meter's and the shipper's ports only the pods of the destination's run Jobs.
func TestNetworkPolicyAdmitsOnlyTheRunsToTheMeterAndShipper(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"}}
	dest := v1alpha1.Destination{Name: "fb", Type: v1alpha1.DestinationFluentBitSidecar}
	policy := buildNetworkPolicy(benchmark, dest)

	instance := labels.Set{cnpgClusterLabel: "b-fb", cnpgInstanceRoleLabel: cnpgPrimaryRole}
	if selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector); err != nil || !selector.Matches(instance) {
		t.Fatalf("the policy does not select the instance pods of b-fb: %v", err)
	}
	if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy types %v, want Ingress only: egress stays as CloudNativePG needs it", policy.Spec.PolicyTypes)
	}
	if len(policy.Spec.Ingress) != 2 {
		t.Fatalf("%d ingress rules, want 2", len(policy.Spec.Ingress))
	}
	open, closed := policy.Spec.Ingress[0], policy.Spec.Ingress[1]
	if len(open.From) != 0 || !slices.Equal(portNumbers(open), cnpgPorts) {
		t.Errorf("open rule %+v: want CloudNativePG's ports %v from anywhere", open, cnpgPorts)
	}
	if got, want := portNumbers(closed), []int32{meter.Port, 2020}; !slices.Equal(got, want) {
		t.Errorf("closed ports %v, want the meter's and Fluent Bit's %v", got, want)
	}
	if len(closed.From) != 1 || closed.From[0].NamespaceSelector != nil {
		t.Fatalf("closed rule admits %+v: want the benchmark's pods of its own namespace", closed.From)
	}
	runPods, err := metav1.LabelSelectorAsSelector(closed.From[0].PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	run := plannedRun{Destination: dest, Clients: 4, Repeat: 2}
	job, err := buildJob(benchmark, run, jobInput{ClusterName: "b-fb", ClusterImage: "pg", InstallerImage: "logbench"})
	if err != nil {
		t.Fatal(err)
	}
	runPod := labels.Merge(job.Spec.Template.Labels, labels.Set{jobNameLabel: job.Name})
	otherDestination := labels.Merge(runLabels("b", plannedRun{Destination: v1alpha1.Destination{Name: "csv"}}),
		labels.Set{jobNameLabel: "b-csv-c1-r1"})
	for pod, want := range map[string]struct {
		labels labels.Set
		admit  bool
	}{
		"the destination's run":     {runPod, true},
		"another destination's run": {otherDestination, false},
		"the instance pod itself":   {instance, false},
		"a pod copying the labels":  {job.Spec.Template.Labels, false},
	} {
		if runPods.Matches(want.labels) != want.admit {
			t.Errorf("%s admitted: %v, want %v", pod, !want.admit, want.admit)
		}
	}

	csv := buildNetworkPolicy(benchmark, v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog})
	if got := portNumbers(csv.Spec.Ingress[1]); !slices.Equal(got, []int32{meter.Port}) {
		t.Errorf("a destination without shipper closes ports %v, want the meter's only", got)
	}
}

func portNumbers(rule networkingv1.NetworkPolicyIngressRule) []int32 {
	numbers := make([]int32, 0, len(rule.Ports))
	for _, port := range rule.Ports {
		numbers = append(numbers, port.Port.IntVal)
	}
	return numbers
}
