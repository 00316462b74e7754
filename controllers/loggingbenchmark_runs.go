package controllers

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
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

// reconcileRuns records the results of the Jobs that just finished, then advances the next
// run: waits for its Job, or for every cluster with runs left to be ready, or starts its
// Job. Runs execute one at a time so that they never compete for the nodes' cores, and
// only once every cluster is up, so that none measures beside a cluster being
// provisioned.
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
	if wait > 0 {
		pass.phase = v1alpha1.PhaseProvisioning
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	pass.phase = v1alpha1.PhaseRunning
	return ctrl.Result{}, r.startRun(ctx, pass, *next, images[next.Destination.Name])
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

// recordJobResults records the result of each Job that just finished in its
// LoggingBenchmarkRun, which outlives the Job and its pod, announces the run's end, and
// stops the Jobs of recorded runs that still hold a pod. A result that could not be
// recorded is left out of this pass's status: the next pass reads it again.
func (r *LoggingBenchmarkReconciler) recordJobResults(ctx context.Context, pass *benchmarkPass) error {
	err := r.recordRuns(ctx, pass, pass.runs.Unrecorded, func(finished finishedRun) {
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
// of a destination whose cluster failed, which end without a Job. Each is counted as
// failed once, when its record is created.
func (r *LoggingBenchmarkReconciler) recordFailedRuns(ctx context.Context, pass *benchmarkPass) error {
	var unrecorded []finishedRun
	for _, run := range pass.planned {
		key := run.Key()
		if result, done := pass.runs.Finished[key]; done && !pass.runs.Recorded[key] {
			unrecorded = append(unrecorded, finishedRun{Run: key, Result: result})
		}
	}
	return r.recordRuns(ctx, pass, unrecorded, func(finishedRun) {})
}

// recordRuns writes the LoggingBenchmarkRun of each finished run, in order, and calls
// recorded after each. The runs from the first that could not be recorded on are left
// out of the pass's finished runs, so that the status never counts a run without its
// record.
func (r *LoggingBenchmarkReconciler) recordRuns(
	ctx context.Context, pass *benchmarkPass, runs []finishedRun, recorded func(finishedRun),
) error {
	for i, finished := range runs {
		if err := r.recordRun(ctx, pass, finished); err != nil {
			for _, unrecorded := range runs[i:] {
				delete(pass.runs.Finished, unrecorded.Run)
			}
			return err
		}
		recorded(finished)
	}
	return nil
}

// recordRun creates the LoggingBenchmarkRun of a finished run. A record that exists
// already was written by an earlier pass that the cache had not caught up with: the
// result it holds is the one the status counted, and stays.
func (r *LoggingBenchmarkReconciler) recordRun(ctx context.Context, pass *benchmarkPass, finished finishedRun) error {
	record := builders.RunRecord(pass.benchmark, finished.Run, finished.Result)
	created, err := ensureOwned(ctx, r, pass.benchmark, record, controlledBy, nil)
	if err != nil {
		return fmt.Errorf("recording run %s: %w", finished.Run, err)
	}
	if !created {
		if err := r.apiReader().Get(ctx, client.ObjectKeyFromObject(record), record); err != nil {
			return fmt.Errorf("reading the record of run %s: %w", finished.Run, err)
		}
		_, pass.runs.Finished[finished.Run] = results.Recorded(record)
	}
	pass.runs.Recorded[finished.Run] = true
	if created && finished.Job == nil {
		countRun(pass.benchmark, outcomeFailed)
	}
	return nil
}

// startRun creates the Job of a run; its deterministic name makes a second creation fail
// rather than run twice.
func (r *LoggingBenchmarkReconciler) startRun(
	ctx context.Context,
	pass *benchmarkPass,
	run builders.Run,
	clusterImage string,
) error {
	benchmark := pass.benchmark
	if err := r.reconcileAgentAccess(ctx, benchmark); err != nil {
		return err
	}
	job, err := builders.Job(benchmark, run, builders.JobInput{
		ClusterName:    builders.ClusterName(benchmark.Name, run.Destination.Name),
		ClusterImage:   clusterImage,
		InstallerImage: r.AgentImage,
		PullSecrets:    r.ImagePullSecrets,
	})
	if err != nil {
		return err
	}
	pass.runs.Started[run.Key()] = true
	if created, err := ensureOwned(ctx, r, benchmark, job, controlledBy, nil); err != nil || !created {
		return err
	}
	r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventRunStarted,
		"Run %s started as Job %s", run.Key(), job.Name)
	return nil
}
