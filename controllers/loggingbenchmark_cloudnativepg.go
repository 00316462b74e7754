package controllers

import (
	"context"
	"errors"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/benchstatus"
)

// cloudNativePGRecheckInterval is how often an operator without CloudNativePG looks
// for it again.
const cloudNativePGRecheckInterval = 30 * time.Second

// addCloudNativePGChecks makes the operator's readiness fail while CloudNativePG is
// unavailable, saying why, and stop the manager once it is served, so that the restarted
// operator watches its Clusters.
func (r *LoggingBenchmarkReconciler) addCloudNativePGChecks(mgr ctrl.Manager) error {
	if err := mgr.AddReadyzCheck("cloudnativepg", func(*http.Request) error {
		if r.CloudNativePGUnavailable != "" {
			return errors.New(r.CloudNativePGUnavailable)
		}
		return nil
	}); err != nil {
		return err
	}
	if r.CloudNativePGUnavailable == "" {
		return nil
	}
	ctrl.Log.WithName("cloudnativepg").Error(errors.New(r.CloudNativePGUnavailable),
		"Benchmarks cannot run: the operator stays not ready")
	client, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	return mgr.Add(cloudNativePGWatcher{client: client, interval: r.cloudNativePGRecheckInterval()})
}

func (r *LoggingBenchmarkReconciler) cloudNativePGRecheckInterval() time.Duration {
	if r.cloudNativePGRecheck > 0 {
		return r.cloudNativePGRecheck
	}
	return cloudNativePGRecheckInterval
}

// errCloudNativePGInstalled stops an operator that started without CloudNativePG once
// it is served: the manager cannot add the Cluster watch to a cache already started.
var errCloudNativePGInstalled = errors.New("CloudNativePG is served now: restarting to watch its Clusters")

// cloudNativePGWatcher asks the API server for CloudNativePG at each interval and fails
// with errCloudNativePGInstalled once it is served, which stops the manager.
type cloudNativePGWatcher struct {
	client   discovery.DiscoveryInterface
	interval time.Duration
}

var _ manager.LeaderElectionRunnable = cloudNativePGWatcher{}

// NeedLeaderElection is false: every replica of an operator without CloudNativePG
// restarts once it is installed, not only the leader.
func (cloudNativePGWatcher) NeedLeaderElection() bool { return false }

func (w cloudNativePGWatcher) Start(ctx context.Context) error {
	ticker := time.NewTicker(w.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			// A failure to ask is retried at the next tick.
			if unavailable, err := cloudnativepg.Unavailable(w.client); err == nil && unavailable == "" {
				return errCloudNativePGInstalled
			}
		}
	}
}

// refuseWithoutCloudNativePG tells a benchmark that has not finished why it cannot run,
// in its conditions and with a Warning event at each pass.
func (r *LoggingBenchmarkReconciler) refuseWithoutCloudNativePG(benchmark *v1alpha1.LoggingBenchmark) {
	if benchmark.Status.Phase.IsFinished() {
		return
	}
	benchstatus.SetBlocked(benchmark, v1alpha1.ReasonCloudNativePGUnavailable, r.CloudNativePGUnavailable)
	r.Recorder.Event(benchmark, corev1.EventTypeWarning, v1alpha1.ReasonCloudNativePGUnavailable,
		r.CloudNativePGUnavailable)
}
