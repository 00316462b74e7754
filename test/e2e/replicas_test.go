//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	shippingpkg "github.com/logbench/logbench/internal/shipping"
	"github.com/logbench/logbench/internal/testenv"
)

// The replicas spec's destinations: a Fluent Bit sidecar shipping the file to Loki, and
// the container log a node agent ships there.
const (
	replicaSidecar = "sidecar-loki"
	replicaAgent   = "agent-json"
)

var _ = Describe("replicas", Label(stackLabel, "replicas"), func() {
	It("counts only the primary's records, none of the replica's on another node, through a sidecar and a node agent",
		func(ctx SpecContext) {
			requireSchedulableNodes(ctx, 2)
			if shipping.lokiImage == "" {
				testenv.Missing(GinkgoTB(), "E2E_LOKI_IMAGE names the Loki image; make test-e2e-local and make test-e2e set it")
			}
			deployLoki(ctx)
			deployNodeAgent(ctx)
			open := &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantOpen}
			replicated := nodeAgentBenchmark("replicas",
				// Every instance pod has the sidecar, the replica's too.
				benchv1alpha1.Destination{Name: replicaSidecar, Type: benchv1alpha1.DestinationLoki, Loki: open,
					Shipper: &benchv1alpha1.ShipperSpec{Kind: benchv1alpha1.ShipperFluentBit, Image: shipping.fluentBitImage}},
				// The agent of the replica's node ships the replica's container log.
				benchv1alpha1.Destination{Name: replicaAgent, Type: benchv1alpha1.DestinationStdout,
					Format: benchv1alpha1.FormatJSONLog, Loki: open},
			)
			replicated.Spec.Postgres.Instances = 2
			// The clusters stay until the spec has looked at the replicas.
			replicated.Spec.Cleanup = benchv1alpha1.CleanupNever
			succeedWithNodeAgent(ctx, replicated)

			Expect(replicated.Status.Results).To(HaveLen(2))
			for _, row := range rowsWithRuns(ctx, replicated) {
				what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
				primary, replica := instancesOf(ctx, clusterOf(replicated, row.Destination))
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: primary %s on %s, replica %s on %s\n", what,
					primary.Name, primary.Spec.NodeName, replica.Name, replica.Spec.NodeName)
				Expect(replica.Spec.NodeName).NotTo(Equal(primary.Spec.NodeName),
					"%s: CloudNativePG puts the replica on another node than the primary", what)
				for _, repeat := range row.Repeats {
					Expect(repeat.ServerNode).To(Equal(primary.Spec.NodeName), "%s: the primary's node", what)
				}

				records := row.Records
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d delivered, %d late, %d duplicates, drain %.1f s\n", what,
					records.Delivered, records.Expected, records.ArrivedLate, records.Duplicates, row.DrainSeconds)
				Expect(records.Expected).To(BeNumerically(">", 0), what)
				Expect(records.AccountingError).To(BeEmpty(), what)
				Expect(records.Delivered+records.ArrivedLate).To(Equal(records.Expected), "%s: every record arrives once", what)
				Expect(records.Duplicates).To(BeZero(), "%s: the replica's records are no duplicates", what)
				Expect(records.DropReason).To(BeEmpty(), what)
				Expect(records.Stages).NotTo(BeNil(), what)
				Expect(records.Stages.Stored).To(HaveValue(Equal(records.Delivered)), "%s: delivered is what Loki holds", what)
				Expect(records.Stages.Duplicates).To(BeZero(), what)

				switch row.Destination {
				case replicaSidecar:
					Expect(records.Stages.Written).To(HaveValue(Equal(records.Expected)), "%s: the primary's file", what)
					// Loki's streams of the destination carry no pod: what the replica's
					// sidecar shipped would be among the runs' records.
					Expect(lokiHolds(ctx, lokiTenantOpen, replicated, row.Destination)).
						To(Equal(records.Delivered+records.ArrivedLate), "%s: Loki holds no record the row did not count", what)
					files, logDirectory := replicaLogging(ctx, replica)
					_, _ = fmt.Fprintf(GinkgoWriter, "%s: the replica logs to %s; its sidecar's directory %s holds %q\n",
						what, logDirectory, shippingpkg.LogDirectory, files)
					// The agent applies a destination's logging settings with ALTER SYSTEM on
					// the primary, which replication does not carry: the replica logs where
					// CloudNativePG has it log, its container log, and its sidecar finds no
					// file to ship.
					Expect(logDirectory).NotTo(Equal(shippingpkg.LogDirectory), "%s: the replica's log_directory", what)
					Expect(files).To(BeEmpty(), "%s: the replica writes no file for its sidecar", what)
				case replicaAgent:
					Expect(records.Stages.ContainerLog).To(HaveValue(Equal(records.Expected)), "%s: the primary's container log", what)
					pod, shipped := expectOnlyPrimaryShipped(ctx, lokiTenantOpen, replicated, row)
					Expect(pod).To(Equal(primary.Name), "%s: the records are the primary's", what)
					Expect(shipped).To(Equal(records.Delivered+records.ArrivedLate),
						"%s: Loki holds no record of the runs the row did not count", what)
					// The agent of the replica's node ships the replica's own container log
					// under the replica's pod, which the selector leaves out.
					replicaLog := lokiCounts(ctx, lokiTenantOpen, fmt.Sprintf(
						`sum by (node) (count_over_time({job="node-agent", namespace=%q, pod=%q} [%s]))`,
						benchmarkNamespace, replica.Name, lokiRangeOf(replicated)))
					Expect(replicaLog).To(HaveLen(1), "%s: the replica's container log in Loki", what)
					_, _ = fmt.Fprintf(GinkgoWriter, "%s: the agent of %s shipped %d lines of the replica's own container log\n",
						what, replicaLog[0].labels["node"], replicaLog[0].count)
					Expect(replicaLog[0].labels["node"]).To(Equal(replica.Spec.NodeName),
						"%s: shipped by the agent of the replica's node", what)
					Expect(replicaLog[0].count).To(BeNumerically(">", 0), what)
				}
			}
		})
})

// instancesOf returns the primary and the one replica of a cluster of two instances.
func instancesOf(ctx context.Context, cluster string) (primary, replica corev1.Pod) {
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmarkNamespace), client.MatchingLabels{
		cloudnativepg.ClusterLabel: cluster, cloudnativepg.PodRoleLabel: cloudnativepg.InstanceRole,
	})).To(Succeed())
	var primaries, replicas []corev1.Pod
	for _, pod := range pods.Items {
		if pod.Labels[cloudnativepg.InstanceRoleLabel] == cloudnativepg.PrimaryRole {
			primaries = append(primaries, pod)
		} else {
			replicas = append(replicas, pod)
		}
	}
	Expect(primaries).To(HaveLen(1), "the primary of %s", cluster)
	Expect(replicas).To(HaveLen(1), "the replica of %s", cluster)
	return primaries[0], replicas[0]
}

// replicaLogging returns the files in the directory of the replica that its shipper
// reads, and the log_directory its server writes to.
func replicaLogging(ctx context.Context, replica corev1.Pod) (files []string, logDirectory string) {
	inPostgres := func(command ...string) string {
		output, err := inPostgresContainer(ctx, replica, command...)
		Expect(err).NotTo(HaveOccurred())
		return strings.TrimSpace(string(output))
	}
	return strings.Fields(inPostgres("ls", "-A", shippingpkg.LogDirectory)), inPostgres("psql", "-Atc", "SHOW log_directory")
}
