//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/report"
)

// The suite's operand images have logbench_counter installed: with spec.postgres.counter
// every cluster preloads it, and a random sample of statements, which no model predicts,
// is counted at the source and measured in a file, on stdout and through Fluent Bit.
var _ = Describe("counting at the source", Label("counter"), func() {
	It("counts a random sample of statements in csvlog, stdout and Fluent Bit, and refuses it without the counter",
		func(ctx SpecContext) {
			zero, tenth := int32(0), 0.1
			sampled := newBenchmark("counter")
			sampled.Spec.Logging.Statement = benchv1alpha1.StatementNone
			sampled.Spec.Logging.MinDurationSample, sampled.Spec.Logging.StatementSampleRate = &zero, &tenth
			sampled.Spec.Baseline.Enabled = false
			sampled.Spec.Destinations = []benchv1alpha1.Destination{
				{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog},
				{Name: "stdout", Type: benchv1alpha1.DestinationStdout},
				{Name: "fluent-null", Type: benchv1alpha1.DestinationFluentBitSidecar, Shipper: &benchv1alpha1.ShipperSpec{
					Kind: benchv1alpha1.ShipperFluentBit, Image: shipping.fluentBitImage, Output: benchv1alpha1.OutputNull}},
			}
			sampled.Spec.Workload.Clients = []int32{1}
			sampled.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
			sampled.Spec.Cleanup = benchv1alpha1.CleanupAlways

			By("refusing the sampled benchmark without spec.postgres.counter, naming the extension")
			err := k8sClient.Create(ctx, sampled.DeepCopy(), client.DryRunAll)
			Expect(err).To(HaveOccurred(), "the API server admitted a sampled benchmark without the counter")
			Expect(err.Error()).To(And(
				ContainSubstring("spec.logging.minDurationSample, spec.logging.statementSampleRate"),
				ContainSubstring("logbench_counter extension"), ContainSubstring("spec.postgres.counter")))

			By("running it with the counter: every row counted at the source")
			sampled.Spec.Postgres.Counter = &benchv1alpha1.CounterSpec{Source: benchv1alpha1.CounterInOperandImage}
			createForThisSpec(ctx, sampled)
			DeferCleanup(func() {
				if CurrentSpecReport().Failed() {
					printDiagnostics(sampled)
				}
			})
			Eventually(func(g Gomega) {
				cluster := cloudnativepg.NewCluster()
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmarkNamespace, Name: "counter-csvlog"},
					cluster)).To(Succeed())
				libraries, _, err := unstructured.NestedStringSlice(cluster.Object,
					"spec", "postgresql", "shared_preload_libraries")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(libraries).To(Equal([]string{benchv1alpha1.CounterExtension}))
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
			waitForPhase(ctx, sampled, benchv1alpha1.PhaseSucceeded)

			Expect(sampled.Status.Results).To(HaveLen(len(sampled.Spec.Destinations)))
			for _, row := range rowsWithRuns(ctx, sampled) {
				records := row.Records
				transactions := row.Repeats[0].Transactions
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: %s, %d of %d records after %d transactions, %d dropped, "+
					"%d late, %d unverified: %s\n", row.Destination, records.ExpectedSource, records.Delivered,
					records.Expected, transactions, records.KnownDropped(), records.ArrivedLate, records.Unverified,
					records.DropReason)
				Expect(records.ExpectedSource).To(Equal(benchv1alpha1.ExpectedCounted), row.Destination)
				// One statement in ten at random, each a record: far from none and from all.
				Expect(records.Expected).To(BeNumerically(">", 0), row.Destination)
				Expect(records.Expected).To(BeNumerically("<", transactions), row.Destination)
				Expect(records.AccountingError).To(BeEmpty(), row.Destination)
				if row.Type == benchv1alpha1.DestinationStdout {
					// CloudNativePG's instance manager samples what it prints up to 1.30.0:
					// a loss there is named, never hidden.
					Expect(records.Delivered+records.ArrivedLate+records.Unverified+records.KnownDropped()).
						To(Equal(records.Expected), "stdout: delivered, late, unverified and dropped make up the expected")
					if records.KnownDropped() > 0 {
						Expect(records.DropReason).NotTo(BeEmpty(), "stdout: a loss without its stage")
					}
					continue
				}
				Expect(records.Delivered).To(Equal(records.Expected), "%s: every sampled record delivered", row.Destination)
			}

			By("saying so in kubectl logbench report")
			var rendered bytes.Buffer
			Expect(report.Render(&rendered, report.FormatTable, withRuns(ctx, sampled))).To(Succeed())
			Expect(rendered.String()).To(ContainSubstring("expected: counted at the source"))
		})
})
