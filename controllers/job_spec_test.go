package controllers

import (
	"testing"
	"time"

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

// TestJobDeadlineCountsTheWarmup: the Job's deadline covers the warmup, the run and the
// drain, so that neither a long warmup kills a run nor a stuck one outlives its bound.
func TestJobDeadlineCountsTheWarmup(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{Spec: v1alpha1.LoggingBenchmarkSpec{
		Workload:     v1alpha1.WorkloadSpec{Duration: metav1.Duration{Duration: time.Minute}, Warmup: metav1.Duration{Duration: 10 * time.Minute}},
		DrainTimeout: metav1.Duration{Duration: 30 * time.Second},
	}}
	run := plannedRun{Destination: v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}, Clients: 1, Repeat: 1}
	job, err := buildJob(benchmark, run, jobInput{ClusterName: "b-csv", ClusterImage: "pg", InstallerImage: "logbench"})
	if err != nil {
		t.Fatal(err)
	}
	want := int64((10*time.Minute + time.Minute + 30*time.Second + jobSetupMargin).Seconds())
	if got := *job.Spec.ActiveDeadlineSeconds; got != want {
		t.Errorf("deadline %d s, want %d s", got, want)
	}
}
