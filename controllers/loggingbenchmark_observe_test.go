package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObserveCluster(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	failedOver := created.Add(time.Hour)
	cluster := func(clusterStatus map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"creationTimestamp": created.Format(time.RFC3339)},
			"spec":     map[string]any{"instances": int64(2)},
			"status":   clusterStatus,
		}}
	}
	notReady := []any{
		map[string]any{"type": "Other", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		map[string]any{"type": "Ready", "status": "False", "lastTransitionTime": failedOver.Format(time.RFC3339)},
	}
	tests := []struct {
		name   string
		status map[string]any
		want   clusterReadiness
	}{
		{"healthy", map[string]any{"phase": clusterPhaseHealthy, "readyInstances": int64(2), "image": "pg:17"},
			clusterReadiness{Ready: true, Image: "pg:17", NotReadySince: created}},
		{"one instance missing", map[string]any{"phase": clusterPhaseHealthy, "readyInstances": int64(1), "image": "pg:17"},
			clusterReadiness{Image: "pg:17", NotReadySince: created}},
		{"still creating", map[string]any{"phase": "Setting up primary", "readyInstances": int64(2), "image": "pg:17"},
			clusterReadiness{Image: "pg:17", NotReadySince: created}},
		{
			"failing over",
			map[string]any{"phase": "Failing over", "readyInstances": int64(1), "image": "pg:17", "conditions": notReady},
			clusterReadiness{Image: "pg:17", NotReadySince: failedOver},
		},
		{"no image reported", map[string]any{"phase": clusterPhaseHealthy, "readyInstances": int64(2)},
			clusterReadiness{NotReadySince: created}},
		{"no status", nil, clusterReadiness{NotReadySince: created}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := observeCluster(cluster(tt.status))
			if got.Ready != tt.want.Ready || got.Image != tt.want.Image || !got.NotReadySince.Equal(tt.want.NotReadySince) {
				t.Errorf("observeCluster = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestUnstartablePod: a run whose pod waits for a Secret or an image fails once the
// kubelet has retried for podStartGrace, at once when no retry can help, with the
// kubelet's reason; a pod pending for other reasons, or running, does not.
func TestUnstartablePod(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(phase corev1.PodPhase, reason string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-csv-c1-r1-x", CreationTimestamp: metav1.NewTime(created)}}
		pod.Status.Phase = phase
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: agentContainer, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: `secret "loki" not found`},
		}}}
		return pod
	}
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
			"", podStartGrace - 30*time.Second},
		{"missing Secret, past the grace", pod(corev1.PodPending, "CreateContainerConfigError"), podStartGrace,
			`the run's pod b-csv-c1-r1-x could not start: container agent: CreateContainerConfigError: secret "loki" not found`, 0},
		{"image not pulled", pod(corev1.PodPending, "ImagePullBackOff"), 5 * time.Minute,
			"container agent: ImagePullBackOff", 0},
		{"image name invalid, within the grace", pod(corev1.PodPending, "InvalidImageName"), time.Second,
			"container agent: InvalidImageName", 0},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			reason, recheck := unstartablePod(test.pod, created.Add(test.after))
			if (test.wantReason == "") != (reason == "") || !strings.Contains(reason, test.wantReason) ||
				recheck != test.wantRecheck {
				t.Errorf("reason %q, recheck %s; want %q, %s", reason, recheck, test.wantReason, test.wantRecheck)
			}
		})
	}
}
