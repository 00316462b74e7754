package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// A destination whose cluster is not ready says why (cluster_diagnosis.go), from
// CloudNativePG's phase and the cluster's pods, volume claims, events and crashed
// containers' logs, read past the cache: they are CloudNativePG's objects, not logbench's.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get

// notReadyRecheck is how often a pass looks again at a cluster that is not ready: the
// kubelet's and the scheduler's reports change pods that no watch of logbench's sees.
const notReadyRecheck = 15 * time.Second

// Bounds of the log read of a crashed container: PostgreSQL's last words are at its end.
const (
	crashLogLines = 40
	crashLogBytes = 32 << 10
)

// podLogReader reads the end of a container's log, or of its previous instance's.
type podLogReader interface {
	TailLog(ctx context.Context, namespace string, container containerRef) (string, error)
}

// kubeletLogs reads logs through the API server, as kubectl logs does.
type kubeletLogs struct {
	pods corev1client.PodsGetter
}

func (k kubeletLogs) TailLog(ctx context.Context, namespace string, container containerRef) (string, error) {
	lines, limit := int64(crashLogLines), int64(crashLogBytes)
	tail, err := k.pods.Pods(namespace).GetLogs(container.Pod, &corev1.PodLogOptions{
		Container: container.Container, Previous: container.Previous, TailLines: &lines, LimitBytes: &limit,
	}).DoRaw(ctx)
	return string(tail), err
}

// diagnoseCluster reads what tells why cluster is not ready and says why, giving its
// pods podStartTimeout to start.
func (r *LoggingBenchmarkReconciler) diagnoseCluster(
	ctx context.Context, cluster *unstructured.Unstructured, podStartTimeout time.Duration,
) (clusterDiagnosis, error) {
	evidence := clusterEvidence{
		Cluster: cluster, Logs: map[containerRef]string{}, Now: time.Now(), PodStartTimeout: podStartTimeout,
	}
	ofCluster := []client.ListOption{
		client.InNamespace(cluster.GetNamespace()), client.MatchingLabels{cloudnativepg.ClusterLabel: cluster.GetName()},
	}
	var pods corev1.PodList
	if err := r.apiReader().List(ctx, &pods, ofCluster...); err != nil {
		return clusterDiagnosis{}, fmt.Errorf("listing the pods of cluster %s: %w", cluster.GetName(), err)
	}
	evidence.Pods = pods.Items
	var claims corev1.PersistentVolumeClaimList
	if err := r.apiReader().List(ctx, &claims, ofCluster...); err != nil {
		return clusterDiagnosis{}, fmt.Errorf("listing the volume claims of cluster %s: %w", cluster.GetName(), err)
	}
	evidence.Claims = claims.Items
	for _, object := range eventsWanted(evidence.Pods, evidence.Claims) {
		var events corev1.EventList
		if err := r.apiReader().List(ctx, &events, client.InNamespace(cluster.GetNamespace()),
			client.MatchingFieldsSelector{Selector: fields.SelectorFromSet(fields.Set{
				"involvedObject.kind": object.Kind, "involvedObject.name": object.Name,
			})}); err != nil {
			return clusterDiagnosis{}, fmt.Errorf("listing the events of %s %s: %w", object.Kind, object.Name, err)
		}
		evidence.Events = append(evidence.Events, events.Items...)
	}
	if r.podLogs != nil {
		for _, pod := range podsToExamine(evidence.Pods) {
			for _, container := range crashedContainers(pod) {
				tail, err := r.podLogs.TailLog(ctx, cluster.GetNamespace(), container)
				if err != nil {
					// The log is a better reason, not the only one: the status still tells.
					log.FromContext(ctx).V(1).Info("cannot read a crashed container's log",
						"pod", container.Pod, "container", container.Container, "error", err.Error())
					continue
				}
				evidence.Logs[container] = tail
			}
		}
	}
	return diagnoseCluster(evidence), nil
}

// apiReader reads past the cache: the APIReader, or the client of a reconciler made
// without a manager, which reads from the API server.
func (r *LoggingBenchmarkReconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
