package cloudnativepg

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PhaseHealthy is CloudNativePG's status.phase of a cluster doing nothing.
const PhaseHealthy = "Cluster in healthy state"

// HopelessPhases are CloudNativePG's phases (status.phase, api/v1 cluster_types.go) of a
// cluster that cannot become ready without someone changing it: waiting out the ready
// timeout would only hide the reason.
var HopelessPhases = []string{
	"Cluster is unrecoverable and needs manual intervention",                            // PhaseUnrecoverable
	"Cluster cannot proceed to reconciliation due to an unknown plugin being required",  // PhaseUnknownPlugin
	"Cluster has incomplete or invalid image catalog",                                   // PhaseImageCatalogError
	"Cluster cannot execute instance online upgrade due to missing architecture binary", // PhaseArchitectureBinaryMissing
	"Invalid cluster definition",                                                        // PhaseDefinitionInvalid
}

// Readiness is what the reconciler needs from a Cluster's status.
type Readiness struct {
	Ready bool
	// Image runs PostgreSQL in the cluster; the agent runs in it too, for its pgbench.
	Image string
	// NotReadySince is when CloudNativePG last reported the cluster not ready, or when it
	// was created: a cluster that was ready and fails over gets a full timeout again.
	NotReadySince time.Time
}

// ObserveReadiness reads a Cluster's status: ready once CloudNativePG reports it healthy
// with every instance ready and the image it runs.
func ObserveReadiness(cluster *unstructured.Unstructured) Readiness {
	instances, _, _ := unstructured.NestedInt64(cluster.Object, "spec", "instances")
	readyInstances, _, _ := unstructured.NestedInt64(cluster.Object, "status", "readyInstances")
	phase, _, _ := unstructured.NestedString(cluster.Object, "status", "phase")
	image, _, _ := unstructured.NestedString(cluster.Object, "status", "image")
	if image == "" {
		image, _, _ = unstructured.NestedString(cluster.Object, "spec", "imageName")
	}
	return Readiness{
		Ready:         phase == PhaseHealthy && instances > 0 && readyInstances == instances && image != "",
		Image:         image,
		NotReadySince: notReadySince(cluster),
	}
}

// notReadySince reads the last transition of CloudNativePG's Ready condition to False.
func notReadySince(cluster *unstructured.Unstructured) time.Time {
	conditions, _, _ := unstructured.NestedSlice(cluster.Object, "status", "conditions")
	for _, item := range conditions {
		condition, _ := item.(map[string]any)
		if condition["type"] != "Ready" || condition["status"] != string(metav1.ConditionFalse) {
			continue
		}
		transition, _ := condition["lastTransitionTime"].(string)
		if since, err := time.Parse(time.RFC3339, transition); err == nil {
			return since
		}
	}
	return cluster.GetCreationTimestamp().Time
}
