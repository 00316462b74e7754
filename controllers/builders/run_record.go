package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// RunRecord is the LoggingBenchmarkRun that records a finished run's result; the
// reconciler sets its owner.
func RunRecord(
	benchmark *v1alpha1.LoggingBenchmark, run results.RunKey, result v1alpha1.RepeatResult,
) *v1alpha1.LoggingBenchmarkRun {
	result.Repeat = run.Repeat
	return &v1alpha1.LoggingBenchmarkRun{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "LoggingBenchmarkRun"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: benchmark.Namespace,
			Name:      RunRecordName(benchmark.Name, run),
			Labels:    RunKeyLabels(benchmark.Name, run),
		},
		Spec: v1alpha1.LoggingBenchmarkRunSpec{
			Benchmark: benchmark.Name, Destination: run.Destination, Clients: run.Clients, Repeat: run.Repeat,
		},
		Status: result,
	}
}

// FailedWithDestination marks record as the run of a destination that failed: its error
// is the destination's.
func FailedWithDestination(record *v1alpha1.LoggingBenchmarkRun) {
	if record.Annotations == nil {
		record.Annotations = map[string]string{}
	}
	record.Annotations[AnnotationDestinationFailed] = "true"
}

// DestinationFailure is the error of the failed destination whose run record is, when
// FailedWithDestination marked it; failed is false for any other record.
func DestinationFailure(record *v1alpha1.LoggingBenchmarkRun) (reason string, failed bool) {
	if record.Annotations[AnnotationDestinationFailed] != "true" {
		return "", false
	}
	return record.Status.Error, true
}
