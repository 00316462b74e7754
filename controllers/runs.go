package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/results"
)

// maxErrorLength bounds the error of a run kept in the status.
const maxErrorLength = 1024

// runsObservation is the state of a benchmark's runs, read from its Jobs.
type runsObservation struct {
	// Finished holds the result of every run whose Job finished.
	Finished map[results.RunKey]v1alpha1.RepeatResult
	// Started holds every run that has a Job, finished or not.
	Started map[results.RunKey]bool
}

// observeRuns reads the runs of a benchmark from its Jobs, copying the result of Jobs that
// just finished from their pod into their annotation.
func (r *LoggingBenchmarkReconciler) observeRuns(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) (runsObservation, error) {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(benchmarkLabels(benchmark.Name))); err != nil {
		return runsObservation{}, fmt.Errorf("listing the benchmark's Jobs: %w", err)
	}
	observed := runsObservation{
		Finished: map[results.RunKey]v1alpha1.RepeatResult{},
		Started:  map[results.RunKey]bool{},
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if !metav1.IsControlledBy(job, benchmark) {
			continue
		}
		key, err := runKeyFromLabels(job.Labels)
		if err != nil {
			log.FromContext(ctx).Info("ignoring a Job without run labels", "job", job.Name, "reason", err.Error())
			continue
		}
		observed.Started[key] = true
		result, finished, err := r.finishedRunResult(ctx, benchmark, job, key)
		if err != nil {
			return runsObservation{}, err
		}
		if finished {
			observed.Finished[key] = result
		}
	}
	return observed, nil
}

// finishedRunResult returns the result of a finished Job: from its annotation, or else
// from its last pod, then saved in the annotation.
func (r *LoggingBenchmarkReconciler) finishedRunResult(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, job *batchv1.Job, key results.RunKey,
) (v1alpha1.RepeatResult, bool, error) {
	if saved, ok := job.Annotations[AnnotationResult]; ok {
		result, err := agent.DecodeResult(saved)
		if err != nil {
			result = v1alpha1.RepeatResult{Error: fmt.Sprintf("annotation %s of Job %s is unreadable: %v", AnnotationResult, job.Name, err)}
		}
		result.Repeat = key.Repeat
		return result, true, nil
	}
	finished, failure := jobOutcome(job)
	if !finished {
		return v1alpha1.RepeatResult{}, false, nil
	}
	message, err := r.terminationMessage(ctx, job)
	if err != nil {
		return v1alpha1.RepeatResult{}, false, err
	}
	result := resultFromTermination(message, failure)
	result.Repeat = key.Repeat
	encoded, err := json.Marshal(result)
	if err != nil {
		return v1alpha1.RepeatResult{}, false, err
	}
	patch := client.MergeFrom(job.DeepCopy())
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[AnnotationResult] = string(encoded)
	if err := r.Patch(ctx, job, patch); err != nil {
		return v1alpha1.RepeatResult{}, false, fmt.Errorf("saving the result of Job %s: %w", job.Name, err)
	}
	r.recordRunFinished(benchmark, job, result)
	return result, true, nil
}

// jobOutcome tells whether a Job finished and, when it failed, why.
func jobOutcome(job *batchv1.Job) (finished bool, failure string) {
	for _, condition := range job.Status.Conditions {
		if condition.Status != corev1.ConditionTrue {
			continue
		}
		switch condition.Type {
		case batchv1.JobComplete:
			return true, ""
		case batchv1.JobFailed:
			return true, fmt.Sprintf("Job failed (%s): %s", condition.Reason, condition.Message)
		}
	}
	return false, ""
}

// terminationMessage returns the agent's termination message in the Job's latest pod, or
// "" when no pod is left.
func (r *LoggingBenchmarkReconciler) terminationMessage(ctx context.Context, job *batchv1.Job) (string, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
	}
	var latest *corev1.Pod
	for i := range pods.Items {
		pod := &pods.Items[i]
		if metav1.IsControlledBy(pod, job) &&
			(latest == nil || latest.CreationTimestamp.Before(&pod.CreationTimestamp)) {
			latest = pod
		}
	}
	if latest == nil {
		return "", nil
	}
	for _, status := range latest.Status.ContainerStatuses {
		if status.Name == agentContainer && status.State.Terminated != nil {
			return status.State.Terminated.Message, nil
		}
	}
	return "", nil
}

// resultFromTermination turns the termination message of a finished Job's agent into the
// run's result. failure is empty when the Job completed, else why it failed.
func resultFromTermination(message, failure string) v1alpha1.RepeatResult {
	result, decodeErr := agent.DecodeResult(message)
	switch {
	case failure == "" && decodeErr == nil:
		return result
	case failure == "" && strings.TrimSpace(message) == "":
		return v1alpha1.RepeatResult{Error: "the agent completed but its pod, holding the result, is gone"}
	case failure == "":
		return v1alpha1.RepeatResult{Error: truncate("the agent completed with an unreadable result: " + message)}
	case decodeErr == nil && result.Error != "":
		return v1alpha1.RepeatResult{Error: truncate(result.Error)}
	case decodeErr != nil && strings.TrimSpace(message) != "":
		// Not the agent's JSON: a crash or the runtime's own message says more than the Job.
		return v1alpha1.RepeatResult{Error: truncate(strings.TrimSpace(message))}
	default:
		return v1alpha1.RepeatResult{Error: truncate(failure)}
	}
}

// truncate bounds a message kept in the status, without splitting a character.
func truncate(message string) string {
	if len(message) <= maxErrorLength {
		return message
	}
	cut := maxErrorLength
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "…"
}
