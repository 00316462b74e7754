package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/results"
)

// A benchmark of 1,000 runs: admitted, its runs recorded each in a LoggingBenchmarkRun
// (fabricated here rather than run by runners), and its status aggregated from them by the
// operator, under 1 MiB.
var _ = Describe("a benchmark of 1,000 runs", func() {
	It("is admitted, and the operator aggregates its status from the runs' records", func() {
		ctx := context.Background()
		namespace := newNamespace()
		benchmark := newBenchmark(namespace, "thousand", v1alpha1.CleanupNever)
		// 9 destinations and the baseline × 10 client counts × 10 repeats.
		benchmark.Spec.Destinations = nil
		for i := range 9 {
			benchmark.Spec.Destinations = append(benchmark.Spec.Destinations,
				v1alpha1.Destination{Name: fmt.Sprintf("csv%d", i), Type: v1alpha1.DestinationCSVLog})
		}
		benchmark.Spec.Workload.Clients = []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
		benchmark.Spec.Workload.Repeats = 10
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		Expect(benchmark.Spec.RunsTotal()).To(Equal(int32(v1alpha1.MaxRuns)))

		By("recording every run before the operator starts")
		tps := func(run results.RunKey) float64 { return float64(1000 + 10*run.Clients) }
		for _, run := range plannedRuns(&benchmark.Spec, scheduleSeed(benchmark), nil) {
			key := run.Key()
			record := builders.RunRecord(benchmark, key, v1alpha1.RepeatResult{
				TPS: tps(key), LatencyAvgMs: 1, Transactions: 10000,
				Records: v1alpha1.Records{Expected: 100, Delivered: 100}, DrainSeconds: 0.1,
			})
			Expect(controllerutil.SetControllerReference(benchmark, record, scheme)).To(Succeed())
			Expect(k8sClient.Create(ctx, record)).To(Succeed())
		}

		DeferCleanup(startOperator(time.Minute))
		finished := expectPhase(namespace, "thousand", v1alpha1.PhaseSucceeded)
		Expect(finished.Status.Progress).To(Equal(v1alpha1.Progress{RunsDone: 1000, RunsTotal: 1000, Text: "1000/1000"}))
		Expect(finished.Status.Results).To(HaveLen(100))
		for _, row := range finished.Status.Results {
			key := results.RunKey{Destination: row.Destination, Clients: row.Clients}
			Expect(row.TPS).To(Equal(tps(key)), "row %s/%d", row.Destination, row.Clients)
			Expect(row.Records.Delivered).To(Equal(int64(1000)), "the 10 repeats of %s/%d", row.Destination, row.Clients)
		}
		Expect(listRunners(namespace)).To(BeEmpty(), "no run of a recorded benchmark starts")

		By("keeping the status under 1 MiB, every run's result in its record")
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("LoggingBenchmark"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), stored)).To(Succeed())
		document, err := json.Marshal(stored.Object)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(document)).To(BeNumerically("<", 1<<20))
		for _, row := range rowsWithRuns(finished) {
			Expect(row.Repeats).To(HaveLen(10), "row %s/%d", row.Destination, row.Clients)
		}
	})
})

// An operator that wrote no records kept each run's result in its Job's annotation and in
// the status; the operator that replaces it mid-benchmark records them from the Jobs.
var _ = Describe("a benchmark an operator without run records began", func() {
	It("is adopted: the results its Jobs hold are recorded, and its rows keep their figures only", func() {
		ctx := context.Background()
		namespace := newNamespace()
		benchmark := newBenchmark(namespace, "upgraded", v1alpha1.CleanupNever)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Workload.Clients = []int32{1}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		run := builders.Run{Destination: benchmark.Spec.Destinations[0], Clients: 1, Repeat: 1}
		result := v1alpha1.RepeatResult{Repeat: 1, TPS: 800, LatencyAvgMs: 1.25, Transactions: 8000,
			Records: v1alpha1.Records{Expected: 8000, Delivered: 8000}}

		By("holding the run's result in the Job's annotation and the status, as that operator did")
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: builders.RunRecordName(benchmark.Name, run.Key()),
				Labels: builders.RunKeyLabels(benchmark.Name, run.Key())},
			Spec: batchv1.JobSpec{Suspend: new(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: builders.AgentContainer, Image: "postgres:18"}},
			}}},
		}
		encoded, err := json.Marshal(result)
		Expect(err).NotTo(HaveOccurred())
		job.Annotations = map[string]string{builders.AnnotationResult: string(encoded)}
		Expect(controllerutil.SetControllerReference(benchmark, job, scheme)).To(Succeed())
		Expect(k8sClient.Create(ctx, job)).To(Succeed())
		benchmark.Status = v1alpha1.LoggingBenchmarkStatus{Phase: v1alpha1.PhaseRunning,
			Progress: v1alpha1.Progress{RunsDone: 1, RunsTotal: 1, Text: "1/1"},
			Results: []v1alpha1.Result{{Destination: "csv", Type: v1alpha1.DestinationCSVLog, Clients: 1, TPS: 800,
				Repeats: []v1alpha1.RepeatResult{result}}}}
		Expect(k8sClient.Status().Update(ctx, benchmark)).To(Succeed())

		DeferCleanup(startOperator(time.Minute))
		finished := expectPhase(namespace, "upgraded", v1alpha1.PhaseSucceeded)
		Expect(finished.Status.Results).To(ConsistOf(SatisfyAll(HaveField("TPS", 800.0),
			HaveField("Records.Delivered", int64(8000)))))
		record := &v1alpha1.LoggingBenchmarkRun{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace,
			Name: builders.RunRecordName(benchmark.Name, run.Key())}, record)).To(Succeed())
		Expect(record.Status).To(Equal(result))
		Expect(rowsWithRuns(finished)[0].Repeats).To(Equal([]v1alpha1.RepeatResult{result}))
	})
})
