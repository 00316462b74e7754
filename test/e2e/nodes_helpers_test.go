//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeTrouble says which of the cluster's nodes cannot run the benchmarks' pods and
// why: not Ready, under disk, memory or PID pressure (the kubelet then evicts pods), or
// tainted against new pods. A spec waiting on a benchmark names it in its failure, since
// a node in trouble fails the specs running beside it in ways that point elsewhere.
// It is empty when every node is well, or when the nodes cannot be listed.
func nodeTrouble(ctx context.Context) string {
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	var troubles []string
	for _, node := range nodes.Items {
		var reasons []string
		for _, condition := range node.Status.Conditions {
			wrong := condition.Status == corev1.ConditionTrue
			if condition.Type == corev1.NodeReady {
				wrong = condition.Status != corev1.ConditionTrue
			}
			if wrong {
				reasons = append(reasons, fmt.Sprintf("%s=%s (%s)", condition.Type, condition.Status, condition.Message))
			}
		}
		for _, taint := range blockingTaints(node) {
			reasons = append(reasons, "taint "+taint.ToString())
		}
		if node.Spec.Unschedulable {
			reasons = append(reasons, "cordoned")
		}
		if len(reasons) > 0 {
			troubles = append(troubles, node.Name+": "+strings.Join(reasons, ", "))
		}
	}
	if len(troubles) == 0 {
		return ""
	}
	return "nodes in trouble: " + strings.Join(troubles, "; ")
}

// blockingTaints are the taints of node that keep new pods off it.
func blockingTaints(node corev1.Node) []corev1.Taint {
	var blocking []corev1.Taint
	for _, taint := range node.Spec.Taints {
		if taint.Effect == corev1.TaintEffectNoSchedule || taint.Effect == corev1.TaintEffectNoExecute {
			blocking = append(blocking, taint)
		}
	}
	return blocking
}
