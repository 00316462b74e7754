package controllers

import (
	"cmp"
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/handback"
	"github.com/logbench/logbench/internal/results"
)

// benchmarkPass is what one reconciliation of a running benchmark observed and decided.
type benchmarkPass struct {
	benchmark *v1alpha1.LoggingBenchmark
	planned   []builders.Run
	// seed ordered the planned runs.
	seed int64
	runs runsObservation
	// clusters holds the benchmark's Clusters by name.
	clusters     map[string]*unstructured.Unstructured
	destinations []v1alpha1.DestinationStatus
	// current is the run executing or waiting for its cluster.
	current *builders.Run
	// phase is the phase while runs remain; done says none will start any more.
	phase v1alpha1.Phase
	done  bool
}

// runsObservation is the state of a benchmark's runs, read from their records
// (LoggingBenchmarkRuns) and, for the runs not recorded yet, from the Jobs of an older
// operator.
type runsObservation struct {
	// Finished holds the result of every run that finished.
	Finished map[results.RunKey]v1alpha1.RepeatResult
	// Recorded holds the finished runs whose LoggingBenchmarkRun exists.
	Recorded map[results.RunKey]bool
	// Started holds every run that has a Job or a record, finished or not.
	Started map[results.RunKey]bool
	// Unrecorded holds the runs whose Job finished and whose result is not recorded yet.
	Unrecorded []finishedRun
	// Arrived holds the run the status assigned, once its runner recorded it: its end is
	// announced.
	Arrived []finishedRun
	// Unstopped holds the Jobs of recorded runs that still hold a pod: a run that failed
	// because its pod could not start.
	Unstopped []*batchv1.Job
	// DestinationFailures holds, by destination, the failure that the records of a failed
	// destination's runs hold.
	DestinationFailures map[string]string
	// Recheck is when to look again at a run whose pod has not started: the kubelet's
	// waiting reasons change no Job, so no watch brings the pass that fails it.
	Recheck time.Duration
}

// finishedRun is a run that finished with its result, not recorded yet.
type finishedRun struct {
	Run    results.RunKey
	Result v1alpha1.RepeatResult
	// Job ran the run for an older operator; nil for a run of a runner, or one that failed
	// with its destination's cluster.
	Job *batchv1.Job
	// Announced says that its end was announced already: by an operator that saved the
	// result in the Job's annotation, before runs had records.
	Announced bool
	// WithDestination says that the run failed with its destination.
	WithDestination bool
}

// observe reads the benchmark's run records, Jobs and Clusters; it writes nothing.
func (r *LoggingBenchmarkReconciler) observe(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) (*benchmarkPass, error) {
	runs, err := r.observeRuns(ctx, benchmark)
	if err != nil {
		return nil, err
	}
	clusters, err := r.ownedClusters(ctx, benchmark)
	if err != nil {
		return nil, err
	}
	seed := scheduleSeed(benchmark)
	pass := &benchmarkPass{
		benchmark:    benchmark,
		planned:      plannedRuns(&benchmark.Spec, seed, runs.Finished),
		seed:         seed,
		runs:         runs,
		clusters:     clusters,
		destinations: destinationStates(benchmark, clusters, runs.DestinationFailures),
		phase:        cmp.Or(benchmark.Status.Phase, v1alpha1.PhasePending),
	}
	for _, dest := range pass.destinations {
		if dest.State == v1alpha1.DestinationFailed {
			pass.failDestinationRuns(dest.Name, dest.Message)
		}
	}
	return pass, nil
}

func (r *LoggingBenchmarkReconciler) ownedClusters(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) (map[string]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(cloudnativepg.ClusterGVK.GroupVersion().WithKind(cloudnativepg.ClusterGVK.Kind + "List"))
	if err := r.List(ctx, list, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(builders.BenchmarkLabels(benchmark.Name))); err != nil {
		return nil, fmt.Errorf("listing the benchmark's CloudNativePG clusters (is CloudNativePG installed?): %w", err)
	}
	clusters := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], benchmark) {
			clusters[list.Items[i].GetName()] = &list.Items[i]
		}
	}
	return clusters, nil
}

// destinationStates derives each destination's state from its cluster; Failed and Deleted
// are final and come from the previous status, or, for a failure whose status write was
// lost to a newer status, from the records of the failed destination's runs (failures).
func destinationStates(
	benchmark *v1alpha1.LoggingBenchmark,
	clusters map[string]*unstructured.Unstructured,
	failures map[string]string,
) []v1alpha1.DestinationStatus {
	previous := map[string]v1alpha1.DestinationStatus{}
	for _, dest := range benchmark.Status.Destinations {
		previous[dest.Name] = dest
	}
	effective := benchmark.Spec.EffectiveDestinations()
	states := make([]v1alpha1.DestinationStatus, 0, len(effective))
	for _, dest := range effective {
		state := v1alpha1.DestinationStatus{
			Name:        dest.Name,
			Type:        dest.Type,
			ClusterName: builders.ClusterName(benchmark.Name, dest.Name),
			State:       v1alpha1.DestinationPending,
		}
		cluster := clusters[state.ClusterName]
		switch before := previous[dest.Name]; {
		case before.State == v1alpha1.DestinationFailed || before.State == v1alpha1.DestinationDeleted:
			state.State, state.Message = before.State, before.Message
		case failures[dest.Name] != "":
			state.State, state.Message = v1alpha1.DestinationFailed, failures[dest.Name]
		case cluster != nil && cloudnativepg.ObserveReadiness(cluster).Ready:
			state.State = v1alpha1.DestinationReady
		case cluster != nil:
			state.State = v1alpha1.DestinationProvisioning
		}
		states = append(states, state)
	}
	return states
}

// assigned reports whether the status the pass started from assigns run to its runner.
func (p *benchmarkPass) assigned(run builders.Run) bool {
	progress := p.benchmark.Status.Progress
	return p.benchmark.Status.Phase == v1alpha1.PhaseRunning && progress.CurrentSince != nil &&
		progress.Current == run.Key().String()
}

// nextRun is the first planned run that has not finished, nil when none is left.
func (p *benchmarkPass) nextRun() *builders.Run {
	for i, run := range p.planned {
		if _, done := p.runs.Finished[run.Key()]; !done {
			return &p.planned[i]
		}
	}
	return nil
}

// hasRunsLeft reports whether a destination has planned runs that have not finished.
func (p *benchmarkPass) hasRunsLeft(destination string) bool {
	for _, run := range p.planned {
		if _, done := p.runs.Finished[run.Key()]; !done && run.Destination.Name == destination {
			return true
		}
	}
	return false
}

// createsClusters reports whether a destination with runs left has no cluster yet: the
// pass may create one.
func (p *benchmarkPass) createsClusters() bool {
	for _, dest := range p.benchmark.Spec.EffectiveDestinations() {
		if p.hasRunsLeft(dest.Name) && p.clusters[builders.ClusterName(p.benchmark.Name, dest.Name)] == nil {
			return true
		}
	}
	return false
}

func (p *benchmarkPass) destination(name string) *v1alpha1.DestinationStatus {
	for i := range p.destinations {
		if p.destinations[i].Name == name {
			return &p.destinations[i]
		}
	}
	return nil
}

// failDestination marks a destination failed, and its unfinished runs with it.
func (p *benchmarkPass) failDestination(state *v1alpha1.DestinationStatus, reason string) {
	state.State = v1alpha1.DestinationFailed
	state.Message = benchstatus.Truncate(reason)
	p.failDestinationRuns(state.Name, state.Message)
}

// failDestinationRuns records the unfinished runs of a failed destination as failed with
// its reason. Their end may complete a ramp's round: the plan is made again.
func (p *benchmarkPass) failDestinationRuns(destination, reason string) {
	for _, run := range p.planned {
		if _, done := p.runs.Finished[run.Key()]; done || run.Destination.Name != destination {
			continue
		}
		p.runs.Finished[run.Key()] = v1alpha1.RepeatResult{Repeat: run.Repeat, Error: reason}
	}
	p.planned = plannedRuns(&p.benchmark.Spec, p.seed, p.runs.Finished)
}

// observeRuns reads the runs of a benchmark from their records and, for the runs not
// recorded yet, from the Jobs of an older operator: the result of a finished Job from its last pod, or from
// the annotation where an operator that wrote no records saved it.
func (r *LoggingBenchmarkReconciler) observeRuns(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) (runsObservation, error) {
	observed := runsObservation{
		Finished:            map[results.RunKey]v1alpha1.RepeatResult{},
		Recorded:            map[results.RunKey]bool{},
		Started:             map[results.RunKey]bool{},
		DestinationFailures: map[string]string{},
	}
	var records v1alpha1.LoggingBenchmarkRunList
	if err := r.List(ctx, &records, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(builders.BenchmarkLabels(benchmark.Name))); err != nil {
		return runsObservation{}, fmt.Errorf("listing the benchmark's LoggingBenchmarkRuns: %w", err)
	}
	for i := range records.Items {
		record := &records.Items[i]
		if !metav1.IsControlledBy(record, benchmark) {
			continue
		}
		key, result := results.Recorded(record)
		observed.Finished[key], observed.Recorded[key], observed.Started[key] = result, true, true
		if reason, failed := builders.DestinationFailure(record); failed {
			observed.DestinationFailures[key.Destination] = reason
		}
		if progress := benchmark.Status.Progress; progress.CurrentSince != nil && progress.Current == key.String() {
			observed.Arrived = append(observed.Arrived, finishedRun{Run: key, Result: result})
		}
	}
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(builders.BenchmarkLabels(benchmark.Name))); err != nil {
		return runsObservation{}, fmt.Errorf("listing the benchmark's Jobs: %w", err)
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if !metav1.IsControlledBy(job, benchmark) {
			continue
		}
		key, err := builders.RunKeyFromLabels(job.Labels)
		if err != nil {
			log.FromContext(ctx).Info("ignoring a Job without run labels", "job", job.Name, "reason", err.Error())
			continue
		}
		observed.Started[key] = true
		finished, failure := jobOutcome(job)
		if observed.Recorded[key] {
			if !finished && (job.Spec.Suspend == nil || !*job.Spec.Suspend) {
				observed.Unstopped = append(observed.Unstopped, job)
			}
			continue
		}
		if saved, ok := job.Annotations[builders.AnnotationResult]; ok {
			result := savedResult(job, key, saved)
			observed.Finished[key] = result
			observed.Unrecorded = append(observed.Unrecorded,
				finishedRun{Run: key, Result: result, Job: job, Announced: true})
			continue
		}
		pod, err := r.latestPod(ctx, job)
		if err != nil {
			return runsObservation{}, err
		}
		if !finished {
			stuck, recheck := unstartablePod(pod, time.Now(), benchmark.Spec.PodStartTimeoutOrDefault())
			if recheck > 0 && (observed.Recheck == 0 || recheck < observed.Recheck) {
				observed.Recheck = recheck
			}
			if stuck != "" {
				result := v1alpha1.RepeatResult{Repeat: key.Repeat, Error: benchstatus.Truncate(stuck)}
				observed.Finished[key] = result
				observed.Unrecorded = append(observed.Unrecorded, finishedRun{Run: key, Result: result, Job: job})
			}
			continue
		}
		message, clientNode := terminationMessage(pod)
		result := handback.FromTermination(message, failure)
		result.Repeat, result.ClientNode = key.Repeat, clientNode
		if result.ServerNode, err = r.primaryNode(ctx, benchmark.Namespace,
			builders.ClusterName(benchmark.Name, key.Destination)); err != nil {
			return runsObservation{}, err
		}
		observed.Finished[key] = result
		observed.Unrecorded = append(observed.Unrecorded, finishedRun{Run: key, Result: result, Job: job})
	}
	return observed, nil
}

// savedResult reads the result a finished Job's annotation holds.
func savedResult(job *batchv1.Job, key results.RunKey, saved string) v1alpha1.RepeatResult {
	result, err := handback.Decode(saved)
	if err != nil {
		result = v1alpha1.RepeatResult{
			Error: fmt.Sprintf("annotation %s of Job %s is unreadable: %v", builders.AnnotationResult, job.Name, err),
		}
	}
	result.Repeat = key.Repeat
	return result
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

// latestPod returns the Job's latest pod, nil when none is left.
func (r *LoggingBenchmarkReconciler) latestPod(ctx context.Context, job *batchv1.Job) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
	}
	var latest *corev1.Pod
	for i := range pods.Items {
		pod := &pods.Items[i]
		if metav1.IsControlledBy(pod, job) &&
			(latest == nil || latest.CreationTimestamp.Before(&pod.CreationTimestamp)) {
			latest = pod
		}
	}
	return latest, nil
}

// terminationMessage returns the agent's termination message in a finished Job's latest
// pod and the node that ran it, or "" when no pod is left.
func terminationMessage(latest *corev1.Pod) (message, node string) {
	if latest == nil {
		return "", ""
	}
	for _, containerStatus := range latest.Status.ContainerStatuses {
		if containerStatus.Name == builders.AgentContainer && containerStatus.State.Terminated != nil {
			return containerStatus.State.Terminated.Message, latest.Spec.NodeName
		}
	}
	return "", latest.Spec.NodeName
}

// pendingRecheck is how often a pending run pod is looked at.
const pendingRecheck = 30 * time.Second

// unstartablePod tells why a run's pod (its runner's, or a running Job's) cannot start:
// at once when its image does not exist, else once one of its containers has waited for
// an unstartable reason, or the scheduler has found no node for it, past timeout
// (spec.podStartTimeout) since the pod's creation; recheck is when to look again at a
// pod still pending, or at a Job whose pod is not created yet (a missing ServiceAccount
// stops its creation), 0 for one that runs.
func unstartablePod(pod *corev1.Pod, now time.Time, timeout time.Duration) (reason string, recheck time.Duration) {
	if pod == nil {
		return "", pendingRecheck
	}
	if pod.Status.Phase != corev1.PodPending {
		return "", 0
	}
	trouble := diagnosePod(pod, nil)
	// A run's placement holds to a primary that stays on its node: no node that takes
	// the pod will come of waiting longer.
	trouble.Unstartable = trouble.Unstartable || trouble.Unschedulable
	giveUp, recheck := unstartableFor(trouble, pod.CreationTimestamp.Time, now, timeout)
	if !giveUp {
		return "", cmp.Or(recheck, pendingRecheck)
	}
	return fmt.Sprintf("the run's pod %s could not start: %s", pod.Name, trouble.Message), 0
}

// runnerFailures is how often a runner's container may fail before the run assigned to
// it fails with the container's last words: a one-off crash is retried, while a runner
// that cannot work (an image without pgbench) is not waited for until the run's deadline.
const runnerFailures = 3

// crashingPod tells why a runner's pod keeps failing: once one of its containers (its
// init container's while the pod is pending) has exited with an error runnerFailures
// times, the last time since the run was assigned at assigned, its exit and last words;
// recheck is when to look again at a running pod whose runner is not ready, since no
// watch brings its restarts (unstartablePod's covers a pending pod), 0 otherwise. A pod
// whose failures all came before the assignment (a long-lived runner that crashed now
// and then) is given its restart: the run fails if it fails again.
func crashingPod(pod *corev1.Pod, assigned time.Time) (reason string, recheck time.Duration) {
	if pod == nil || pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodPending {
		return "", 0
	}
	switch trouble := diagnosePod(pod, nil); {
	case trouble.Crashed && trouble.Failures >= runnerFailures &&
		(trouble.LastFailure.IsZero() || !trouble.LastFailure.Before(assigned)):
		return fmt.Sprintf("the runner's pod %s failed %d times: %s", pod.Name, trouble.Failures, trouble.Message), 0
	case pod.Status.Phase == corev1.PodRunning && !podReady(pod):
		return "", pendingRecheck
	}
	return "", 0
}

// primaryNode is the node of a cluster's primary instance pod, "" when there is none.
func (r *LoggingBenchmarkReconciler) primaryNode(ctx context.Context, namespace, cluster string) (string, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(namespace),
		client.MatchingLabels(cloudnativepg.PrimaryPodLabels(cluster))); err != nil {
		return "", fmt.Errorf("listing the primary pod of cluster %s: %w", cluster, err)
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			return pod.Spec.NodeName, nil
		}
	}
	return "", nil
}
