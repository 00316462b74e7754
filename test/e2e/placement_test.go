//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/testenv"
)

// placementDestination is the one destination of the placement specs' benchmarks.
const placementDestination = "csvlog"

var _ = Describe("placement", Label("placement"), func() {
	It("runs the client on another node than the primary with Apart and on the primary's with SameNode",
		func(ctx SpecContext) {
			requireSchedulableNodes(ctx, 2)
			apart := placementBenchmark("apart", benchv1alpha1.PlacementApart)
			sameNode := placementBenchmark("same-node", benchv1alpha1.PlacementSameNode)
			for _, benchmark := range []*benchv1alpha1.LoggingBenchmark{apart, sameNode} {
				createForThisSpec(ctx, benchmark)
				DeferCleanup(func() {
					if CurrentSpecReport().Failed() {
						printDiagnostics(benchmark)
					}
				})
			}
			waitForPhase(ctx, apart, benchv1alpha1.PhaseSucceeded)
			waitForPhase(ctx, sameNode, benchv1alpha1.PhaseSucceeded)

			By("finding every run of Apart on another node than its primary's")
			expectRunNodes(ctx, apart, false)
			By("finding every run of SameNode on its primary's node")
			expectRunNodes(ctx, sameNode, true)
		})

	It("fails a run whose runner's pod no node takes within its podStartTimeout, with the scheduler's reason",
		func(ctx SpecContext) {
			// On the primary's node, and asking for more cores than any node has.
			unschedulable := placementBenchmark("no-node", benchv1alpha1.PlacementSameNode)
			unschedulable.Spec.Workload.Resources.Requests = corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1000"),
			}
			unschedulable.Spec.PodStartTimeout = &metav1.Duration{Duration: shortPodStartTimeout}
			unschedulable.Spec.Cleanup = benchv1alpha1.CleanupAlways
			createForThisSpec(ctx, unschedulable)
			DeferCleanup(func() {
				if CurrentSpecReport().Failed() {
					printDiagnostics(unschedulable)
				}
			})

			By("seeing the runner's pod the scheduler found no node for")
			var pod corev1.Pod
			Eventually(func(g Gomega) {
				pods := &corev1.PodList{}
				g.Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmarkNamespace),
					client.MatchingLabels(builders.BenchmarkRunnerLabels(unschedulable.Name)))).To(Succeed())
				g.Expect(pods.Items).NotTo(BeEmpty())
				pod = pods.Items[0]
			}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(2 * time.Second).Should(Succeed())

			By("failing the run within podStartTimeout of the pod's creation, with the scheduler's message")
			deadline := time.Until(pod.CreationTimestamp.Add(shortPodStartTimeout + 30*time.Second))
			var failure string
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(unschedulable), unschedulable)).To(Succeed())
				failure = runError(ctx, unschedulable)
				g.Expect(failure).NotTo(BeEmpty())
			}).WithContext(ctx).WithTimeout(deadline).WithPolling(2 * time.Second).Should(Succeed())
			_, _ = fmt.Fprintf(GinkgoWriter, "the run failed %s after its pod's creation: %s\n",
				time.Since(pod.CreationTimestamp.Time).Round(time.Second), failure)
			Expect(failure).To(ContainSubstring("could not start: not scheduled: 0/"))
			Expect(failure).To(ContainSubstring("Insufficient cpu"))
		})
})

// placementBenchmark is a benchmark of one run, on one file destination, with the
// client placed against the primary as placement says.
func placementBenchmark(name string, placement benchv1alpha1.Placement) *benchv1alpha1.LoggingBenchmark {
	benchmark := newBenchmark(name)
	benchmark.Spec.Baseline.Enabled = false
	benchmark.Spec.Destinations = []benchv1alpha1.Destination{
		{Name: placementDestination, Type: benchv1alpha1.DestinationCSVLog},
	}
	benchmark.Spec.Workload.Clients = []int32{1}
	benchmark.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
	benchmark.Spec.Workload.Placement = placement
	return benchmark
}

// requireSchedulableNodes fails the spec in CI, and skips it elsewhere, saying why, on a
// cluster with fewer than count nodes that take pods: on one node, Apart falls back to
// the primary's. make e2e-up brings CI's cluster up with two.
func requireSchedulableNodes(ctx context.Context, count int) {
	if schedulable := schedulableNodes(ctx); schedulable < count {
		testenv.Missing(GinkgoTB(), "the spec needs %d schedulable nodes, the cluster has %d (LOCAL_CLUSTER_NODES=%d make local-cluster-up); %s",
			count, schedulable, count, nodeTrouble(ctx))
	}
}

// schedulableNodes counts the cluster's nodes that take pods.
func schedulableNodes(ctx context.Context) int {
	return len(schedulableNodeNames(ctx))
}

// schedulableNodeNames are the names of the cluster's nodes that take pods.
func schedulableNodeNames(ctx context.Context) []string {
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var schedulable []string
	for _, node := range nodes.Items {
		if !node.Spec.Unschedulable && len(blockingTaints(node)) == 0 {
			schedulable = append(schedulable, node.Name)
		}
	}
	return schedulable
}

// expectRunNodes checks that every run's client, its runner's pod, ran on the node of its
// cluster's primary, or on another one, as the repeat's result says.
func expectRunNodes(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark, sameNode bool) {
	primaries := &corev1.PodList{}
	Expect(k8sClient.List(ctx, primaries, client.InNamespace(benchmarkNamespace), client.MatchingLabels(
		cloudnativepg.PrimaryPodLabels(builders.ClusterName(benchmark.Name, placementDestination))))).To(Succeed())
	Expect(primaries.Items).To(HaveLen(1), "the primary of %s", benchmark.Name)
	serverNode := primaries.Items[0].Spec.NodeName
	relation := Equal(serverNode)
	if !sameNode {
		relation = Not(relation)
	}
	rows := rowsWithRuns(ctx, benchmark)
	Expect(rows).NotTo(BeEmpty(), "the runs of %s", benchmark.Name)
	for _, row := range rows {
		for _, repeat := range row.Repeats {
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: run %s/%d/%d on %s, primary %s on %s\n",
				benchmark.Spec.Workload.Placement, row.Destination, row.Clients, repeat.Repeat, repeat.ClientNode,
				primaries.Items[0].Name, serverNode)
			Expect(repeat.ServerNode).To(Equal(serverNode), "%s: the primary's node", row.Destination)
			Expect(repeat.ClientNode).NotTo(BeEmpty(), "%s: the client's node", row.Destination)
			Expect(repeat.ClientNode).To(relation, "%s: the client's node", row.Destination)
		}
	}
}

// runError is the error of the benchmark's first failed run, "" when none failed.
func runError(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) string {
	for _, row := range rowsWithRuns(ctx, benchmark) {
		for _, repeat := range row.Repeats {
			if repeat.Error != "" {
				return repeat.Error
			}
		}
	}
	return ""
}
