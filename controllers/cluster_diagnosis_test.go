package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// cnpgCluster is a Cluster whose status CloudNativePG set to phase and phaseReason.
func cnpgCluster(phase, phaseReason string) *unstructured.Unstructured {
	cluster := cloudnativepg.NewCluster()
	cluster.SetName("b-csv")
	if phase != "" {
		cluster.Object["status"] = map[string]any{"phase": phase, "phaseReason": phaseReason}
	}
	return cluster
}

func pendingClaim(name string) corev1.PersistentVolumeClaim {
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "claim-uid"}}
	claim.Status.Phase = corev1.ClaimPending
	return claim
}

func event(kind, name, eventType, reason, message string, at time.Time) corev1.Event {
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name},
		Type:           eventType, Reason: reason, Message: message, LastTimestamp: metav1.NewTime(at),
	}
}

// created dates a pod.
func created(pod corev1.Pod, at time.Time) corev1.Pod {
	pod.CreationTimestamp = metav1.NewTime(at)
	return pod
}

func TestDiagnoseCluster(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	const (
		settingUp     = "Setting up primary"
		unrecoverable = "Cluster is unrecoverable and needs manual intervention"
		unknownPlugin = "Cluster cannot proceed to reconciliation due to an unknown plugin being required"
		failedJobs    = "Instance creation failed for the following jobs: b-csv-1-initdb. Check the job logs to " +
			"investigate the cause of the failure."
	)
	refusedLogs := map[containerRef]string{
		{Pod: "b-csv-1-initdb-a", Container: "initdb"}:          initdbRefusedLog,
		{Pod: "b-csv-1-initdb-b", Container: "initdb"}:          initdbRefusedLog,
		{Pod: "b-csv-1", Container: "postgres", Previous: true}: initdbRefusedLog,
	}
	succeededInitdb := created(failedJobPod("b-csv-1-initdb-b", 0), start.Add(time.Minute))
	succeededInitdb.Status.Phase = corev1.PodSucceeded
	tests := []struct {
		name     string
		evidence clusterEvidence
		want     clusterDiagnosis
	}{
		{"not reconciled yet", clusterEvidence{Cluster: cnpgCluster("", "")},
			clusterDiagnosis{Detail: "CloudNativePG has not reported on it yet"}},
		{"at work", clusterEvidence{Cluster: cnpgCluster(settingUp, "Creating primary instance b-csv-1")},
			clusterDiagnosis{Detail: `CloudNativePG phase "Setting up primary": Creating primary instance b-csv-1`}},
		{"given up by CloudNativePG", clusterEvidence{Cluster: cnpgCluster(unknownPlugin, "barman-cloud.cloudnative-pg.io")},
			clusterDiagnosis{Detail: `CloudNativePG phase "` + unknownPlugin + `": barman-cloud.cloudnative-pg.io`,
				Final: true, Trouble: true}},
		{"unrecoverable, with the failed initdb's reason", clusterEvidence{
			Cluster: cnpgCluster(unrecoverable, failedJobs),
			Pods:    []corev1.Pod{created(failedJobPod("b-csv-1-initdb-a", 1), start)},
			Logs:    refusedLogs,
		}, clusterDiagnosis{
			Detail: `CloudNativePG phase "` + unrecoverable + `": ` + failedJobs +
				"; pod b-csv-1-initdb-a: container initdb exited with code 1: " + refusedWorkMem,
			Final: true, Trouble: true,
		}},
		{"an instance image that does not exist", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Pods:    []corev1.Pod{waitingPod("b-csv-1", "fluent-bit", "ImagePullBackOff", missingImage)},
		}, clusterDiagnosis{Detail: "pod b-csv-1: container fluent-bit: ImagePullBackOff: " + missingImage,
			Final: true, Trouble: true}},
		{"an image the registry refuses, which a pull secret may heal within the grace", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Pods:    []corev1.Pod{created(waitingPod("b-csv-1-initdb-a", "initdb", "ErrImagePull", deniedImage), start)},
		}, clusterDiagnosis{Detail: "pod b-csv-1-initdb-a: container initdb: ErrImagePull: " + deniedImage,
			Trouble: true, Recheck: v1alpha1.DefaultPodStartTimeout - 30*time.Second}},
		{"an image the registry refuses past the grace", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Pods: []corev1.Pod{created(waitingPod("b-csv-1-initdb-a", "initdb", "ErrImagePull", deniedImage),
				start.Add(-v1alpha1.DefaultPodStartTimeout))},
		}, clusterDiagnosis{Detail: "pod b-csv-1-initdb-a: container initdb: ErrImagePull: " + deniedImage,
			Final: true, Trouble: true}},
		{"initdb refused once: the Job retries", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Pods:    []corev1.Pod{created(failedJobPod("b-csv-1-initdb-a", 1), start)},
			Logs:    refusedLogs,
		}, clusterDiagnosis{Detail: "pod b-csv-1-initdb-a: container initdb exited with code 1: " + refusedWorkMem,
			Trouble: true}},
		{"initdb refused twice", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Pods: []corev1.Pod{
				created(failedJobPod("b-csv-1-initdb-a", 1), start),
				created(failedJobPod("b-csv-1-initdb-b", 1), start.Add(time.Minute)),
			},
			Logs: refusedLogs,
		}, clusterDiagnosis{
			Detail: "pod b-csv-1-initdb-b (2 failures): container initdb exited with code 1: " + refusedWorkMem,
			Final:  true, Trouble: true,
		}},
		{"initdb failed before it succeeded", clusterEvidence{
			Cluster: cnpgCluster(settingUp, "Creating primary instance b-csv-1"),
			Pods: []corev1.Pod{
				created(failedJobPod("b-csv-1-initdb-a", 1), start),
				succeededInitdb,
			},
			Logs: refusedLogs,
		}, clusterDiagnosis{Detail: `CloudNativePG phase "Setting up primary": Creating primary instance b-csv-1`}},
		{"an instance crash-looping on its configuration", clusterEvidence{
			Cluster: cnpgCluster("Waiting for the instances to become active", ""),
			Pods:    []corev1.Pod{crashLoopingPod(1, 3, "Error")},
			Logs:    refusedLogs,
		}, clusterDiagnosis{Detail: "pod b-csv-1 (3 failures): container postgres exited with code 1: " + refusedWorkMem,
			Final: true, Trouble: true}},
		{"an instance killed for its memory", clusterEvidence{
			Cluster: cnpgCluster("Waiting for the instances to become active", ""),
			Pods:    []corev1.Pod{crashLoopingPod(137, 3, "OOMKilled")},
		}, clusterDiagnosis{Detail: "pod b-csv-1 (3 failures): container postgres exited with code 137 (OOMKilled)",
			Trouble: true}},
		{"no node for the instance", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Pods: []corev1.Pod{func() corev1.Pod {
				pod := waitingPod("b-csv-1", "postgres", "", "")
				pod.Status.ContainerStatuses = nil
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient memory."}}
				return pod
			}()},
		}, clusterDiagnosis{Detail: "pod b-csv-1: not scheduled: 0/1 nodes are available: 1 Insufficient memory.",
			Trouble: true}},
		{"a volume claim without a volume", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Claims:  []corev1.PersistentVolumeClaim{pendingClaim("b-csv-1")},
			Events: []corev1.Event{
				event("PersistentVolumeClaim", "b-csv-1", corev1.EventTypeWarning, "ProvisioningFailed",
					`storageclass.storage.k8s.io "fast" not found`, start),
				event("PersistentVolumeClaim", "b-csv-1", corev1.EventTypeNormal, "WaitForFirstConsumer",
					"waiting for first consumer to be created before binding", start.Add(time.Minute)),
				event("PersistentVolumeClaim", "other", corev1.EventTypeWarning, "ProvisioningFailed", "not ours",
					start.Add(time.Hour)),
			},
		}, clusterDiagnosis{Detail: `PersistentVolumeClaim b-csv-1 is pending: ProvisioningFailed: ` +
			`storageclass.storage.k8s.io "fast" not found`, Trouble: true}},
		{"a volume claim without events", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Claims:  []corev1.PersistentVolumeClaim{pendingClaim("b-csv-1")},
		}, clusterDiagnosis{Detail: "PersistentVolumeClaim b-csv-1 is pending", Trouble: true}},
		{"a pod that cannot mount its volume", clusterEvidence{
			Cluster: cnpgCluster(settingUp, ""),
			Pods:    []corev1.Pod{waitingPod("b-csv-1", "postgres", "ContainerCreating", "")},
			Events: []corev1.Event{event("Pod", "b-csv-1", corev1.EventTypeWarning, "FailedMount",
				`MountVolume.SetUp failed for volume "shipper" : configmap "b-csv-shipper" not found`, start)},
		}, clusterDiagnosis{Detail: `pod b-csv-1 is pending: FailedMount: MountVolume.SetUp failed for volume ` +
			`"shipper" : configmap "b-csv-shipper" not found`, Trouble: true}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			test.evidence.Now = start.Add(30 * time.Second)
			test.evidence.PodStartTimeout = v1alpha1.DefaultPodStartTimeout
			if got := diagnoseCluster(test.evidence); got != test.want {
				t.Errorf("diagnoseCluster =\n%+v\nwant\n%+v", got, test.want)
			}
		})
	}
}

// TestEventsWanted: only pending pods whose status says nothing, and pending claims, have
// their events read.
func TestEventsWanted(t *testing.T) {
	pulling := waitingPod("b-csv-1", "postgres", "ImagePullBackOff", deniedImage)
	creating := waitingPod("b-csv-2", "postgres", "ContainerCreating", "")
	bound := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-2"}}
	bound.Status.Phase = corev1.ClaimBound
	got := eventsWanted([]corev1.Pod{pulling, creating}, []corev1.PersistentVolumeClaim{pendingClaim("b-csv-1"), bound})
	want := []corev1.ObjectReference{
		{Kind: "Pod", Name: "b-csv-2"}, {Kind: "PersistentVolumeClaim", Name: "b-csv-1", UID: "claim-uid"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("eventsWanted = %+v, want %+v", got, want)
	}
}
