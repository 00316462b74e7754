package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// Event reasons.
const (
	EventClusterCreated = "ClusterCreated"
	EventClusterReady   = "ClusterReady"
	EventClusterFailed  = "ClusterFailed"
	// EventClusterNotReady says what keeps a cluster from becoming ready, each time that
	// changes, before its destination fails for it or for the ready timeout.
	EventClusterNotReady = "ClusterNotReady"
	// EventWaitingForPredecessor names the object of a deleted benchmark of the same name
	// that the benchmark waits for before creating its clusters.
	EventWaitingForPredecessor = "WaitingForPredecessor"
	EventClustersDeleted       = "ClustersDeleted"
	EventRunStarted            = "RunStarted"
	EventRunSucceeded          = "RunSucceeded"
	EventRunFailed             = "RunFailed"
	EventBenchmarkFinished     = "BenchmarkFinished"
)

// announceTransitions emits the events and counts of the changes a pass wrote. It runs
// after the status write, which leaves out a status computed from a stale read
// (errStaleStatus), so each change is announced once.
func (r *LoggingBenchmarkReconciler) announceTransitions(old, benchmark *v1alpha1.LoggingBenchmark) {
	before := map[string]v1alpha1.DestinationState{}
	for _, dest := range old.Status.Destinations {
		before[dest.Name] = dest.State
	}
	for _, dest := range benchmark.Status.Destinations {
		if before[dest.Name] == dest.State {
			continue
		}
		switch dest.State {
		case v1alpha1.DestinationReady:
			r.Recorder.Eventf(
				benchmark,
				corev1.EventTypeNormal,
				EventClusterReady,
				"CloudNativePG cluster %s is ready",
				dest.ClusterName,
			)
		case v1alpha1.DestinationFailed:
			r.Recorder.Event(benchmark, corev1.EventTypeWarning, EventClusterFailed, dest.Message)
		}
	}
	if !old.Status.Phase.IsFinished() && benchmark.Status.Phase.IsFinished() {
		r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventBenchmarkFinished,
			"Benchmark %s: %s runs done, worst overhead %q", benchmark.Status.Phase,
			benchmark.Status.Progress.Text, benchmark.Status.Summary.WorstOverhead)
	}
}

// announceRunFinished counts and announces the end of a run once per process.
func (r *LoggingBenchmarkReconciler) announceRunFinished(benchmark *v1alpha1.LoggingBenchmark, finished finishedRun) {
	owner := client.ObjectKeyFromObject(benchmark)
	result := finished.Result
	r.finishedRunsMu.Lock()
	if r.finishedRuns == nil {
		r.finishedRuns = map[types.NamespacedName]map[results.RunKey]bool{}
	}
	if r.finishedRuns[owner] == nil {
		r.finishedRuns[owner] = map[results.RunKey]bool{}
	}
	seen := r.finishedRuns[owner][finished.Run]
	r.finishedRuns[owner][finished.Run] = true
	r.finishedRunsMu.Unlock()
	if seen {
		return
	}
	if result.Error != "" {
		countRun(benchmark, outcomeFailed)
		r.Recorder.Eventf(benchmark, corev1.EventTypeWarning, EventRunFailed, "Run %s failed: %s", finished.Run, result.Error)
		return
	}
	countRun(benchmark, outcomeSucceeded)
	message := fmt.Sprintf("Run %s succeeded: %.1f TPS", finished.Run, result.TPS)
	if failed := len(result.FailedAttempts); failed > 0 {
		message += fmt.Sprintf(", on attempt %d; attempt %d failed: %s", failed+1, failed, result.FailedAttempts[failed-1])
	}
	r.Recorder.Event(benchmark, corev1.EventTypeNormal, EventRunSucceeded, message)
}

// previousMessage is the destination's message in the status the pass started from: a
// pass announces a destination's reason to wait when it differs. (Whether a message
// tells of trouble or of CloudNativePG at work is known while the pass diagnoses, not
// from the status announceTransitions compares.)
func previousMessage(benchmark *v1alpha1.LoggingBenchmark, destination string) string {
	for _, dest := range benchmark.Status.Destinations {
		if dest.Name == destination {
			return dest.Message
		}
	}
	return ""
}
