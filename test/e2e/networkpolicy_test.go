//go:build e2e

package e2e

import (
	"context"
	"fmt"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers"
	"github.com/logbench/logbench/internal/meter"
)

// expectClosedPorts checks the NetworkPolicy of each of benchmark's clusters against the
// pods that ran: it selects the cluster's instance pods, admits to the meter's port (and
// a shipper's metrics port) only the pods of the destination's run Jobs, and leaves
// PostgreSQL's port open. What the CNI does with it is not checked: the local cluster
// enforces no NetworkPolicy, so a refused connection cannot be shown there.
func expectClosedPorts(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	for _, destination := range benchmark.Status.Destinations {
		what := "the NetworkPolicy of cluster " + destination.ClusterName
		policy := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmark.Namespace, Name: destination.ClusterName + "-logbench"},
			policy)).To(Succeed(), what)
		Expect(policy.OwnerReferences).To(ContainElement(HaveField("UID", benchmark.UID)), what)
		Expect(policy.Spec.Ingress).To(HaveLen(2), what)
		open, closed := policy.Spec.Ingress[0], policy.Spec.Ingress[1]
		Expect(open.From).To(BeEmpty(), what)
		Expect(open.Ports).To(ContainElement(HaveField("Port.IntVal", int32(5432))), what)
		Expect(closed.Ports).To(ContainElement(HaveField("Port.IntVal", int32(meter.Port))), what)
		Expect(closed.Ports).NotTo(ContainElement(HaveField("Port.IntVal", int32(5432))), what)

		selected, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		Expect(closed.From).To(HaveLen(1), what)
		admitted, err := metav1.LabelSelectorAsSelector(closed.From[0].PodSelector)
		Expect(err).NotTo(HaveOccurred())

		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmark.Namespace))).To(Succeed())
		var instances, runs int
		for _, pod := range pods.Items {
			podLabels := labels.Set(pod.Labels)
			isInstance := pod.Labels[cnpgClusterLabel] == destination.ClusterName
			isRun := pod.Labels[controllers.LabelBenchmark] == benchmark.Name &&
				pod.Labels[controllers.LabelDestination] == destination.Name && pod.Labels["batch.kubernetes.io/job-name"] != ""
			Expect(selected.Matches(podLabels)).To(Equal(isInstance), "%s selects pod %s", what, pod.Name)
			Expect(admitted.Matches(podLabels)).To(Equal(isRun), "%s admits pod %s", what, pod.Name)
			if isInstance {
				instances++
			}
			if isRun {
				runs++
			}
		}
		Expect(instances).To(BeNumerically(">", 0), fmt.Sprintf("%s: no instance pod to check", what))
		Expect(runs).To(BeNumerically(">", 0), fmt.Sprintf("%s: no run pod to check", what))
	}
}
