//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/manifest"
	"github.com/logbench/logbench/internal/testenv"
)

// config/samples/scripts.yaml, shortened to one csvlog destination, one client and 5 s:
// the user's reads, writes and slow report, from the sample's ConfigMap, with its init,
// run as the application owner (a division by zero under a superuser says so) under
// log_min_duration_statement 5 and auto_explain, and every record counted at the source
// delivered.
var _ = Describe("the user's scripts", Label("counter"), func() {
	It("runs the scripts sample's queries and counts every slow-query record at the source", func(ctx SpecContext) {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		sample, err := manifest.Read(filepath.Join(root, "config", "samples", "scripts.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(sample.ConfigMaps).To(HaveLen(1))

		queries := sample.ConfigMaps[0].DeepCopy()
		queries.Name, queries.Namespace = "e2e-scripts", benchmarkNamespace
		// The init and one more script fail under a superuser: they run as the application owner.
		const notSuperuser = "SELECT 1 / (NOT rolsuper)::int FROM pg_roles WHERE rolname = current_user;\n"
		queries.Data["schema.sql"] = notSuperuser + queries.Data["schema.sql"]
		queries.Data["not-superuser.sql"] = notSuperuser
		Expect(k8sClient.Create(ctx, queries)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, queries))).To(Succeed())
		})

		scripts := newBenchmark("scripts")
		scripts.Spec.Postgres.Counter = sample.Benchmark.Spec.Postgres.Counter
		scripts.Spec.Logging = sample.Benchmark.Spec.Logging
		scripts.Spec.Baseline.Enabled = false
		scripts.Spec.Destinations = []benchv1alpha1.Destination{{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog}}
		scripts.Spec.Workload.Scripts = sample.Benchmark.Spec.Workload.Scripts
		scripts.Spec.Workload.Scripts.ConfigMap.Name = queries.Name
		scripts.Spec.Workload.Scripts.Files = append(scripts.Spec.Workload.Scripts.Files,
			benchv1alpha1.ScriptFile{Key: "not-superuser.sql", Weight: 1})
		scripts.Spec.Workload.Clients = []int32{1}
		scripts.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
		scripts.Spec.Cleanup = benchv1alpha1.CleanupAlways
		succeedForThisSpec(ctx, scripts)

		Expect(scripts.Status.Results).To(HaveLen(1))
		row := rowsWithRuns(ctx, scripts)[0]
		records, transactions := row.Records, row.Repeats[0].Transactions
		_, _ = fmt.Fprintf(GinkgoWriter, "%s: %s, %d of %d records after %d transactions\n", row.Destination,
			records.ExpectedSource, records.Delivered, records.Expected, transactions)
		Expect(transactions).To(BeNumerically(">", 0))
		Expect(records.ExpectedSource).To(Equal(benchv1alpha1.ExpectedCounted))
		// The report sleeps 10 ms, over the 5 ms threshold: its durations and plans at least.
		Expect(records.Expected).To(BeNumerically(">", 0))
		Expect(records.AccountingError).To(BeEmpty())
		Expect(records.Delivered).To(Equal(records.Expected), "every record counted at the source delivered")

		By("recording each script's share of the run, by its key")
		keys := make([]benchv1alpha1.ConfigMapKey, 0, len(row.Repeats[0].Scripts))
		var scriptTransactions int64
		for _, script := range row.Repeats[0].Scripts {
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d transactions, %.1f TPS, %.3f ms\n", script.Key, script.Transactions,
				script.TPS, script.LatencyAvgMs)
			keys = append(keys, script.Key)
			scriptTransactions += script.Transactions
		}
		want := make([]benchv1alpha1.ConfigMapKey, 0, len(scripts.Spec.Workload.Scripts.Files))
		for _, file := range scripts.Spec.Workload.Scripts.Files {
			want = append(want, file.Key)
		}
		Expect(keys).To(Equal(want))
		// One client, one pgbench thread: the scripts' figures add up to the run's.
		Expect(scriptTransactions).To(Equal(transactions))
	})

	It("fails the run of scripts whose ConfigMap is missing, naming it", func(ctx SpecContext) {
		missing := newBenchmark("scripts-missing")
		missing.Spec.Postgres.Counter = &benchv1alpha1.CounterSpec{Source: benchv1alpha1.CounterInOperandImage}
		missing.Spec.Baseline.Enabled = false
		missing.Spec.Destinations = []benchv1alpha1.Destination{{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog}}
		missing.Spec.Workload.Scripts = &benchv1alpha1.WorkloadScripts{
			ConfigMap: benchv1alpha1.ConfigMapReference{Name: "no-such-queries"},
			Files:     []benchv1alpha1.ScriptFile{{Key: "read.sql", Weight: 1}},
		}
		missing.Spec.Workload.Clients = []int32{1}
		missing.Spec.Cleanup = benchv1alpha1.CleanupAlways
		createForThisSpec(ctx, missing)
		waitForPhase(ctx, missing, benchv1alpha1.PhaseFailed)

		Expect(missing.Status.Results).To(HaveLen(1))
		Expect(rowsWithRuns(ctx, missing)[0].Repeats).To(ConsistOf(HaveField("Error",
			ContainSubstring("the ConfigMap no-such-queries in the benchmark's namespace does not exist or has no key read.sql"))))
	})
})
