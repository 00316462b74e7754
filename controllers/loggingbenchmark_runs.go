package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// plannedRun is one pgbench execution of a benchmark.
type plannedRun struct {
	Destination v1alpha1.Destination
	Clients     int32
	Repeat      int32
}

func (r plannedRun) key() results.RunKey {
	return results.RunKey{Destination: r.Destination.Name, Clients: r.Clients, Repeat: r.Repeat}
}

// plannedRuns lists the runs of a benchmark in the order they execute.
func plannedRuns(spec *v1alpha1.LoggingBenchmarkSpec) []plannedRun {
	destinations := map[string]v1alpha1.Destination{}
	for _, dest := range spec.EffectiveDestinations() {
		destinations[dest.Name] = dest
	}
	plan := results.Plan(spec)
	runs := make([]plannedRun, 0, len(plan))
	for _, run := range plan {
		runs = append(runs, plannedRun{Destination: destinations[run.Destination], Clients: run.Clients, Repeat: run.Repeat})
	}
	return runs
}

// reconcileRuns saves the results of the Jobs that just finished, then advances the first
// unfinished run: waits for its Job, or provisions its cluster, or starts its Job. Runs
// execute one at a time so that they never compete for the nodes' cores.
func (r *LoggingBenchmarkReconciler) reconcileRuns(ctx context.Context, pass *benchmarkPass) (ctrl.Result, error) {
	if err := r.saveRunResults(ctx, pass); err != nil {
		return ctrl.Result{}, err
	}
	for _, run := range pass.planned {
		if _, done := pass.runs.Finished[run.key()]; done {
			continue
		}
		pass.current = &run
		if pass.runs.Started[run.key()] {
			// The Job's watch brings the next pass.
			pass.phase = v1alpha1.PhaseRunning
			return ctrl.Result{}, nil
		}
		outcome, err := r.reconcileCluster(ctx, pass, run.Destination)
		if err != nil {
			return ctrl.Result{}, err
		}
		switch outcome.State {
		case clusterFailed:
			continue
		case clusterWaiting:
			pass.phase = v1alpha1.PhaseProvisioning
			return ctrl.Result{RequeueAfter: outcome.Wait}, nil
		}
		pass.phase = v1alpha1.PhaseRunning
		return ctrl.Result{}, r.startRun(ctx, pass, run, outcome.Image)
	}
	pass.current = nil
	pass.done = true
	return ctrl.Result{}, nil
}

// saveRunResults copies the result of each Job that just finished from its pod into its
// annotation, where it survives the pod's garbage collection, and announces the run's
// end. A result that could not be saved is left out of this pass's status: the next pass
// reads it again.
func (r *LoggingBenchmarkReconciler) saveRunResults(ctx context.Context, pass *benchmarkPass) error {
	for i, finished := range pass.runs.Unsaved {
		if err := r.saveRunResult(ctx, finished); err != nil {
			for _, unsaved := range pass.runs.Unsaved[i:] {
				delete(pass.runs.Finished, unsaved.Run)
			}
			return err
		}
		r.announceRunFinished(pass.benchmark, finished)
	}
	pass.runs.Unsaved = nil
	return nil
}

func (r *LoggingBenchmarkReconciler) saveRunResult(ctx context.Context, finished finishedJob) error {
	encoded, err := json.Marshal(finished.Result)
	if err != nil {
		return err
	}
	job := finished.Job
	patch := client.MergeFrom(job.DeepCopy())
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[AnnotationResult] = string(encoded)
	if err := r.Patch(ctx, job, patch); err != nil {
		return fmt.Errorf("saving the result of Job %s: %w", job.Name, err)
	}
	return nil
}

// startRun creates the Job of a run; its deterministic name makes a second creation fail
// rather than run twice.
func (r *LoggingBenchmarkReconciler) startRun(
	ctx context.Context,
	pass *benchmarkPass,
	run plannedRun,
	clusterImage string,
) error {
	benchmark := pass.benchmark
	if err := r.reconcileAgentAccess(ctx, benchmark); err != nil {
		return err
	}
	job, err := buildJob(benchmark, run, jobInput{
		ClusterName:    clusterName(benchmark.Name, run.Destination.Name),
		ClusterImage:   clusterImage,
		InstallerImage: r.AgentImage,
	})
	if err != nil {
		return err
	}
	if err := ctrl.SetControllerReference(benchmark, job, r.Scheme); err != nil {
		return err
	}
	pass.runs.Started[run.key()] = true
	if err := r.Create(ctx, job); apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("creating Job %s: %w", job.Name, err)
	}
	r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventRunStarted,
		"Run %s started as Job %s", run.key(), job.Name)
	return nil
}
