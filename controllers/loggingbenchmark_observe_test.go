package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
)

// TestUnstartablePod: a run whose pod waits for a Secret, an image or a node fails once
// the kubelet or the scheduler has retried for spec.podStartTimeout (2m unless set), at
// once when no retry can help, with their reason; a pod pending for other reasons, or
// running, does not.
func TestUnstartablePod(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(phase corev1.PodPhase, reason string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-c1-r1-x", CreationTimestamp: metav1.NewTime(created)}}
		pod.Status.Phase = phase
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: builders.AgentContainer, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: `secret "loki" not found`},
		}}}
		return pod
	}
	unschedulable := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-c1-r1-x", CreationTimestamp: metav1.NewTime(created)}}
	unschedulable.Status.Phase = corev1.PodPending
	unschedulable.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/2 nodes are available: 1 node(s) didn't match pod affinity rules",
	}}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		after       time.Duration
		wantReason  string
		wantRecheck time.Duration
	}{
		{"no pod yet", nil, time.Hour, "", pendingRecheck},
		{"running", pod(corev1.PodRunning, ""), time.Hour, "", 0},
		{"pulling", pod(corev1.PodPending, "ContainerCreating"), time.Hour, "", pendingRecheck},
		{"missing Secret, within the grace", pod(corev1.PodPending, "CreateContainerConfigError"), 30 * time.Second,
			"", v1alpha1.DefaultPodStartTimeout - 30*time.Second},
		{"missing Secret, past the grace", pod(corev1.PodPending, "CreateContainerConfigError"), v1alpha1.DefaultPodStartTimeout,
			`the run's pod b-csv-c1-r1-x could not start: container agent: CreateContainerConfigError: secret "loki" not found`, 0},
		{"image not pulled", pod(corev1.PodPending, "ImagePullBackOff"), 5 * time.Minute,
			"container agent: ImagePullBackOff", 0},
		{"no node, within the grace", unschedulable, time.Minute, "", v1alpha1.DefaultPodStartTimeout - time.Minute},
		{"no node, past the grace", unschedulable, v1alpha1.DefaultPodStartTimeout,
			"the run's pod b-csv-c1-r1-x could not start: not scheduled: 0/2 nodes are available: 1 node(s) didn't match pod affinity rules", 0},
		{"image name invalid, within the grace", pod(corev1.PodPending, "InvalidImageName"), time.Second,
			"container agent: InvalidImageName", 0},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			reason, recheck := unstartablePod(test.pod, created.Add(test.after), v1alpha1.DefaultPodStartTimeout)
			if (test.wantReason == "") != (reason == "") || !strings.Contains(reason, test.wantReason) ||
				recheck != test.wantRecheck {
				t.Errorf("reason %q, recheck %s; want %q, %s", reason, recheck, test.wantReason, test.wantRecheck)
			}
		})
	}
	// A shorter spec.podStartTimeout gives up sooner, and a pod whose image does not
	// exist fails at once whatever it says: the rows after the first three, whose pods
	// wait for the timeout or fail at once, at the same share of a timeout of 20s.
	const podStartTimeout = 20 * time.Second
	shorter := v1alpha1.DefaultPodStartTimeout / podStartTimeout
	for _, test := range tests[3:] {
		after := test.after / shorter
		t.Run(test.name+", at the same share of a timeout of 20s", func(t *testing.T) {
			reason, recheck := unstartablePod(test.pod, created.Add(after), podStartTimeout)
			wantRecheck := test.wantRecheck / shorter
			if (test.wantReason == "") != (reason == "") || !strings.Contains(reason, test.wantReason) ||
				recheck != wantRecheck {
				t.Errorf("reason %q, recheck %s; want %q, %s", reason, recheck, test.wantReason, wantRecheck)
			}
		})
	}
}

// TestCrashingPod: a runner's pod whose container exits with an error is restarted
// runnerFailures times before its run fails with the container's exit and last words,
// unless its last failure came before the run's assignment; a pod that is not ready is
// looked at again, since no watch brings its restarts.
func TestCrashingPod(t *testing.T) {
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	assigned := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// lastFailedAt sets when the pod's last failure ended.
	lastFailedAt := func(at time.Time, pod *corev1.Pod) *corev1.Pod {
		for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
			for i := range statuses {
				statuses[i].LastTerminationState.Terminated.FinishedAt = metav1.NewTime(at)
			}
		}
		return pod
	}
	pod := func(phase corev1.PodPhase, init bool, restarts int32, conditions ...corev1.PodCondition) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-runner-x"}}
		pod.Status.Phase, pod.Status.Conditions = phase, conditions
		status := corev1.ContainerStatus{Name: builders.AgentContainer, RestartCount: restarts}
		if restarts > 0 {
			status.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
			status.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				ExitCode: 1, Message: "starting\nerror: pgbench not found\n",
			}
		}
		if init {
			status.Name = "install-agent"
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{status}
		} else {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{status}
		}
		return pod
	}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		wantReason  string
		wantRecheck time.Duration
	}{
		{"no pod", nil, "", 0},
		{"pending", pod(corev1.PodPending, false, 0), "", 0},
		{"running and ready", pod(corev1.PodRunning, false, 0, ready), "", 0},
		{"running, not ready yet", pod(corev1.PodRunning, false, 0), "", pendingRecheck},
		{"failed twice", pod(corev1.PodRunning, false, runnerFailures-1), "", pendingRecheck},
		{"failed runnerFailures times", pod(corev1.PodRunning, false, runnerFailures),
			"the runner's pod b-csv-runner-x failed 3 times: container agent exited with code 1: error: pgbench not found", 0},
		{"its init container failed twice", pod(corev1.PodPending, true, runnerFailures-1), "", 0},
		{"its init container failed runnerFailures times", pod(corev1.PodPending, true, runnerFailures),
			"the runner's pod b-csv-runner-x failed 3 times: container install-agent exited with code 1: error: pgbench not found", 0},
		{"failed runnerFailures times, the last since the assignment",
			lastFailedAt(assigned.Add(time.Second), pod(corev1.PodRunning, false, runnerFailures)),
			"the runner's pod b-csv-runner-x failed 3 times", 0},
		{"failed runnerFailures times, all before the assignment",
			lastFailedAt(assigned.Add(-time.Second), pod(corev1.PodRunning, false, runnerFailures)), "", pendingRecheck},
		{"its init container failed runnerFailures times, all before the assignment",
			lastFailedAt(assigned.Add(-time.Second), pod(corev1.PodPending, true, runnerFailures)), "", 0},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			reason, recheck := crashingPod(test.pod, assigned)
			if (test.wantReason == "") != (reason == "") || !strings.Contains(reason, test.wantReason) ||
				recheck != test.wantRecheck {
				t.Errorf("reason %q, recheck %s; want %q, %s", reason, recheck, test.wantReason, test.wantRecheck)
			}
		})
	}
}
