package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/status"
)

// cloudNativePGRecheckInterval is how often an operator without CloudNativePG looks
// for it again.
const cloudNativePGRecheckInterval = 30 * time.Second

// CheckCloudNativePG returns why the API server at config serves no CloudNativePG
// Cluster logbench can drive (ClusterGVK), or "" when it serves one; err is a failure to
// ask. The manager must not watch Clusters when it serves none: its cache would never
// sync and the operator would crash-loop without saying why.
func CheckCloudNativePG(config *rest.Config) (unavailable string, err error) {
	client, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return "", err
	}
	return cloudNativePGUnavailable(client)
}

func cloudNativePGUnavailable(client discovery.DiscoveryInterface) (string, error) {
	const install = "install a supported CloudNativePG (docs/compatibility.md); the operator restarts once it is served"
	groupVersion := ClusterGVK.GroupVersion()
	resources, err := client.ServerResourcesForGroupVersion(groupVersion.String())
	if apierrors.IsNotFound(err) {
		groups, err := client.ServerGroups()
		if err != nil {
			return "", err
		}
		for _, group := range groups.Groups {
			if group.Name == groupVersion.Group {
				served := make([]string, 0, len(group.Versions))
				for _, version := range group.Versions {
					served = append(served, version.Version)
				}
				return fmt.Sprintf("CloudNativePG's API %s is served at %v, not at %s, the version logbench drives: %s",
					groupVersion.Group, served, groupVersion.Version, install), nil
			}
		}
		return fmt.Sprintf("CloudNativePG is not installed: the API server serves no %s (CRD clusters.%s): %s",
			groupVersion, groupVersion.Group, install), nil
	}
	if err != nil {
		return "", fmt.Errorf("asking the API server for CloudNativePG's %s: %w", groupVersion, err)
	}
	if !slices.ContainsFunc(resources.APIResources, func(resource metav1.APIResource) bool {
		return resource.Name == "clusters" && resource.Kind == ClusterGVK.Kind
	}) {
		return fmt.Sprintf("the API server serves %s without its Cluster kind: %s", groupVersion, install), nil
	}
	return "", nil
}

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
			if unavailable, err := cloudNativePGUnavailable(w.client); err == nil && unavailable == "" {
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
	status.SetBlocked(benchmark, v1alpha1.ReasonCloudNativePGUnavailable, r.CloudNativePGUnavailable)
	r.Recorder.Event(benchmark, corev1.EventTypeWarning, v1alpha1.ReasonCloudNativePGUnavailable,
		r.CloudNativePGUnavailable)
}
