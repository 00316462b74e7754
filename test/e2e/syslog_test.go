//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// The syslog specs measure PostgreSQL's syslog() into the receiver sidecar that sees its
// socket as the postgres container's /dev/log: split and numbered messages counted at a
// Null output, whole messages at a Stdout output, and rsyslog with Debian's configuration
// with and without a rate limit; then forwarded by the Fluent Bit sidecar over UDP and
// over TCP to the receiver Service logbench deploys, on another node than the primary's
// when the cluster has one, counted at both ends.
var _ = Describe("syslog", Ordered, Label("syslog"), func() {
	// benchmark is the running spec's; benchmarks every spec's, deleted after the last.
	var (
		benchmark  *benchv1alpha1.LoggingBenchmark
		benchmarks []*benchv1alpha1.LoggingBenchmark
	)

	AfterAll(func(ctx SpecContext) {
		for _, created := range benchmarks {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, created))).To(Succeed())
		}
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			printDiagnostics(benchmark,
				[]string{"-n", benchmarkNamespace, "describe", "pods", "-l", "cnpg.io/podRole=instance"},
				[]string{"-n", benchmarkNamespace, "logs", "-l", "cnpg.io/podRole=instance", "-c", "logbench-shipper",
					"--prefix", "--tail=50"},
				[]string{"-n", benchmarkNamespace, "get", "deployments,services,networkpolicies", "-o", "wide"},
				[]string{"-n", benchmarkNamespace, "logs", "-l", builders.LabelComponent, "--prefix", "--tail=50"})
		}
	})

	fluentBit := func(output benchv1alpha1.ShipperOutput) *benchv1alpha1.ShipperSpec {
		return &benchv1alpha1.ShipperSpec{Kind: benchv1alpha1.ShipperFluentBit, Image: shipping.fluentBitImage, Output: output}
	}
	// run creates a short benchmark of destinations at 2 clients, with or without a
	// baseline, waits for its success and returns its destinations' rows, each measured
	// and expecting records, without an accounting error.
	run := func(ctx SpecContext, name string, baseline bool, destinations ...benchv1alpha1.Destination,
	) []benchv1alpha1.Result {
		benchmark = newBenchmark(name)
		benchmarks = append(benchmarks, benchmark)
		benchmark.Spec.Baseline.Enabled = baseline
		benchmark.Spec.Destinations = destinations
		benchmark.Spec.Workload.Clients = []int32{2}
		benchmark.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
		benchmark.Spec.DrainTimeout = metav1.Duration{Duration: time.Minute}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		waitForPhase(ctx, benchmark, benchv1alpha1.PhaseSucceeded)
		Expect(benchmark.Status.Results).To(HaveLen(int(benchmark.Status.Progress.RunsTotal)))
		var rows []benchv1alpha1.Result
		for _, row := range benchmark.Status.Results {
			Expect(row.TPS).To(BeNumerically(">", 0), rowName(row))
			Expect(row.Records.AccountingError).To(BeEmpty(), rowName(row))
			if row.Destination != "baseline" {
				Expect(row.Records.Expected).To(BeNumerically(">", 0), rowName(row))
				rows = append(rows, row)
			}
		}
		return rows
	}

	It("counts every record PostgreSQL sends to /dev/log at the receiver sidecar, or names the loss",
		func(ctx SpecContext) {
			destinations := []benchv1alpha1.Destination{
				{Name: "syslog", Type: benchv1alpha1.DestinationSyslog, Shipper: fluentBit(benchv1alpha1.OutputNull)},
				{Name: "syslog-whole", Type: benchv1alpha1.DestinationSyslog, Shipper: fluentBit(benchv1alpha1.OutputStdout),
					Syslog: &benchv1alpha1.SyslogSpec{Facility: "LOCAL3", SequenceNumbers: new(false), SplitMessages: new(false)}},
			}
			// rsyslog's image is built here (hack/images.sh); no registry
			// serves it yet, so the upstream images' runs leave its rows out.
			if image := os.Getenv("E2E_RSYSLOG_IMAGE"); image != "" {
				rsyslog := func(name string, limit *benchv1alpha1.SyslogRateLimit) benchv1alpha1.Destination {
					return benchv1alpha1.Destination{Name: name, Type: benchv1alpha1.DestinationSyslog,
						Shipper: &benchv1alpha1.ShipperSpec{Image: image},
						Syslog:  &benchv1alpha1.SyslogSpec{Receiver: benchv1alpha1.SyslogRsyslog, RateLimit: limit}}
				}
				// rsyslog as Debian ships it, and with rsyslog 5.8's default rate limit.
				destinations = append(destinations, rsyslog("rsyslog", nil),
					rsyslog("rsyslog-limited", &benchv1alpha1.SyslogRateLimit{IntervalSeconds: 5, Burst: 200}))
			} else {
				_, _ = fmt.Fprintln(GinkgoWriter, "E2E_RSYSLOG_IMAGE is empty: no rsyslog rows")
			}
			rows := run(ctx, "syslog", true, destinations...)
			for _, row := range rows {
				what, records := rowName(row), row.Records
				shipperCPU := 0.0
				if row.ShipperCPUCores != nil {
					shipperCPU = *row.ShipperCPUCores
				}
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d delivered, %d late, drain %.1f s, TPS %.0f, shipper CPU "+
					"%.2f cores; lost at %q; %s\n", what, records.Delivered, records.Expected, records.ArrivedLate,
					row.DrainSeconds, row.TPS, shipperCPU, lostAt(records), records.DropReason)
				if row.Destination == "rsyslog-limited" {
					// 200 messages of each process in 5 s: a few hundred of the run's records.
					Expect(records.Dropped).NotTo(BeNil(), "%s: the expectation is exact", what)
					Expect(*records.Dropped).To(BeNumerically(">", 0), "%s: the rate limit drops records", what)
					Expect(records.Delivered+records.ArrivedLate+*records.Dropped).To(Equal(records.Expected), what)
					Expect(lostAt(records)).To(Equal("read"), "%s: lost at rsyslog's input", what)
					Expect(records.DropReason).To(ContainSubstring("SysSock.RateLimit"), what)
					continue
				}
				// syslog() blocks on a full socket rather than dropping: the receiver gets every
				// record unless it was not there, or dropped it.
				Expect(records.Delivered+records.ArrivedLate).To(Equal(records.Expected), "%s: every record arrives", what)
			}
		})

	It("seals the meter and the receiver sidecar off the server's environment, token and /controller",
		func(ctx SpecContext) {
			expectSealedContainers(ctx, benchmark)
		})

	It("forwards over UDP and TCP to the receiver Service it deploys, counting at both ends", func(ctx SpecContext) {
		forwarding := func(name string, transport benchv1alpha1.SyslogTransport) benchv1alpha1.Destination {
			return benchv1alpha1.Destination{Name: name, Type: benchv1alpha1.DestinationSyslog,
				Shipper: fluentBit(benchv1alpha1.OutputNull), Syslog: &benchv1alpha1.SyslogSpec{Transport: transport}}
		}
		rows := run(ctx, "syslog-fwd", false, forwarding("udp", benchv1alpha1.SyslogUDP), forwarding("tcp", benchv1alpha1.SyslogTCP))

		By("deploying each receiver as the benchmark's")
		for _, name := range []string{"syslog-fwd-udp-syslog", "syslog-fwd-tcp-syslog"} {
			for _, object := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}} {
				Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmarkNamespace, Name: name}, object)).
					To(Succeed(), "%T %s", object, name)
				Expect(metav1.IsControlledBy(object, benchmark)).To(BeTrue(), "%T %s", object, name)
			}
		}

		By("closing each row's accounts with the records counted at the receiver")
		for _, row := range rows {
			what, records, stages := rowName(row), row.Records, row.Records.Stages
			Expect(stages).NotTo(BeNil(), what)
			Expect(stages.Read).NotTo(BeNil(), what)
			Expect(stages.Forwarded).NotTo(BeNil(), what)
			Expect(stages.Received).NotTo(BeNil(), what)
			Expect(stages.Sent).NotTo(BeNil(), what)
			Expect(records.Dropped).NotTo(BeNil(), "%s: the expectation is exact", what)
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: expected %d, delivered %d, late %d, dropped %d, unverified %d; "+
				"stages read %d, forwarded %d, received %d, sent %d, lost at %q; drain %.1f s, TPS %.0f; %s\n",
				what, records.Expected, records.Delivered, records.ArrivedLate, *records.Dropped, records.Unverified,
				*stages.Read, *stages.Forwarded, *stages.Received, *stages.Sent, stages.LostAt, row.DrainSeconds, row.TPS,
				records.DropReason)
			Expect(records.Duplicates).To(BeZero(), what)
			Expect(records.Delivered+records.ArrivedLate+*records.Dropped+records.Unverified).
				To(Equal(records.Expected), "%s: delivered + late + dropped + unverified is expected", what)
			// The sidecar reads every record: syslog() blocks on a full socket.
			Expect(*stages.Read).To(Equal(records.Expected), "%s: the sidecar read every record", what)
			Expect(*stages.Received).To(BeNumerically("<=", *stages.Forwarded), "%s: the receiver got no more than was sent", what)
			if *records.Dropped > 0 {
				Expect(stages.LostAt).NotTo(BeEmpty(), "%s: a loss names its stage", what)
				Expect(records.DropReason).NotTo(BeEmpty(), what)
			}
			if row.Destination == "tcp" {
				Expect(records.Delivered+records.ArrivedLate).To(Equal(records.Expected), "%s: TCP delivers every record", what)
			}
		}

		By("measuring each receiver's pod as the sidecars are measured")
		expectPlausibleReceiverCost(ctx, benchmark, rows)

		By("finding each receiver on another node than its cluster's primary")
		receiverNodes, primaryNodes := map[string]string{}, map[string]string{}
		for _, dest := range []string{"udp", "tcp"} {
			receiver := onlyPod(ctx, builders.SyslogReceiverLabels(benchmark.Name, dest))
			primary := onlyPod(ctx, cloudnativepg.PrimaryPodLabels(builders.ClusterName(benchmark.Name, dest)))
			receiverNodes[dest], primaryNodes[dest] = receiver.Spec.NodeName, primary.Spec.NodeName
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: receiver %s on %s, primary %s on %s\n",
				dest, receiver.Name, receiver.Spec.NodeName, primary.Name, primary.Spec.NodeName)
		}
		// On one node the receiver shares the primary's: the accounts above still hold.
		requireSchedulableNodes(ctx, 2)
		for dest, node := range receiverNodes {
			Expect(node).NotTo(Equal(primaryNodes[dest]), "%s: the receiver on another node than the primary", dest)
		}

		By("showing each receiver beside its sidecar in the dashboard's cost panels")
		expectReceiversInDashboard(ctx, benchmark, rows)
	})
})

// onlyPod is the one pod of the benchmark namespace that carries labels.
func onlyPod(ctx context.Context, labels map[string]string) corev1.Pod {
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmarkNamespace), client.MatchingLabels(labels))).To(Succeed())
	Expect(pods.Items).To(HaveLen(1), "the pod labelled %v", labels)
	return pods.Items[0]
}

// lostAt is the stage a row's records name as the losing one, "" without stages.
func lostAt(records benchv1alpha1.Records) string {
	if records.Stages == nil {
		return ""
	}
	return records.Stages.LostAt
}

// rowName names a row in the assertions' messages.
func rowName(row benchv1alpha1.Result) string {
	return fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
}
