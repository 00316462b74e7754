//go:build e2e

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/report"
	"github.com/logbench/logbench/internal/results"
)

// settingsLabel marks the settings matrix: make e2e-local-lanes runs it in the lane of the
// specs labelled stack, evening the two lanes.
const settingsLabel = "settings"

var _ = Describe("settings matrix", Label(settingsLabel), func() {
	It("runs destinations with their own logging against one baseline, in the same rounds, each counted exactly",
		func(ctx SpecContext) {
			on, none := true, benchv1alpha1.StatementNone
			matrix := newBenchmark("settings")
			matrix.Spec.Logging.Statement = benchv1alpha1.StatementAll
			matrix.Spec.Destinations = []benchv1alpha1.Destination{
				{Name: "statement", Type: benchv1alpha1.DestinationCSVLog},
				{Name: "duration", Type: benchv1alpha1.DestinationCSVLog,
					Logging: &benchv1alpha1.LoggingOverride{Statement: &none, Duration: &on}},
				{Name: "both", Type: benchv1alpha1.DestinationCSVLog, Logging: &benchv1alpha1.LoggingOverride{Duration: &on}},
			}
			matrix.Spec.Workload.Clients = []int32{1}
			// Three repeats give every overhead an interval from its three pairs.
			matrix.Spec.Workload.Repeats = 3
			matrix.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
			matrix.Spec.Cleanup = benchv1alpha1.CleanupAlways
			succeedForThisSpec(ctx, matrix)
			Expect(matrix.Status.Results).To(HaveLen(4))

			By("showing each destination's effective settings and counting its records exactly")
			settings := map[string]string{
				benchv1alpha1.BaselineName: "statement=none", "statement": "statement=all",
				"duration": "statement=none,duration=on", "both": "statement=all,duration=on",
			}
			perTransaction := map[string]float64{}
			for _, row := range rowsWithRuns(ctx, matrix) {
				Expect(row.Logging).To(Equal(settings[row.Destination]), row.Destination)
				Expect(row.Repeats).To(HaveLen(3), row.Destination)
				records := row.Records
				if row.Type == benchv1alpha1.DestinationNone {
					Expect(records.Expected).To(BeZero(), "the baseline logs nothing")
					continue
				}
				Expect(records.Expected).To(BeNumerically(">", 0), row.Destination)
				Expect(records.Delivered).To(Equal(records.Expected), "%s: a file destination loses nothing", row.Destination)
				var transactions int64
				for _, repeat := range row.Repeats {
					transactions += repeat.Transactions
				}
				perTransaction[row.Destination] = float64(records.Expected) / float64(transactions)
				By(fmt.Sprintf("%s: %.2f records a transaction, overhead %s", row.Destination,
					perTransaction[row.Destination], report.OverheadCell(row)))
				Expect(row.OverheadAgainst).To(Equal(benchv1alpha1.BaselineName), row.Destination)
				Expect(row.OverheadInterval).NotTo(BeNil(), "%s: three repeats paired with the baseline's", row.Destination)
				Expect(row.OverheadInterval.Pairs).To(BeEquivalentTo(3), row.Destination)
			}
			// A select-only transaction is one prepared statement: log_statement logs its
			// execute, log_duration its bind and its execute (measured locally on
			// PostgreSQL 15: 1.0, 2.0 and 3.0 records a transaction).
			Expect(perTransaction["statement"]).To(BeNumerically("~", 1, 0.01))
			Expect(perTransaction["duration"]).To(BeNumerically("~", 2, 0.01))
			Expect(perTransaction["both"]).To(BeNumerically("~", 3, 0.01))

			By("measuring what log_duration adds on top of log_statement, paired by round")
			against, err := results.Against(rowsWithRuns(ctx, matrix), "statement")
			Expect(err).NotTo(HaveOccurred())
			for _, row := range against {
				if row.Destination == "statement" {
					Expect(row.OverheadPercent).To(BeNil())
					continue
				}
				Expect(row.OverheadAgainst).To(Equal("statement"), row.Destination)
				Expect(row.OverheadInterval).NotTo(BeNil(), row.Destination)
				Expect(row.OverheadInterval.Pairs).To(BeEquivalentTo(3), row.Destination)
			}

			By("exporting each destination's settings on the operator's metrics endpoint")
			Eventually(func(g Gomega) {
				families, err := scrapeMetricFamilies(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				for destination, logging := range settings {
					g.Expect(gaugeValue(families, "logbench_destination_info", map[string]string{
						"namespace": matrix.Namespace, "benchmark": matrix.Name,
						"destination": destination, "logging": logging,
					})).To(BeNumerically("==", 1), destination)
				}
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		})
})
