//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
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

// finishedRun is what a run finished before a fault (a restart, a runner's death, an
// upgrade) must keep: its record and the result it holds.
type finishedRun struct {
	// Record is the UID of its LoggingBenchmarkRun; empty for a run of an operator from
	// before run records, whose Job kept the result in an annotation.
	Record types.UID
	Result benchv1alpha1.RepeatResult
}

// finishedRuns reads the runs of benchmark that have finished: from its
// LoggingBenchmarkRuns and, for an operator from before them, from its Jobs' result
// annotations.
func finishedRuns(ctx context.Context, g Gomega, benchmark *benchv1alpha1.LoggingBenchmark,
) map[results.RunKey]finishedRun {
	selector := client.MatchingLabels{builders.LabelBenchmark: benchmark.Name}
	finished := map[results.RunKey]finishedRun{}
	jobs := &batchv1.JobList{}
	g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(benchmark.Namespace), selector)).To(Succeed())
	for _, job := range jobs.Items {
		saved, done := job.Annotations[builders.AnnotationResult]
		if !done {
			continue
		}
		key, err := builders.RunKeyFromLabels(job.Labels)
		g.Expect(err).NotTo(HaveOccurred(), "Job %s", job.Name)
		var result benchv1alpha1.RepeatResult
		g.Expect(json.Unmarshal([]byte(saved), &result)).To(Succeed(), "the result of Job %s", job.Name)
		finished[key] = finishedRun{Result: result}
	}
	records := &benchv1alpha1.LoggingBenchmarkRunList{}
	g.Expect(k8sClient.List(ctx, records, client.InNamespace(benchmark.Namespace), selector)).To(Succeed())
	for i := range records.Items {
		key, result := results.Recorded(&records.Items[i])
		finished[key] = finishedRun{Record: records.Items[i].UID, Result: result}
	}
	return finished
}

// awaitFinishedRuns waits until a run of benchmark has finished and returns its finished
// runs.
func awaitFinishedRuns(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) map[results.RunKey]finishedRun {
	var finished map[results.RunKey]finishedRun
	Eventually(func(g Gomega) {
		finished = finishedRuns(ctx, g, benchmark)
		g.Expect(finished).NotTo(BeEmpty())
	}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(time.Second).Should(Succeed())
	return finished
}

// expectEveryRunOnce checks that the succeeded benchmark of one repeat has a result with
// TPS for every run, every csvlog record delivered, and one record a run, the runs
// finished before (from awaitFinishedRuns) neither run again nor recorded again.
func expectEveryRunOnce(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark,
	before map[results.RunKey]finishedRun,
) {
	GinkgoHelper()
	total := int(benchmark.Status.Progress.RunsTotal)
	Expect(benchmark.Status.Results).To(HaveLen(total))
	for _, row := range benchmark.Status.Results {
		Expect(row.TPS).To(BeNumerically(">", 0), "%s with %d clients", row.Destination, row.Clients)
		if row.Type == benchv1alpha1.DestinationCSVLog {
			Expect(row.Records.Delivered).To(Equal(row.Records.Expected), "%s with %d clients", row.Destination, row.Clients)
		}
	}
	records := &benchv1alpha1.LoggingBenchmarkRunList{}
	Expect(k8sClient.List(ctx, records, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels{builders.LabelBenchmark: benchmark.Name})).To(Succeed())
	Expect(records.Items).To(HaveLen(total), "one record a run")
	after := finishedRuns(ctx, Default, benchmark)
	for run, finished := range before {
		Expect(after[run].Record).NotTo(BeEmpty(), "run %s is recorded", run)
		if finished.Record != "" {
			Expect(after[run].Record).To(Equal(finished.Record), "the record of run %s, finished before, was made again", run)
		}
		Expect(after[run].Result.TPS).To(Equal(finished.Result.TPS), "run %s, finished before, was run again", run)
	}
}
