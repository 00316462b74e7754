// Package controllers holds the LoggingBenchmark reconciler: it provisions one
// CloudNativePG cluster per destination, runs the benchmark's pgbench executions one at a
// time as agent Jobs, and rebuilds the status from those Jobs on every pass.
package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Event reasons.
const (
	EventClusterCreated    = "ClusterCreated"
	EventClusterReady      = "ClusterReady"
	EventClusterFailed     = "ClusterFailed"
	EventClustersDeleted   = "ClustersDeleted"
	EventRunStarted        = "RunStarted"
	EventRunSucceeded      = "RunSucceeded"
	EventRunFailed         = "RunFailed"
	EventBenchmarkFinished = "BenchmarkFinished"
)

// conflictRetryDelay is how soon a pass that lost an optimistic-locking race retries.
const conflictRetryDelay = time.Second

// LoggingBenchmarkReconciler reconciles LoggingBenchmark objects.
type LoggingBenchmarkReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
	// AgentImage holds the logbench binary the agent Jobs copy into the PostgreSQL image.
	AgentImage string
	// ClusterReadyTimeout bounds the wait for a destination's cluster.
	ClusterReadyTimeout time.Duration

	// finishedRuns holds, per benchmark, the Jobs whose end this process already counted
	// and announced.
	finishedRuns   map[types.NamespacedName]map[types.UID]bool
	finishedRunsMu sync.Mutex
}

// +kubebuilder:rbac:groups=bench.logbench.io,resources=loggingbenchmarks,verbs=get;list;watch
// +kubebuilder:rbac:groups=bench.logbench.io,resources=loggingbenchmarks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=postgresql.cnpg.io,resources=clusters,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile fetches the benchmark and delegates to the phase methods; deletion needs no
// work because everything the benchmark created is owned by it.
func (r *LoggingBenchmarkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	benchmark := &v1alpha1.LoggingBenchmark{}
	if err := r.Get(ctx, req.NamespacedName, benchmark); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !benchmark.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	old := benchmark.DeepCopy()
	result, err := r.reconcileBenchmark(ctx, benchmark)
	if err != nil {
		return ctrl.Result{}, err
	}
	benchmark.Status.ObservedGeneration = benchmark.Generation
	if err := r.patchStatus(ctx, old, benchmark); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
	}
	exportBenchmarkMetrics(benchmark)
	r.announceTransitions(old, benchmark)
	return result, nil
}

// announceTransitions emits the events and counts of the changes a pass wrote. It runs
// after the status write, which is optimistically locked: a pass working from a stale
// read fails to write, so each change is announced once.
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
			r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventClusterReady, "CloudNativePG cluster %s is ready", dest.ClusterName)
		case v1alpha1.DestinationFailed:
			r.Recorder.Event(benchmark, corev1.EventTypeWarning, EventClusterFailed, dest.Message)
			countRuns(benchmark, outcomeFailed, failedRepeats(benchmark, dest.Name, dest.Message))
		}
	}
	if !isFinished(old.Status.Phase) && isFinished(benchmark.Status.Phase) {
		r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventBenchmarkFinished,
			"Benchmark %s: %s runs done, worst overhead %q", benchmark.Status.Phase,
			benchmark.Status.Progress.Text, benchmark.Status.Summary.WorstOverhead)
	}
}

// failedRepeats counts the repeats of a destination that failed with the given error.
func failedRepeats(benchmark *v1alpha1.LoggingBenchmark, destination, message string) int {
	failed := 0
	for _, row := range benchmark.Status.Results {
		for _, repeat := range row.Repeats {
			if row.Destination == destination && repeat.Error == message {
				failed++
			}
		}
	}
	return failed
}

func (r *LoggingBenchmarkReconciler) reconcileBenchmark(ctx context.Context, benchmark *v1alpha1.LoggingBenchmark) (ctrl.Result, error) {
	if isFinished(benchmark.Status.Phase) {
		// The status of a finished benchmark is final: it survives the deletion of its Jobs.
		return ctrl.Result{}, r.reconcileCleanup(ctx, benchmark)
	}
	if err := validateClusterNames(benchmark.Name, &benchmark.Spec); err != nil {
		r.reconcileInvalidSpec(benchmark, err)
		return ctrl.Result{}, nil
	}
	if benchmark.Status.StartTime == nil {
		now := metav1.Now()
		benchmark.Status.StartTime = &now
	}
	pass, err := r.observe(ctx, benchmark)
	if err != nil {
		return ctrl.Result{}, err
	}
	result, err := r.reconcileRuns(ctx, pass)
	if err != nil {
		return ctrl.Result{}, err
	}
	pass.writeStatus()
	if isFinished(benchmark.Status.Phase) {
		return result, r.reconcileCleanup(ctx, benchmark)
	}
	return result, nil
}

func (r *LoggingBenchmarkReconciler) reconcileInvalidSpec(benchmark *v1alpha1.LoggingBenchmark, err error) {
	now := metav1.Now()
	benchmark.Status.Phase = v1alpha1.PhaseFailed
	benchmark.Status.CompletionTime = &now
	benchmark.Status.Progress.RunsTotal = benchmark.Spec.RunsTotal()
	SetConditions(benchmark, ReasonInvalidSpec, err.Error())
}

// reconcileRuns advances the first unfinished run: waits for its Job, or provisions its
// cluster, or starts its Job. Runs execute one at a time so that they never compete for
// the nodes' cores.
func (r *LoggingBenchmarkReconciler) reconcileRuns(ctx context.Context, pass *benchmarkPass) (ctrl.Result, error) {
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
	pass.phase = v1alpha1.PhaseSucceeded
	if pass.failedRuns() > 0 {
		pass.phase = v1alpha1.PhaseFailed
	}
	return ctrl.Result{}, nil
}

// startRun creates the Job of a run; its deterministic name makes a second creation fail
// rather than run twice.
func (r *LoggingBenchmarkReconciler) startRun(ctx context.Context, pass *benchmarkPass, run plannedRun, clusterImage string) error {
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
		"Run %s started as Job %s", pass.currentText(), job.Name)
	return nil
}

// recordRunFinished counts and announces the end of a run once per process.
func (r *LoggingBenchmarkReconciler) recordRunFinished(benchmark *v1alpha1.LoggingBenchmark, job *batchv1.Job, result v1alpha1.RepeatResult) {
	owner := client.ObjectKeyFromObject(benchmark)
	r.finishedRunsMu.Lock()
	if r.finishedRuns == nil {
		r.finishedRuns = map[types.NamespacedName]map[types.UID]bool{}
	}
	if r.finishedRuns[owner] == nil {
		r.finishedRuns[owner] = map[types.UID]bool{}
	}
	seen := r.finishedRuns[owner][job.UID]
	r.finishedRuns[owner][job.UID] = true
	r.finishedRunsMu.Unlock()
	if seen {
		return
	}
	if result.Error != "" {
		countRuns(benchmark, outcomeFailed, 1)
		r.Recorder.Eventf(benchmark, corev1.EventTypeWarning, EventRunFailed, "Job %s failed: %s", job.Name, result.Error)
		return
	}
	countRuns(benchmark, outcomeSucceeded, 1)
	r.Recorder.Eventf(benchmark, corev1.EventTypeNormal, EventRunSucceeded,
		"Job %s succeeded: %.1f TPS", job.Name, result.TPS)
}

// forget drops what this process keeps about a deleted benchmark.
func (r *LoggingBenchmarkReconciler) forget(benchmark types.NamespacedName) {
	forgetBenchmarkMetrics(benchmark.Namespace, benchmark.Name)
	r.finishedRunsMu.Lock()
	delete(r.finishedRuns, benchmark)
	r.finishedRunsMu.Unlock()
}

// ClientOptions configures the manager's client for this reconciler: Clusters are read
// from the cache its watch fills, while objects read once per run or per cluster (pods,
// the agent's ServiceAccount and RBAC, the shipper ConfigMaps) are read from the API
// server rather than cached cluster-wide.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{
		Unstructured: true,
		DisableFor: []client.Object{
			&corev1.Pod{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.ConfigMap{},
		},
	}}
}

// CacheOptions keeps only the Jobs and Clusters of benchmarks in the manager's cache,
// rather than every Job of the cluster.
func CacheOptions() cache.Options {
	ofBenchmarks := labels.NewSelector()
	requirement, err := labels.NewRequirement(LabelBenchmark, selection.Exists, nil)
	if err != nil {
		panic(err) // the requirement is constant
	}
	ofBenchmarks = ofBenchmarks.Add(*requirement)
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&batchv1.Job{}:     {Label: ofBenchmarks},
		NewClusterObject(): {Label: ofBenchmarks},
	}}
}

// SetupWithManager registers the reconciler, watching the Jobs and Clusters it owns.
func (r *LoggingBenchmarkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.LoggingBenchmark{}).
		Owns(&batchv1.Job{}).
		Owns(NewClusterObject()).
		Named("loggingbenchmark").
		Complete(r)
}
