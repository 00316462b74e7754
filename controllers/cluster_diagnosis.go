package controllers

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// serverRefusals is how many times a cluster's PostgreSQL must have refused to start
// before its destination fails: once may be a node's trouble, the same refusal again is
// the configuration's.
const serverRefusals = 2

// podKind is the kind of the involved object of the events read about pods.
const podKind = "Pod"

// clusterEvidence is what tells why a CloudNativePG cluster is not ready.
type clusterEvidence struct {
	Cluster *unstructured.Unstructured
	// Pods are the cluster's: its instances and the pods of its Jobs (initdb and the
	// like), which CloudNativePG labels cnpg.io/cluster.
	Pods []corev1.Pod
	// Claims are the cluster's PersistentVolumeClaims.
	Claims []corev1.PersistentVolumeClaim
	// Events are those of the pending Pods and Claims (eventsWanted).
	Events []corev1.Event
	// Logs hold the end of the logs of the crashed containers (crashedContainers).
	Logs map[containerRef]string
	// PodStartTimeout is the benchmark's spec.podStartTimeout (unstartableFor).
	PodStartTimeout time.Duration
	// Now is when the evidence was read.
	Now time.Time
}

// clusterDiagnosis says why a cluster is not ready.
type clusterDiagnosis struct {
	// Detail is the reason, without the cluster's name; never empty.
	Detail string
	// Final: the cluster cannot become ready as it is: its destination fails at once.
	Final bool
	// Trouble: something is wrong, rather than CloudNativePG still at work.
	Trouble bool
	// Recheck is when the diagnosis becomes final unless the cluster changes (a container
	// that cannot start reaches the pod start timeout), 0 when it does not by itself.
	Recheck time.Duration
}

// diagnoseCluster says why a cluster that is not ready is not, from most to least
// telling: a phase CloudNativePG gives up in, a pod whose containers cannot run (a
// missing image, a server that refuses to start, no node for it), a pending pod's or
// volume claim's last event, then CloudNativePG's phase and its reason.
func diagnoseCluster(evidence clusterEvidence) clusterDiagnosis {
	phase, _, _ := unstructured.NestedString(evidence.Cluster.Object, "status", "phase")
	phaseReason, _, _ := unstructured.NestedString(evidence.Cluster.Object, "status", "phaseReason")
	inPhase := fmt.Sprintf("CloudNativePG phase %q", phase)
	if phaseReason != "" {
		inPhase += ": " + phaseReason
	}
	pod, podFinal, recheck := worstPod(evidence.Pods, evidence.Logs, evidence.Now, evidence.PodStartTimeout)
	if slices.Contains(cloudnativepg.HopelessPhases, phase) {
		if pod != "" {
			inPhase += "; " + pod
		}
		return clusterDiagnosis{Detail: inPhase, Final: true, Trouble: true}
	}
	if pod != "" {
		return clusterDiagnosis{Detail: pod, Final: podFinal, Trouble: true, Recheck: recheck}
	}
	if pending := pendingObject(evidence); pending != "" {
		return clusterDiagnosis{Detail: pending, Trouble: true}
	}
	if phase == "" {
		return clusterDiagnosis{Detail: "CloudNativePG has not reported on it yet"}
	}
	return clusterDiagnosis{Detail: inPhase}
}

// worstPod describes the pod in the worst state, newest first among equals, and whether
// that state is final: an image that does not exist, a container that could not start
// for startTimeout, as for a run's pod (unstartablePod), or a server that refused to
// start serverRefusals times (the pods of a Job each fail once: its failed pods count).
// recheck is when a container that cannot start reaches startTimeout.
func worstPod(pods []corev1.Pod, logs map[containerRef]string, now time.Time, startTimeout time.Duration) (
	message string, final bool, recheck time.Duration,
) {
	failedOfJob := map[string]int32{}
	for _, pod := range pods {
		if job := pod.Labels[batchv1.JobNameLabel]; job != "" && pod.Status.Phase == corev1.PodFailed {
			failedOfJob[job]++
		}
	}
	bestRank := 0
	for _, pod := range podsToExamine(pods) {
		trouble := diagnosePod(pod, logs)
		if trouble.Message == "" {
			continue
		}
		if job := pod.Labels[batchv1.JobNameLabel]; job != "" && trouble.Crashed {
			trouble.Failures = max(trouble.Failures, failedOfJob[job])
		}
		giveUp, graceLeft := unstartableFor(trouble, pod.CreationTimestamp.Time, now, startTimeout)
		if graceLeft > 0 && (recheck == 0 || graceLeft < recheck) {
			recheck = graceLeft
		}
		rank := 1
		switch {
		case giveUp || trouble.ServerRefused && trouble.Failures >= serverRefusals:
			rank = 4
		case trouble.Unstartable || trouble.Crashed:
			rank = 3
		case trouble.Unschedulable:
			rank = 2
		}
		if rank <= bestRank {
			continue
		}
		bestRank, final = rank, rank == 4
		message = fmt.Sprintf("pod %s: %s", pod.Name, trouble.Message)
		if trouble.Failures > 1 {
			message = fmt.Sprintf("pod %s (%d failures): %s", pod.Name, trouble.Failures, trouble.Message)
		}
	}
	return message, final, recheck
}

// podsToExamine are the pods that tell how a cluster is doing, newest first: its
// instances, and the newest pod of each of its Jobs (an initdb pod that failed before
// one that succeeded tells nothing any more).
func podsToExamine(pods []corev1.Pod) []*corev1.Pod {
	newestFirst := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		newestFirst = append(newestFirst, &pods[i])
	}
	slices.SortStableFunc(newestFirst, func(a, b *corev1.Pod) int {
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	})
	seenJobs := map[string]bool{}
	return slices.DeleteFunc(newestFirst, func(pod *corev1.Pod) bool {
		job := pod.Labels[batchv1.JobNameLabel]
		if job == "" {
			return false
		}
		seen := seenJobs[job]
		seenJobs[job] = true
		return seen
	})
}

// eventsWanted are the objects of the evidence whose events tell more than their status:
// pods and volume claims that are pending for no reason their status gives.
func eventsWanted(pods []corev1.Pod, claims []corev1.PersistentVolumeClaim) []corev1.ObjectReference {
	var wanted []corev1.ObjectReference
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodPending && pods[i].DeletionTimestamp == nil &&
			diagnosePod(&pods[i], nil).Message == "" {
			wanted = append(wanted, corev1.ObjectReference{Kind: podKind, Name: pods[i].Name, UID: pods[i].UID})
		}
	}
	for _, claim := range claims {
		if claim.Status.Phase == corev1.ClaimPending && claim.DeletionTimestamp == nil {
			wanted = append(wanted, corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", Name: claim.Name, UID: claim.UID,
			})
		}
	}
	return wanted
}

// pendingObject describes the first pending pod or volume claim with its last event, a
// Warning rather than a Normal one.
func pendingObject(evidence clusterEvidence) string {
	for _, object := range eventsWanted(evidence.Pods, evidence.Claims) {
		what := "pod " + object.Name
		if object.Kind != podKind {
			what = object.Kind + " " + object.Name
		}
		if event := lastEvent(evidence.Events, object); event != nil {
			return fmt.Sprintf("%s is pending: %s: %s", what, event.Reason, event.Message)
		}
		if object.Kind != podKind {
			return what + " is pending"
		}
	}
	return ""
}

// lastEvent is the object's last Warning event, else its last event, nil when it has
// none.
func lastEvent(events []corev1.Event, object corev1.ObjectReference) *corev1.Event {
	var last *corev1.Event
	for i := range events {
		event := &events[i]
		if event.InvolvedObject.Kind != object.Kind || event.InvolvedObject.Name != object.Name ||
			object.UID != "" && event.InvolvedObject.UID != "" && event.InvolvedObject.UID != object.UID {
			continue
		}
		if last == nil || eventOrder(event, last) > 0 {
			last = event
		}
	}
	return last
}

// eventOrder ranks Warning events above Normal ones, then later ones above earlier ones.
func eventOrder(a, b *corev1.Event) int {
	warning := func(event *corev1.Event) int {
		if event.Type == corev1.EventTypeWarning {
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(warning(a), warning(b)), eventTime(a).Compare(eventTime(b)))
}

func eventTime(event *corev1.Event) time.Time {
	switch {
	case !event.EventTime.IsZero():
		return event.EventTime.Time
	case !event.LastTimestamp.IsZero():
		return event.LastTimestamp.Time
	}
	return event.CreationTimestamp.Time
}
