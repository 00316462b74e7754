package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestPlacementAffinity: Apart only prefers another node than the primary's, so that a
// single-node cluster still runs; SameNode requires the primary's; Anywhere says nothing.
func TestPlacementAffinity(t *testing.T) {
	primaryOf := func(term corev1.PodAffinityTerm) bool {
		labels := term.LabelSelector.MatchLabels
		return term.TopologyKey == corev1.LabelHostname && labels[cnpgClusterLabel] == "b-csv" &&
			labels[cnpgInstanceRoleLabel] == cnpgPrimaryRole
	}
	apart := placementAffinity(v1alpha1.PlacementApart, "b-csv")
	if preferred := apart.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(preferred) != 1 ||
		!primaryOf(preferred[0].PodAffinityTerm) || apart.PodAffinity != nil ||
		apart.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("Apart: %+v", apart)
	}
	if defaulted := placementAffinity("", "b-csv"); defaulted.PodAntiAffinity == nil {
		t.Errorf("no placement: %+v, want Apart's", defaulted)
	}
	same := placementAffinity(v1alpha1.PlacementSameNode, "b-csv")
	if required := same.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution; len(required) != 1 ||
		!primaryOf(required[0]) || same.PodAntiAffinity != nil {
		t.Errorf("SameNode: %+v", same)
	}
	if anywhere := placementAffinity(v1alpha1.PlacementAnywhere, "b-csv"); anywhere != nil {
		t.Errorf("Anywhere: %+v, want no affinity", anywhere)
	}
}

// TestBuildJobPullSecrets: the run's pod pulls the logbench image of its init container
// and the PostgreSQL image of the agent with the operator's pull secrets, and names none
// when the operator has none.
func TestBuildJobPullSecrets(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bench"}}
	run := plannedRun{Destination: v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}, Clients: 1, Repeat: 1}
	for _, secrets := range [][]corev1.LocalObjectReference{nil, {{Name: "registry"}, {Name: "mirror"}}} {
		job, err := buildJob(benchmark, run, jobInput{
			ClusterName: "bench-csv", ClusterImage: "registry.example/postgresql:18",
			InstallerImage: "registry.example/logbench:1.2.3", PullSecrets: secrets,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := job.Spec.Template.Spec.ImagePullSecrets; !slices.Equal(got, secrets) {
			t.Errorf("the run's pod pulls with %v, want %v", got, secrets)
		}
	}
}
