package controllers

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/schedule"
)

// plannedRuns lists the runs of a benchmark in the order they execute, as far as the
// finished runs decide them (a ramp's next rounds depend on its last).
func plannedRuns(
	spec *v1alpha1.LoggingBenchmarkSpec, seed int64, finished map[results.RunKey]v1alpha1.RepeatResult,
) []builders.Run {
	destinations := map[string]v1alpha1.Destination{}
	for _, dest := range spec.EffectiveDestinations() {
		destinations[dest.Name] = dest
	}
	plan := schedule.Plan(spec, seed, finished)
	runs := make([]builders.Run, 0, len(plan))
	for _, run := range plan {
		runs = append(runs,
			builders.Run{Destination: destinations[run.Destination], Clients: run.Clients, Repeat: run.Repeat})
	}
	return runs
}

// scheduleSeed is the seed that orders a benchmark's runs: the spec's, or one derived
// from the benchmark's UID, so that every pass of every operator process plans the same
// order without having to read it back from the status.
func scheduleSeed(benchmark *v1alpha1.LoggingBenchmark) int64 {
	if seed := benchmark.Spec.Workload.Seed; seed != nil {
		return *seed
	}
	hash := fnv.New64a()
	_, _ = hash.Write([]byte(benchmark.UID))
	return int64(hash.Sum64())
}

// reconcileRuns records the results of the Jobs of an older operator that just finished,
// then advances the next run: waits for its runner (or for such a Job), or for every
// cluster with runs left to be ready, or assigns it to its destination's runner. Runs
// execute one at a time so that they never compete for the nodes' cores, and only once
// every cluster is up, so that none measures beside a cluster being provisioned.
func (r *LoggingBenchmarkReconciler) reconcileRuns(ctx context.Context, pass *benchmarkPass) (ctrl.Result, error) {
	if err := r.recordJobResults(ctx, pass); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.keepCreatedObjects(ctx, pass); err != nil {
		return ctrl.Result{}, err
	}
	next := pass.nextRun()
	if next != nil && pass.runs.Started[next.Key()] {
		// The Job's watch brings the next pass, or the recheck of a pod not started.
		pass.current, pass.phase = next, v1alpha1.PhaseRunning
		return ctrl.Result{RequeueAfter: pass.runs.Recheck}, nil
	}
	if next != nil && pass.assigned(*next) {
		pass.current, pass.phase = next, v1alpha1.PhaseRunning
		return r.superviseRun(ctx, pass, *next)
	}
	images, wait, err := r.reconcileClusters(ctx, pass)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A destination whose cluster failed took its runs with it.
	if next = pass.nextRun(); next == nil {
		pass.current, pass.done = nil, true
		return ctrl.Result{}, nil
	}
	pass.current = next
	// The runners of the ready clusters start while the others still provision.
	if err := r.ensureRunners(ctx, pass, images); err != nil {
		return ctrl.Result{}, err
	}
	if wait > 0 {
		pass.phase = v1alpha1.PhaseProvisioning
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	// The run is assigned by naming it in the status (pass.current, written by setStatus
	// with the time of the assignment), which the runners watch.
	pass.phase = v1alpha1.PhaseRunning
	r.Recorder.Eventf(pass.benchmark, corev1.EventTypeNormal, EventRunStarted,
		"Run %s assigned to runner %s", next.Key(), builders.RunnerName(pass.benchmark.Name, next.Destination.Name))
	return ctrl.Result{}, nil
}

// reconcileClusters reconciles the cluster of every destination with runs left. It
// returns the images of the ready ones and, while some are not ready, how soon the first
// of them times out. Before it creates a cluster, it checks that no object of another
// owner holds a name the benchmark will create (refuseTakenNames), once no object of a
// deleted predecessor of the same name is in the way any more (waitForPredecessor).
func (r *LoggingBenchmarkReconciler) reconcileClusters(
	ctx context.Context, pass *benchmarkPass,
) (images map[string]string, wait time.Duration, err error) {
	if pass.createsClusters() {
		held, err := r.readHeldNames(ctx, pass.benchmark)
		if err != nil {
			return nil, 0, err
		}
		if wait, err := r.waitForPredecessor(ctx, pass, held); err != nil || wait > 0 {
			return nil, wait, err
		}
		if err := refuseTakenNames(pass.benchmark, held); err != nil {
			return nil, 0, err
		}
	}
	images = map[string]string{}
	for _, dest := range pass.benchmark.Spec.EffectiveDestinations() {
		if !pass.hasRunsLeft(dest.Name) {
			continue
		}
		outcome, err := r.reconcileCluster(ctx, pass, dest)
		if err != nil {
			return nil, 0, err
		}
		switch outcome.State {
		case clusterReady:
			images[dest.Name] = outcome.Image
		case clusterWaiting:
			if wait == 0 || outcome.Wait < wait {
				wait = outcome.Wait
			}
		}
	}
	return images, wait, nil
}

// recordJobResults records the result of each Job of an older operator that just
// finished in its LoggingBenchmarkRun, announces the end of those runs and of the runs
// whose runner recorded them, and stops the Jobs of recorded runs that still hold a pod.
// A result that could not be recorded is left out of this pass's status: the next pass
// reads it again.
func (r *LoggingBenchmarkReconciler) recordJobResults(ctx context.Context, pass *benchmarkPass) error {
	for _, arrived := range pass.runs.Arrived {
		r.announceRunFinished(pass.benchmark, arrived)
	}
	err := r.recordRuns(ctx, pass, pass.runs.Unrecorded, func(finished finishedRun, _ bool) {
		if !finished.Announced {
			r.announceRunFinished(pass.benchmark, finished)
		}
		if ended, _ := jobOutcome(finished.Job); !ended {
			pass.runs.Unstopped = append(pass.runs.Unstopped, finished.Job)
		}
	})
	if err != nil {
		return err
	}
	pass.runs.Unrecorded = nil
	for _, job := range pass.runs.Unstopped {
		// A run failed for a pod that could not start: suspending the Job deletes the pod.
		patch := client.MergeFrom(job.DeepCopy())
		job.Spec.Suspend = new(true)
		if err := r.Patch(ctx, job, patch); err != nil {
			return fmt.Errorf("stopping Job %s: %w", job.Name, err)
		}
	}
	pass.runs.Unstopped = nil
	return nil
}

// recordFailedRuns records the runs the pass counts as finished without a record: those
// of a destination whose cluster failed, which never reach a runner. Each is counted as
// failed once, when its record is created.
func (r *LoggingBenchmarkReconciler) recordFailedRuns(ctx context.Context, pass *benchmarkPass) error {
	var unrecorded []finishedRun
	for _, run := range pass.planned {
		key := run.Key()
		if result, done := pass.runs.Finished[key]; done && !pass.runs.Recorded[key] {
			unrecorded = append(unrecorded, finishedRun{Run: key, Result: result, WithDestination: true})
		}
	}
	return r.recordRuns(ctx, pass, unrecorded, func(_ finishedRun, created bool) {
		if created {
			countRun(pass.benchmark, outcomeFailed)
		}
	})
}

// recordRuns writes the LoggingBenchmarkRun of each finished run, in order, and calls
// recorded after each with the result recorded and whether this pass created the record.
// The runs from the first that could not be recorded on are left out of the pass's
// finished runs, so that the status never counts a run without its record.
func (r *LoggingBenchmarkReconciler) recordRuns(
	ctx context.Context, pass *benchmarkPass, runs []finishedRun, recorded func(finished finishedRun, created bool),
) error {
	for i, finished := range runs {
		created, err := r.recordRun(ctx, pass, finished)
		if err != nil {
			for _, unrecorded := range runs[i:] {
				delete(pass.runs.Finished, unrecorded.Run)
			}
			return err
		}
		finished.Result = pass.runs.Finished[finished.Run]
		recorded(finished, created)
	}
	return nil
}

// recordRun creates the LoggingBenchmarkRun of a finished run. A record that exists
// already was written by the run's runner, or by an earlier pass that the cache had not
// caught up with: the result it holds is the one that counts, and stays.
func (r *LoggingBenchmarkReconciler) recordRun(
	ctx context.Context, pass *benchmarkPass, finished finishedRun,
) (created bool, err error) {
	record := builders.RunRecord(pass.benchmark, finished.Run, finished.Result)
	if finished.WithDestination {
		builders.FailedWithDestination(record)
	}
	created, err = ensureOwned(ctx, r, pass.benchmark, record, controlledBy, nil)
	if err != nil {
		return false, fmt.Errorf("recording run %s: %w", finished.Run, err)
	}
	if !created {
		if err := r.apiReader().Get(ctx, client.ObjectKeyFromObject(record), record); err != nil {
			return false, fmt.Errorf("reading the record of run %s: %w", finished.Run, err)
		}
		_, pass.runs.Finished[finished.Run] = results.Recorded(record)
	}
	pass.runs.Recorded[finished.Run] = true
	return created, nil
}

// ensureRunners makes sure that the runner of every destination with runs left whose
// cluster is ready (images) exists, so that the next runs start while this one runs or
// the other clusters start.
func (r *LoggingBenchmarkReconciler) ensureRunners(
	ctx context.Context, pass *benchmarkPass, images map[string]string,
) error {
	if len(images) == 0 {
		return nil
	}
	if err := r.reconcileAgentAccess(ctx, pass.benchmark); err != nil {
		return err
	}
	for _, dest := range pass.benchmark.Spec.EffectiveDestinations() {
		if image, ready := images[dest.Name]; ready && pass.hasRunsLeft(dest.Name) {
			if err := r.ensureRunner(ctx, pass.benchmark, dest, image); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureRunner creates the runner of a destination, when missing, to run the cluster's
// image. An existing runner is left as it is: its pod may be running a run.
func (r *LoggingBenchmarkReconciler) ensureRunner(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, clusterImage string,
) error {
	runner, err := builders.Runner(benchmark, dest, builders.RunnerInput{
		ClusterImage: clusterImage, InstallerImage: r.AgentImage, PullSecrets: r.ImagePullSecrets,
	})
	if err != nil {
		return err
	}
	_, err = ensureOwned(ctx, r, benchmark, runner, controlledBy, nil)
	return err
}

// superviseRun watches over the assigned run until its runner records it: it restores
// the runner if it was deleted, and records the run failed when the runner's pod cannot
// start or keeps failing, or when the run's deadline passed unrecorded. The record's
// watch brings the pass that assigns the next run; requeued for the recheck of a pod not
// started or not ready, or the deadline.
func (r *LoggingBenchmarkReconciler) superviseRun(
	ctx context.Context, pass *benchmarkPass, run builders.Run,
) (ctrl.Result, error) {
	benchmark := pass.benchmark
	cluster := pass.clusters[builders.ClusterName(benchmark.Name, run.Destination.Name)]
	if cluster != nil {
		if image := cloudnativepg.ObserveReadiness(cluster).Image; image != "" {
			if err := r.ensureRunner(ctx, benchmark, run.Destination, image); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	pod, err := r.latestRunnerPod(ctx, benchmark, run.Destination.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	stuck, recheck := unstartablePod(pod, now, benchmark.Spec.PodStartTimeoutOrDefault())
	assigned := benchmark.Status.Progress.CurrentSince.Time
	crashing, crashRecheck := crashingPod(pod, assigned)
	left := builders.RunDeadline(&benchmark.Spec) - now.Sub(assigned)
	switch {
	case stuck != "":
		return ctrl.Result{}, r.failAssignedRun(ctx, pass, run, stuck)
	case crashing != "":
		return ctrl.Result{}, r.failAssignedRun(ctx, pass, run, crashing)
	case left <= 0:
		return ctrl.Result{}, r.failAssignedRun(ctx, pass, run, fmt.Sprintf(
			"the runner did not record the run within %s of its assignment", builders.RunDeadline(&benchmark.Spec)))
	}
	for _, wait := range []time.Duration{recheck, crashRecheck} {
		if wait > 0 {
			left = min(left, wait)
		}
	}
	return ctrl.Result{RequeueAfter: left}, nil
}

// failAssignedRun records the assigned run failed for reason, which ends it: a runner
// that still runs it finds it recorded. The record's watch brings the pass that assigns
// the next run.
func (r *LoggingBenchmarkReconciler) failAssignedRun(
	ctx context.Context, pass *benchmarkPass, run builders.Run, reason string,
) error {
	failed := finishedRun{
		Run: run.Key(), Result: v1alpha1.RepeatResult{Repeat: run.Repeat, Error: benchstatus.Truncate(reason)},
	}
	pass.runs.Finished[failed.Run] = failed.Result
	err := r.recordRuns(ctx, pass, []finishedRun{failed}, func(finished finishedRun, _ bool) {
		r.announceRunFinished(pass.benchmark, finished)
	})
	// The run's end may complete a ramp's round.
	pass.planned = plannedRuns(&pass.benchmark.Spec, pass.seed, pass.runs.Finished)
	pass.current = nil
	return err
}

// latestRunnerPod returns the latest pod of a destination's runner that is not being
// deleted, nil when there is none.
func (r *LoggingBenchmarkReconciler) latestRunnerPod(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, destination string,
) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(builders.RunnerLabels(benchmark.Name, destination))); err != nil {
		return nil, fmt.Errorf("listing the pods of runner %s: %w", builders.RunnerName(benchmark.Name, destination), err)
	}
	var latest *corev1.Pod
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp == nil && (latest == nil || latest.CreationTimestamp.Before(&pod.CreationTimestamp)) {
			latest = pod
		}
	}
	return latest, nil
}

// deleteRunners deletes the runners of a benchmark that has no runs left; the garbage
// collector deletes their pods.
func (r *LoggingBenchmarkReconciler) deleteRunners(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) error {
	return r.deleteControlledList(ctx, benchmark, &appsv1.DeploymentList{},
		builders.BenchmarkRunnerLabels(benchmark.Name), "runner",
		client.PropagationPolicy(metav1.DeletePropagationBackground))
}
