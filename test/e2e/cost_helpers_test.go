//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/meter"
	shippingpkg "github.com/logbench/logbench/internal/shipping"
)

// kubeletContainer is what the kubelet's stats summary says of a container: the CPU it
// used since it started and the memory it holds now.
type kubeletContainer struct {
	Name string `json:"name"`
	CPU  struct {
		UsageCoreNanoSeconds uint64 `json:"usageCoreNanoSeconds"`
	} `json:"cpu"`
	Memory struct {
		WorkingSetBytes int64 `json:"workingSetBytes"`
	} `json:"memory"`
}

// kubeletContainers reads the stats summary of every node through the API server, by
// pod name and container name.
func kubeletContainers(ctx context.Context, g Gomega, namespace string) map[string]map[string]kubeletContainer {
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	pods := map[string]map[string]kubeletContainer{}
	for _, node := range nodes.Items {
		body, err := clientset.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node.Name, "proxy", "stats", "summary").
			DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred(), "reading the kubelet's stats summary: %s", body)
		var summary struct {
			Pods []struct {
				PodRef struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"podRef"`
				Containers []kubeletContainer `json:"containers"`
			} `json:"pods"`
		}
		g.Expect(json.Unmarshal(body, &summary)).To(Succeed())
		for _, pod := range summary.Pods {
			if pod.PodRef.Namespace != namespace {
				continue
			}
			containers := map[string]kubeletContainer{}
			for _, container := range pod.Containers {
				containers[container.Name] = container
			}
			pods[pod.PodRef.Name] = containers
		}
	}
	return pods
}

// expectPlausibleCost checks the server's and the shipper's cost of every row of a
// finished benchmark whose clusters still run, against the kubelet's figures for their
// containers: what the meter measured over a run fits in the CPU the container used
// since it started, and the meter's memory peak (resident memory, shared pages counted
// once) is at least a tenth of the container's working set and at most the node's
// memory. The working set is read after the runs, when the backends that made the peak
// are gone: no upper bound for a peak (a peak of 169 MiB can meet a working set of 62 MiB
// read afterwards).
// The kubelet's stats lag by up to its housekeeping interval, hence Eventually.
func expectPlausibleCost(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	clusters := map[string]string{}
	for _, destination := range benchmark.Status.Destinations {
		clusters[destination.Name] = destination.ClusterName
	}
	ships := map[string]bool{}
	for _, destination := range benchmark.Spec.Destinations {
		ships[destination.Name] = destination.Ships()
	}
	rows := rowsWithRuns(ctx, benchmark)
	Eventually(func(g Gomega) {
		stats := kubeletContainers(ctx, g, benchmark.Namespace)
		for _, row := range rows {
			what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
			pods, err := clientset.CoreV1().Pods(benchmark.Namespace).List(ctx, metav1.ListOptions{
				LabelSelector: "cnpg.io/cluster=" + clusters[row.Destination],
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(1), "%s: the cluster's instance pod", what)
			containers := stats[pods.Items[0].Name]
			g.Expect(containers).To(HaveKey(meter.ContainerName), "%s: the instance pod has the meter", what)
			node, err := clientset.CoreV1().Nodes().Get(ctx, pods.Items[0].Spec.NodeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			nodeMemory := node.Status.Capacity.Memory().Value()

			g.Expect(row.ServerCPUCores).To(HaveValue(BeNumerically(">", 0.01)), "%s: server CPU", what)
			g.Expect(*row.ServerCPUCores).To(BeNumerically("<=", float64(runtime.NumCPU())*1.2), "%s: server CPU", what)
			g.Expect(row.ServerPeakMemoryBytes).To(HaveValue(BeNumerically(">", 16<<20)), "%s: server memory", what)
			expectWithinContainer(g, what+": server", row.Repeats, func(r benchv1alpha1.RepeatResult) *benchv1alpha1.ProcessUsage {
				return r.Server
			}, containers["postgres"], nodeMemory)

			if !ships[row.Destination] {
				g.Expect(row.ShipperCPUCores).To(BeNil(), "%s: no shipper, no shipper cost", what)
				continue
			}
			g.Expect(row.ShipperCPUCores).To(HaveValue(BeNumerically(">", 0)), "%s: shipper CPU", what)
			g.Expect(row.ShipperCPUMsPer1kRecords).To(HaveValue(BeNumerically(">", 0)), "%s: shipper CPU per record", what)
			g.Expect(row.ShipperPeakMemoryBytes).To(HaveValue(BeNumerically(">", 1<<20)), "%s: shipper memory", what)
			expectWithinContainer(g, what+": shipper", row.Repeats, func(r benchv1alpha1.RepeatResult) *benchv1alpha1.ProcessUsage {
				return r.Shipper
			}, containers[shippingpkg.ContainerName], nodeMemory)
		}
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(5 * time.Second).Should(Succeed())
}

// expectPlausibleReceiverCost checks what the meter of each forwarding Syslog row's
// receiver pod measured against the kubelet's figures for its Fluent Bit, as
// expectPlausibleCost does for the sidecars.
func expectPlausibleReceiverCost(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark, rows []benchv1alpha1.Result) {
	receivers := map[string]corev1.Pod{}
	for _, row := range rows {
		receivers[row.Destination] = onlyPod(ctx, builders.SyslogReceiverLabels(benchmark.Name, row.Destination))
	}
	Eventually(func(g Gomega) {
		stats := kubeletContainers(ctx, g, benchmark.Namespace)
		for _, row := range rows {
			what := rowName(row)
			receiver := receivers[row.Destination]
			node, err := clientset.CoreV1().Nodes().Get(ctx, receiver.Spec.NodeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(row.ReceiverCPUCores).To(HaveValue(BeNumerically(">", 0)), "%s: receiver CPU", what)
			g.Expect(row.ReceiverCPUMsPer1kRecords).To(HaveValue(BeNumerically(">", 0)), "%s: receiver CPU per record", what)
			g.Expect(row.ReceiverPeakMemoryBytes).To(HaveValue(BeNumerically(">", 1<<20)), "%s: receiver memory", what)
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: receiver %.3f cores, %.1f ms per 1,000 records, %d MiB; sidecar %.3f cores\n",
				what, *row.ReceiverCPUCores, *row.ReceiverCPUMsPer1kRecords, *row.ReceiverPeakMemoryBytes>>20,
				*row.ShipperCPUCores)
			expectWithinContainer(g, what+": receiver", row.Repeats, func(r benchv1alpha1.RepeatResult) *benchv1alpha1.ProcessUsage {
				return r.Receiver
			}, stats[receiver.Name][shippingpkg.ContainerName], node.Status.Capacity.Memory().Value())
		}
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(5 * time.Second).Should(Succeed())
}

// expectWithinContainer compares what the meter measured of a container's processes in
// each repeat with the kubelet's figures of the container.
func expectWithinContainer(g Gomega, what string, repeats []benchv1alpha1.RepeatResult,
	usage func(benchv1alpha1.RepeatResult) *benchv1alpha1.ProcessUsage, container kubeletContainer, nodeMemory int64,
) {
	g.Expect(container.Name).NotTo(BeEmpty(), "%s: the kubelet has no figures for the container", what)
	cpuSinceStart := float64(container.CPU.UsageCoreNanoSeconds) / 1e9
	workingSet := container.Memory.WorkingSetBytes
	for _, repeat := range repeats {
		measured := usage(repeat)
		g.Expect(measured).NotTo(BeNil(), "%s: repeat %d measured", what, repeat.Repeat)
		// A repeat's CPU time may be unknown (processes kept exiting while the meter read);
		// the row's figures above need at least one known.
		if cpu := measured.CPUSeconds; cpu != nil {
			g.Expect(*cpu).To(BeNumerically("<=", cpuSinceStart*1.05+0.1),
				"%s: repeat %d used more CPU than the container since it started (%.2f s)", what, repeat.Repeat, cpuSinceStart)
		}
		g.Expect(measured.PeakMemoryBytes).NotTo(BeNil(), what)
		// The meter's estimate leaves out the page cache the working set counts, and counts
		// the image's files that another container was charged for.
		g.Expect(*measured.PeakMemoryBytes).To(And(
			BeNumerically(">=", workingSet/10), BeNumerically("<=", nodeMemory)),
			"%s: repeat %d peak %d B against a working set of %d B and a node of %d B", what, repeat.Repeat,
			*measured.PeakMemoryBytes, workingSet, nodeMemory)
	}
}
