// Package controllers holds the LoggingBenchmark reconciler: it provisions one
// CloudNativePG cluster per destination, and one runner per cluster (a Deployment of one
// agent pod); it assigns the benchmark's pgbench executions one at a time, in the
// status, to the runner of their destination, which runs each and records its result
// in a LoggingBenchmarkRun; the reconciler rebuilds the status from those records (and
// the Jobs an older operator started, not recorded yet) on every pass.
//
// A pass reads the world (loggingbenchmark_observe.go), saves the results of such Jobs
// that just finished and assigns the next run, or watches over the one assigned
// (loggingbenchmark_runs.go), provisioning the clusters first
// (loggingbenchmark_clusters.go), computes and writes the status
// (loggingbenchmark_status.go), announces what changed (loggingbenchmark_events.go),
// and deletes the runners and clusters of a finished benchmark
// (loggingbenchmark_cleanup.go). The
// objects it creates come from the pure builders of package builders; what it knows of
// CloudNativePG is package cloudnativepg's.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/allowlist"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/results"
)

// LoggingBenchmarkReconciler reconciles LoggingBenchmark objects.
type LoggingBenchmarkReconciler struct {
	client.Client
	// APIReader reads from the API server, past the cache, which holds only logbench's
	// Jobs and Clusters: a foreign object in the way of one is found there. The
	// manager's, when unset.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	// AgentImage holds the logbench binary the runners copy into the PostgreSQL image.
	AgentImage string
	// RsyslogImage is what an Rsyslog receiver that names no image runs; empty is
	// shipping.RsyslogImage.
	RsyslogImage string
	// ImagePullSecrets name the Secrets every pod logbench creates pulls its images with:
	// the runners and the clusters' instance pods with their sidecars. Pull secrets are
	// namespaced, so each must exist in the benchmarks' namespaces.
	ImagePullSecrets []corev1.LocalObjectReference
	// ClusterReadyTimeout bounds the wait for a destination's cluster.
	ClusterReadyTimeout time.Duration
	// NetworkPeers are the pods from outside a benchmark its instance pods admit;
	// CloudNativePG's operator is builders.DefaultCloudNativePGOperator when unset.
	NetworkPeers builders.NetworkPeers
	// Allowed are the images and placements a benchmark may name: those of the admission
	// policy, checked again before anything is created, where the policy may be missing.
	Allowed allowlist.Rules
	// CloudNativePGUnavailable says why the API server serves no CloudNativePG Cluster
	// (cloudnativepg.Check), empty when it serves one: without it, the reconciler watches
	// no Clusters and only tells each benchmark why it cannot run.
	CloudNativePGUnavailable string

	// cloudNativePGRecheck overrides cloudNativePGRecheckInterval, for tests.
	cloudNativePGRecheck time.Duration
	// podLogs reads the logs of crashed containers of clusters that are not ready; the
	// API server's, when unset.
	podLogs podLogReader

	// finishedRuns holds, per benchmark, the runs whose end this process already counted
	// and announced.
	finishedRuns   map[types.NamespacedName]map[results.RunKey]bool
	finishedRunsMu sync.Mutex
}

// +kubebuilder:rbac:groups=bench.logbench.io,resources=loggingbenchmarks,verbs=get;list;watch
// +kubebuilder:rbac:groups=bench.logbench.io,resources=loggingbenchmarks/status,verbs=get;patch
// +kubebuilder:rbac:groups=bench.logbench.io,resources=loggingbenchmarkruns,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=postgresql.cnpg.io,resources=clusters,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;patch
// The agent's rights come from the fixed ClusterRoles logbench-agent and logbench-runner
// (builders.AgentClusterRole, builders.RunnerClusterRole), which the operator may bind
// but does not hold: Kubernetes' escalation check lets a binding be created by whoever
// may bind its role.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=logbench-agent;logbench-runner
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;create;patch

// Reconcile fetches the benchmark, runs one pass and writes the status the pass computed,
// also when a step failed; deletion needs no work because everything the benchmark
// created is owned by it.
func (r *LoggingBenchmarkReconciler) Reconcile(
	ctx context.Context,
	req ctrl.Request,
) (result ctrl.Result, reterr error) {
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

	before := benchmark.DeepCopy()
	defer func() {
		// observedGeneration says the spec was reconciled in full: a failed pass leaves it.
		if reterr == nil {
			benchmark.Status.ObservedGeneration = benchmark.Generation
		}
		err := r.patchStatus(ctx, before, benchmark)
		switch {
		case errors.Is(err, errStaleStatus):
			// The pass that reads the newer status comes with its watch event.
		case err != nil:
			result, reterr = ctrl.Result{}, errors.Join(reterr, fmt.Errorf("writing the status: %w", err))
		default:
			exportBenchmarkMetrics(benchmark)
			r.announceTransitions(before, benchmark)
		}
	}()
	return r.reconcileBenchmark(ctx, benchmark)
}

// reconcileBenchmark runs the steps of one pass in order.
func (r *LoggingBenchmarkReconciler) reconcileBenchmark(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) (ctrl.Result, error) {
	if r.CloudNativePGUnavailable != "" {
		r.refuseWithoutCloudNativePG(benchmark)
		return ctrl.Result{}, nil
	}
	if benchmark.Status.Phase.IsFinished() {
		// The status of a finished benchmark is final: its run records hold the results.
		return ctrl.Result{}, r.reconcileCleanup(ctx, benchmark)
	}
	// The CRD refuses the same, but a benchmark admitted under an older CRD, or written
	// past it, must not reach a server's or a shipper's configuration.
	if err := benchmark.Spec.ValidateConfigurationInput(); err != nil {
		benchstatus.SetInvalid(benchmark, err)
		return ctrl.Result{}, nil
	}
	if err := builders.ValidateClusterNames(benchmark.Name, &benchmark.Spec); err != nil {
		benchstatus.SetInvalid(benchmark, err)
		return ctrl.Result{}, nil
	}
	// The CRD admits these settings for logbench run --local, which loads the counter
	// they need; in a cluster they need spec.postgres.counter. The admission policy
	// refuses the same, but it may not be installed.
	if err := benchmark.Spec.ValidateForClusters(); err != nil {
		benchstatus.SetInvalid(benchmark, err)
		return ctrl.Result{}, nil
	}
	if err := r.Allowed.Check(&benchmark.Spec); err != nil {
		benchstatus.Fail(benchmark, v1alpha1.ReasonNotAllowed, errors.New(benchstatus.Truncate(err.Error())))
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
	err = errors.Join(err, r.recordFailedRuns(ctx, pass))
	setStatus(pass)
	if foreign := (*foreignObjectError)(nil); errors.As(err, &foreign) {
		benchstatus.Fail(benchmark, v1alpha1.ReasonForeignObject, foreign)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if benchmark.Status.Phase.IsFinished() {
		return result, r.reconcileCleanup(ctx, benchmark)
	}
	return result, nil
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
// the agent's ServiceAccount and RBAC, the shipper ConfigMaps, the syslog receivers) are
// read from the API server rather than cached cluster-wide.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{
		Unstructured: true,
		DisableFor: []client.Object{
			&corev1.Pod{}, &corev1.ServiceAccount{}, &rbacv1.RoleBinding{}, &corev1.ConfigMap{},
			&networkingv1.NetworkPolicy{}, &appsv1.Deployment{}, &corev1.Service{},
		},
	}}
}

// CacheOptions keeps only the Jobs, run records and Clusters of benchmarks in the
// manager's cache, rather than every Job of the cluster, with the metadata of the other objects of
// benchmarks that the manager watches (keptKinds), and watches only the given
// namespaces when there are any: an operator with Roles in those namespaces alone can
// list nothing elsewhere.
// Clusters are left out when watchClusters is false: a cache configured for a kind the
// API server does not serve fails to start.
func CacheOptions(watchNamespaces []string, watchClusters bool) cache.Options {
	ofBenchmarks := labels.NewSelector()
	requirement, err := labels.NewRequirement(builders.LabelBenchmark, selection.Exists, nil)
	if err != nil {
		panic(err) // the requirement is constant
	}
	ofBenchmarks = ofBenchmarks.Add(*requirement)
	options := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&batchv1.Job{}: {Label: ofBenchmarks}, &v1alpha1.LoggingBenchmarkRun{}: {Label: ofBenchmarks},
	}}
	for _, kept := range keptKinds() {
		options.ByObject[kept] = cache.ByObject{Label: ofBenchmarks}
	}
	if watchClusters {
		options.ByObject[cloudnativepg.NewCluster()] = cache.ByObject{Label: ofBenchmarks}
	}
	if len(watchNamespaces) > 0 {
		options.DefaultNamespaces = map[string]cache.Config{}
		for _, namespace := range watchNamespaces {
			options.DefaultNamespaces[namespace] = cache.Config{}
		}
	}
	return options
}

// SetupWithManager registers the reconciler, watching the run records (a runner's record
// ends the run it was assigned), the Jobs of an older operator and the Clusters it owns,
// and the metadata of the other objects it keeps, and the readiness check that fails while
// CloudNativePG is unavailable.
func (r *LoggingBenchmarkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.NetworkPeers.CloudNativePG.IsZero() {
		r.NetworkPeers.CloudNativePG = builders.DefaultCloudNativePGOperator()
	}
	if err := r.addCloudNativePGChecks(mgr); err != nil {
		return err
	}
	if r.podLogs == nil {
		clientset, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		r.podLogs = kubeletLogs{pods: clientset.CoreV1()}
	}
	controller := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.LoggingBenchmark{}).
		Owns(&v1alpha1.LoggingBenchmarkRun{}).
		Owns(&batchv1.Job{})
	for _, kept := range keptKinds() {
		// Their deletion brings the pass that creates them again (keepCreatedObjects), and
		// any change of a syslog receiver's Deployment, its readiness included, the pass
		// that sees it (checkSyslogReceiver): its resourceVersion changes with its status.
		controller = controller.Owns(kept, builder.OnlyMetadata)
	}
	if r.CloudNativePGUnavailable == "" {
		controller = controller.Owns(cloudnativepg.NewCluster())
	}
	return controller.Named("loggingbenchmark").Complete(r)
}
