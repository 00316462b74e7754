package cloudnativepg

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObserveReadiness(t *testing.T) {
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
		want   Readiness
	}{
		{"healthy", map[string]any{"phase": PhaseHealthy, "readyInstances": int64(2), "image": "pg:17"},
			Readiness{Ready: true, Image: "pg:17", NotReadySince: created}},
		{"one instance missing", map[string]any{"phase": PhaseHealthy, "readyInstances": int64(1), "image": "pg:17"},
			Readiness{Image: "pg:17", NotReadySince: created}},
		{"still creating", map[string]any{"phase": "Setting up primary", "readyInstances": int64(2), "image": "pg:17"},
			Readiness{Image: "pg:17", NotReadySince: created}},
		{
			"failing over",
			map[string]any{"phase": "Failing over", "readyInstances": int64(1), "image": "pg:17", "conditions": notReady},
			Readiness{Image: "pg:17", NotReadySince: failedOver},
		},
		{"no image reported", map[string]any{"phase": PhaseHealthy, "readyInstances": int64(2)},
			Readiness{NotReadySince: created}},
		{"no status", nil, Readiness{NotReadySince: created}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ObserveReadiness(cluster(tt.status))
			if got.Ready != tt.want.Ready || got.Image != tt.want.Image || !got.NotReadySince.Equal(tt.want.NotReadySince) {
				t.Errorf("ObserveReadiness = %+v, want %+v", got, tt.want)
			}
		})
	}
}
