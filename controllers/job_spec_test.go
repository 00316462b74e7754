package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

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
