//go:build e2e

package e2e

import (
	"context"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/results"
)

// rowsWithRuns is the rows of benchmark's status with their repeats, which a status in a
// cluster leaves out, read from the benchmark's LoggingBenchmarkRuns.
func rowsWithRuns(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) []benchv1alpha1.Result {
	records := &benchv1alpha1.LoggingBenchmarkRunList{}
	Expect(k8sClient.List(ctx, records, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels{builders.LabelBenchmark: benchmark.Name})).To(Succeed())
	return results.WithRepeats(benchmark, records.Items)
}

// withRuns is benchmark as kubectl logbench report reads it: its rows' repeats filled
// from its LoggingBenchmarkRuns.
func withRuns(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) *benchv1alpha1.LoggingBenchmark {
	read := benchmark.DeepCopy()
	read.Status.Results = rowsWithRuns(ctx, benchmark)
	return read
}
