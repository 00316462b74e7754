package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// TestRunEventsSayWhatEarlierAttemptsMet: the event of a run measured after failed
// attempts says on which attempt, and what the one before it met; a failed run's event
// gives its error.
func TestRunEventsSayWhatEarlierAttemptsMet(t *testing.T) {
	recorder := record.NewFakeRecorder(10)
	r := &LoggingBenchmarkReconciler{Recorder: recorder}
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "events-test", Name: "retried"}}
	t.Cleanup(func() { forgetBenchmarkMetrics(benchmark.Namespace, benchmark.Name) })
	for _, tc := range []struct {
		clients int32
		result  v1alpha1.RepeatResult
		want    string
	}{
		{clients: 1, result: v1alpha1.RepeatResult{TPS: 100}, want: "Normal RunSucceeded Run csvlog/1/1 succeeded: 100.0 TPS"},
		{clients: 2, result: v1alpha1.RepeatResult{TPS: 200, FailedAttempts: []string{"refused", "the primary restarted"}},
			want: "Normal RunSucceeded Run csvlog/2/1 succeeded: 200.0 TPS, on attempt 3; attempt 2 failed: the primary restarted"},
		{clients: 4, result: v1alpha1.RepeatResult{Error: "pgbench exited with code 1", FailedAttempts: []string{"refused"}},
			want: "Warning RunFailed Run csvlog/4/1 failed: pgbench exited with code 1"},
	} {
		run := results.RunKey{Destination: "csvlog", Clients: tc.clients, Repeat: 1}
		r.announceRunFinished(benchmark, finishedRun{Run: run, Result: tc.result})
		select {
		case got := <-recorder.Events:
			if got != tc.want {
				t.Errorf("event %q, want %q", got, tc.want)
			}
		default:
			t.Errorf("no event for run %s", run)
		}
	}
}
