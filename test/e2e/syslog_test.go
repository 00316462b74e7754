//go:build e2e

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
)

// The syslog spec measures PostgreSQL's syslog() into the receiver sidecar that sees its
// socket as the postgres container's /dev/log: split and numbered messages counted at a
// Null output, whole messages at a Stdout output.
var _ = Describe("syslog", Ordered, func() {
	var benchmark *benchv1alpha1.LoggingBenchmark

	AfterAll(func(ctx SpecContext) {
		if benchmark != nil {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, benchmark))).To(Succeed())
		}
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			printDiagnostics(benchmark,
				[]string{"-n", benchmarkNamespace, "describe", "pods", "-l", "cnpg.io/podRole=instance"},
				[]string{"-n", benchmarkNamespace, "logs", "-l", "cnpg.io/podRole=instance", "-c", "logbench-shipper",
					"--prefix", "--tail=50"})
		}
	})

	It("counts every record PostgreSQL sends to /dev/log at the receiver sidecar, or names the loss", func(ctx SpecContext) {
		fluentBit := func(output benchv1alpha1.ShipperOutput) *benchv1alpha1.ShipperSpec {
			return &benchv1alpha1.ShipperSpec{Kind: benchv1alpha1.ShipperFluentBit, Image: shipping.fluentBitImage, Output: output}
		}
		benchmark = newBenchmark("syslog")
		benchmark.Spec.Destinations = []benchv1alpha1.Destination{
			{Name: "syslog", Type: benchv1alpha1.DestinationSyslog, Shipper: fluentBit(benchv1alpha1.OutputNull)},
			{Name: "syslog-whole", Type: benchv1alpha1.DestinationSyslog, Shipper: fluentBit(benchv1alpha1.OutputStdout),
				Syslog: &benchv1alpha1.SyslogSpec{Facility: "LOCAL3", SequenceNumbers: new(false), SplitMessages: new(false)}},
		}
		benchmark.Spec.Workload.Clients = []int32{2}
		benchmark.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
		benchmark.Spec.DrainTimeout = metav1.Duration{Duration: time.Minute}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		waitForPhase(ctx, benchmark, benchv1alpha1.PhaseSucceeded)

		Expect(benchmark.Status.Results).To(HaveLen(int(benchmark.Status.Progress.RunsTotal)))
		for _, row := range benchmark.Status.Results {
			what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
			records := row.Records
			Expect(row.TPS).To(BeNumerically(">", 0), what)
			Expect(records.AccountingError).To(BeEmpty(), what)
			if row.Destination == "baseline" {
				continue
			}
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d delivered, %d late, drain %.1f s, TPS %.0f; %s\n",
				what, records.Delivered, records.Expected, records.ArrivedLate, row.DrainSeconds, row.TPS, records.DropReason)
			Expect(records.Expected).To(BeNumerically(">", 0), what)
			// syslog() blocks on a full socket rather than dropping: the receiver gets every
			// record unless it was not there.
			Expect(records.Delivered+records.ArrivedLate).To(Equal(records.Expected), "%s: every record arrives", what)
		}
	})

	It("refuses a forwarding transport it does not deploy the receiver of, saying so", func(ctx SpecContext) {
		udp := newBenchmark("syslog-udp")
		udp.Spec.Destinations = []benchv1alpha1.Destination{{Name: "syslog-udp", Type: benchv1alpha1.DestinationSyslog,
			Syslog: &benchv1alpha1.SyslogSpec{Transport: benchv1alpha1.SyslogUDP}}}
		udp.Spec.Baseline.Enabled = false
		Expect(k8sClient.Create(ctx, udp)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, udp))).To(Succeed()) })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(udp), udp)).To(Succeed())
			g.Expect(udp.Status.Destinations).To(ContainElement(And(
				HaveField("State", benchv1alpha1.DestinationFailed),
				HaveField("Message", ContainSubstring("does not deploy yet")),
			)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})
