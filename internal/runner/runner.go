// Package runner is the long-lived agent of one destination's cluster: it watches its
// LoggingBenchmark, runs each run the operator assigns to its destination in
// status.progress.current, and records the result as the run's LoggingBenchmarkRun
// before it takes the next one. A run whose record exists is never run again, so a
// replaced runner pod resumes at the first unfinished run.
package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/results"
)

// Attempts is how many times a run is tried before it is recorded failed.
const Attempts = 3

// RunFunc performs one run: agent.Run in a pod.
type RunFunc func(context.Context, agent.Request) (v1alpha1.RepeatResult, error)

// Runner runs the runs its benchmark assigns to Template's destination, one at a time.
type Runner struct {
	// Client reads and watches the benchmark and creates its runs' records.
	Client client.WithWatch
	// Template is the request of every run but its clients and repeat; it names the
	// benchmark, its namespace and the destination.
	Template agent.Request
	// Run performs one attempt of a run.
	Run RunFunc
	// Pod is the name of the runner's pod, whose node every run's result names.
	Pod string
	// RetryDelay separates the attempts of a run, and the retries of its record.
	RetryDelay time.Duration
	Log        logr.Logger
}

// Start runs the assigned runs until ctx ends. A run interrupted by ctx is left
// unrecorded: the runner that replaces this one runs it again.
func (r *Runner) Start(ctx context.Context) error {
	for {
		benchmark, run, err := r.nextRun(ctx)
		if err != nil {
			return ignoreCanceled(ctx, err)
		}
		result, finished := r.attempt(ctx, run)
		if !finished {
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Info("run recorded or withdrawn elsewhere: stopped", "run", run.String())
			continue
		}
		if err := r.record(ctx, benchmark, run, result); err != nil {
			return ignoreCanceled(ctx, err)
		}
	}
}

// nextRun waits until the benchmark assigns a run of the runner's destination that has
// no record yet, and returns it with the benchmark.
func (r *Runner) nextRun(ctx context.Context) (*v1alpha1.LoggingBenchmark, results.RunKey, error) {
	var run results.RunKey
	benchmark, err := r.waitFor(ctx, func(benchmark *v1alpha1.LoggingBenchmark) (bool, error) {
		var assigned bool
		if run, assigned = r.assigned(benchmark); !assigned {
			return false, nil
		}
		recorded, err := r.recorded(ctx, run)
		return !recorded, err
	})
	return benchmark, run, err
}

// assigned returns the run benchmark assigns to the runner's destination, if any.
func (r *Runner) assigned(benchmark *v1alpha1.LoggingBenchmark) (results.RunKey, bool) {
	if benchmark == nil || benchmark.DeletionTimestamp != nil || benchmark.Status.Phase != v1alpha1.PhaseRunning {
		return results.RunKey{}, false
	}
	run, err := results.ParseRunKey(benchmark.Status.Progress.Current)
	if err != nil || run.Destination != r.Template.Destination.Name {
		return results.RunKey{}, false
	}
	return run, true
}

// attempt runs run up to Attempts times and returns its result, or the last attempt's
// error as a failed result, with the errors of the attempts that failed before it. It
// stops, unfinished, when ctx ends, when the run is recorded by someone else (the
// operator, past the run's deadline) or when the benchmark goes.
func (r *Runner) attempt(ctx context.Context, run results.RunKey) (v1alpha1.RepeatResult, bool) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	withdrawn := make(chan struct{})
	go func() {
		_, err := r.waitFor(runCtx, func(benchmark *v1alpha1.LoggingBenchmark) (bool, error) {
			if benchmark == nil || benchmark.DeletionTimestamp != nil {
				return true, nil
			}
			return r.recorded(runCtx, run)
		})
		if err == nil {
			close(withdrawn)
			stop()
		}
	}()

	request := r.Template.For(run.Clients, run.Repeat)
	var failed []string
	for attempt := 1; attempt <= Attempts; attempt++ {
		r.Log.Info("running", "run", run.String(), "attempt", attempt)
		result, err := r.Run(runCtx, request)
		if err == nil {
			result.FailedAttempts = failed
			return result, true
		}
		if runCtx.Err() != nil {
			break
		}
		r.Log.Info("run attempt failed", "run", run.String(), "attempt", attempt, "error", err.Error())
		failed = append(failed, benchstatus.Truncate(err.Error()))
		if attempt < Attempts && sleep(runCtx, r.RetryDelay) != nil {
			break
		}
	}
	select {
	case <-withdrawn:
		return v1alpha1.RepeatResult{}, false
	default:
	}
	if ctx.Err() != nil || len(failed) == 0 {
		return v1alpha1.RepeatResult{}, false
	}
	last := len(failed) - 1
	return v1alpha1.RepeatResult{Error: failed[last], FailedAttempts: failed[:last:last]}, true
}

// record creates the run's LoggingBenchmarkRun, retrying until it exists or ctx ends:
// the result is durable before the runner takes the next run. A record that exists
// already holds the result the operator counted.
func (r *Runner) record(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, run results.RunKey, result v1alpha1.RepeatResult,
) error {
	for {
		alreadyRecorded, err := r.create(ctx, benchmark, run, result)
		if err == nil {
			r.Log.Info("recorded", "run", run.String(), "failed", result.Error != "", "alreadyRecorded", alreadyRecorded)
			return nil
		}
		if denied(err) {
			return fmt.Errorf("recording run %s: %w", run, err)
		}
		r.Log.Info("recording the run failed, retrying", "run", run.String(), "error", err.Error())
		if err := sleep(ctx, r.RetryDelay); err != nil {
			return err
		}
	}
}

// create creates the run's LoggingBenchmarkRun holding result and where the run ran.
func (r *Runner) create(
	ctx context.Context, benchmark *v1alpha1.LoggingBenchmark, run results.RunKey, result v1alpha1.RepeatResult,
) (alreadyRecorded bool, err error) {
	if result.ClientNode, result.ServerNode, err = r.nodes(ctx); err != nil {
		return false, err
	}
	record := builders.RunRecord(benchmark, run, result)
	// Without blockOwnerDeletion, which would need the right to update the benchmark's
	// finalizers: the garbage collector deletes the record with its benchmark anyway.
	owner := metav1.NewControllerRef(benchmark, v1alpha1.GroupVersion.WithKind("LoggingBenchmark"))
	owner.BlockOwnerDeletion = nil
	record.OwnerReferences = []metav1.OwnerReference{*owner}
	err = r.Client.Create(ctx, record)
	if apierrors.IsAlreadyExists(err) {
		return true, nil
	}
	return false, err
}

// nodes returns the node of the runner's pod, where pgbench ran, and that of the
// cluster's primary as the run ended, "" when it has none: a failover moves it.
func (r *Runner) nodes(ctx context.Context) (clientNode, serverNode string, err error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Template.Namespace, Name: r.Pod}, pod); err != nil {
		return "", "", fmt.Errorf("reading the runner's pod %s: %w", r.Pod, err)
	}
	var primaries corev1.PodList
	if err := r.Client.List(ctx, &primaries, client.InNamespace(r.Template.Namespace),
		client.MatchingLabels(cloudnativepg.PrimaryPodLabels(r.Template.ClusterName))); err != nil {
		return "", "", fmt.Errorf("listing the primary pod of cluster %s: %w", r.Template.ClusterName, err)
	}
	for _, primary := range primaries.Items {
		if primary.DeletionTimestamp == nil {
			return pod.Spec.NodeName, primary.Spec.NodeName, nil
		}
	}
	return pod.Spec.NodeName, "", nil
}

// recorded says whether run's LoggingBenchmarkRun exists.
func (r *Runner) recorded(ctx context.Context, run results.RunKey) (bool, error) {
	key := client.ObjectKey{Namespace: r.Template.Namespace, Name: builders.RunRecordName(r.Template.Benchmark, run)}
	err := r.Client.Get(ctx, key, &v1alpha1.LoggingBenchmarkRun{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// waitFor returns the benchmark once done says so of it; done is given nil while the
// benchmark does not exist. The watch opens before the read, so that no change between
// them is missed; it is opened again whenever it ends or fails, unless it is denied.
func (r *Runner) waitFor(
	ctx context.Context, done func(*v1alpha1.LoggingBenchmark) (bool, error),
) (*v1alpha1.LoggingBenchmark, error) {
	for {
		benchmark, ok, err := r.watchUntil(ctx, done)
		if ok || ctx.Err() != nil {
			return benchmark, ctx.Err()
		}
		if denied(err) {
			return nil, err
		}
		switch {
		case apierrors.IsTimeout(err):
			// "Too large resource version": the API server's watch cache lags behind its
			// storage, and the server waited for it already. Reading and watching again at
			// once sees the changes soonest.
			r.Log.V(1).Info("watching the benchmark timed out, watching again", "error", err.Error())
		case err != nil:
			r.Log.Info("watching the benchmark failed, retrying", "error", err.Error())
			if err := sleep(ctx, r.RetryDelay); err != nil {
				return nil, err
			}
		}
	}
}

// watchUntil watches the benchmark until done says so of it, and returns it then; ok is
// false when the watch ends first.
func (r *Runner) watchUntil(
	ctx context.Context, done func(*v1alpha1.LoggingBenchmark) (bool, error),
) (benchmark *v1alpha1.LoggingBenchmark, ok bool, err error) {
	events, err := r.Client.Watch(ctx, &v1alpha1.LoggingBenchmarkList{}, client.InNamespace(r.Template.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", r.Template.Benchmark)})
	if err != nil {
		return nil, false, fmt.Errorf("watching benchmark %s: %w", r.Template.Benchmark, err)
	}
	defer events.Stop()
	benchmark = &v1alpha1.LoggingBenchmark{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: r.Template.Namespace, Name: r.Template.Benchmark}, benchmark)
	if apierrors.IsNotFound(err) {
		benchmark = nil
	} else if err != nil {
		return nil, false, fmt.Errorf("reading benchmark %s: %w", r.Template.Benchmark, err)
	}
	benchmark = r.own(benchmark)
	for {
		if ok, err := done(benchmark); ok || err != nil {
			return benchmark, ok, err
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case event, open := <-events.ResultChan():
			if !open {
				return nil, false, nil
			}
			if benchmark, err = r.benchmarkOf(event, benchmark); err != nil {
				return nil, false, err
			}
		}
	}
}

// benchmarkOf is the benchmark as event leaves it; last is what it was before.
func (r *Runner) benchmarkOf(event watch.Event, last *v1alpha1.LoggingBenchmark) (*v1alpha1.LoggingBenchmark, error) {
	if event.Type == watch.Error {
		return nil, fmt.Errorf("watching benchmark %s: %w", r.Template.Benchmark, apierrors.FromObject(event.Object))
	}
	benchmark, ok := event.Object.(*v1alpha1.LoggingBenchmark)
	if !ok || benchmark.Name != r.Template.Benchmark {
		return last, nil
	}
	if event.Type == watch.Deleted {
		return nil, nil
	}
	return r.own(benchmark), nil
}

// own is benchmark when it is the runner's, nil when it is another of the same name:
// to the runner of a deleted benchmark, its successor is no benchmark at all.
func (r *Runner) own(benchmark *v1alpha1.LoggingBenchmark) *v1alpha1.LoggingBenchmark {
	if benchmark == nil || r.Template.BenchmarkUID != "" && benchmark.UID != r.Template.BenchmarkUID {
		return nil
	}
	return benchmark
}

// denied tells an error that retrying does not mend: the runner's ServiceAccount lacks
// a right. The runner then stops with it, and its pod's restarts show it to the
// operator's diagnosis.
func denied(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// sleep waits for d or the end of ctx, and says which.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// ignoreCanceled reports err unless it is ctx's end: the runner's normal stop.
func ignoreCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
