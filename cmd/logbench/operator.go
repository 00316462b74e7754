package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/allowlist"
	"github.com/logbench/logbench/internal/shipping"
	"github.com/logbench/logbench/internal/version"
)

// agentImageEnv names the image holding this binary, which the runners copy into
// the PostgreSQL image; the operator's Deployment sets it to its own image.
const agentImageEnv = "LOGBENCH_AGENT_IMAGE"

func init() {
	subcommands = append(subcommands, newOperatorCommand)
}

func newOperatorCommand() *cobra.Command {
	var (
		metricsAddr         string
		secureMetrics       bool
		probeAddr           string
		leaderElect         bool
		agentImage          string
		rsyslogImage        string
		imagePullSecrets    []string
		clusterReadyTimeout time.Duration
		watchNamespaces     []string
		allowed             allowlist.Rules
		allowedTolerations  string
		networkPeers        builders.NetworkPeers
		cloudNativePGLabels string
		scraperLabels       string
		zapOptions          zap.Options
	)
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the Kubernetes operator reconciling LoggingBenchmarks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agentImage == "" {
				return errors.New("the agent image is unknown: set --agent-image or " + agentImageEnv +
					" to the image of this operator")
			}
			var err error
			if allowed.Tolerations, err = allowlist.ParseTolerations(allowedTolerations); err != nil {
				return err
			}
			if err := allowed.Validate(); err != nil {
				return fmt.Errorf("the allowlists: %w", err)
			}
			if networkPeers.CloudNativePG.Labels, err = labels.ConvertSelectorToLabelsMap(cloudNativePGLabels); err != nil {
				return fmt.Errorf("--cloudnative-pg-pod-labels: %w", err)
			}
			if networkPeers.MetricsScraper.Labels, err = labels.ConvertSelectorToLabelsMap(scraperLabels); err != nil {
				return fmt.Errorf("--instance-metrics-scraper-pod-labels: %w", err)
			}
			if err := networkPeers.Validate(); err != nil {
				return err
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOptions)))
			build := version.Get()
			ctrl.Log.WithName("setup").Info("starting the logbench operator",
				"version", build.Version, "commit", build.Commit, "built", build.Date)
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := v1alpha1.AddToScheme(scheme); err != nil {
				return err
			}
			config := ctrl.GetConfigOrDie()
			cloudNativePGUnavailable, err := cloudnativepg.Check(config)
			if err != nil {
				return err
			}
			mgr, err := ctrl.NewManager(config, ctrl.Options{
				Scheme:                 scheme,
				Client:                 controllers.ClientOptions(),
				Cache:                  controllers.CacheOptions(watchNamespaces, cloudNativePGUnavailable == ""),
				Metrics:                metricsOptions(metricsAddr, secureMetrics),
				HealthProbeBindAddress: probeAddr,
				LeaderElection:         leaderElect,
				LeaderElectionID:       "operator.bench.logbench.io",
			})
			if err != nil {
				return err
			}
			reconciler := &controllers.LoggingBenchmarkReconciler{
				Client:              mgr.GetClient(),
				Scheme:              mgr.GetScheme(),
				Recorder:            mgr.GetEventRecorderFor("logbench"),
				AgentImage:          agentImage,
				RsyslogImage:        rsyslogImage,
				ImagePullSecrets:    localObjectReferences(imagePullSecrets),
				ClusterReadyTimeout: clusterReadyTimeout,
				Allowed:             allowed,
				NetworkPeers:        networkPeers,
				// The reconciler only tells benchmarks why they cannot run while it is set.
				CloudNativePGUnavailable: cloudNativePGUnavailable,
			}
			if err := reconciler.SetupWithManager(mgr); err != nil {
				return err
			}
			if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
				return err
			}
			if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
				return err
			}
			return mgr.Start(ctrl.SetupSignalHandler())
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "address the metrics endpoint binds to; 0 disables it")
	flags.BoolVar(&secureMetrics, "metrics-secure", true,
		"serve the metrics over HTTPS to clients the API server authenticates and authorizes (get on /metrics); "+
			"false serves plain HTTP to anyone")
	flags.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probe endpoint binds to")
	flags.BoolVar(&leaderElect, "leader-elect", false, "elect a leader, so that only one of several replicas reconciles")
	flags.StringVar(&agentImage, "agent-image", os.Getenv(agentImageEnv),
		"image holding the logbench binary the runners run (default $"+agentImageEnv+")")
	flags.StringVar(&rsyslogImage, "rsyslog-image", shipping.RsyslogImage,
		"image the Rsyslog receiver of Syslog destinations runs when a destination names none (shipper.image)")
	flags.StringSliceVar(&imagePullSecrets, "image-pull-secrets", nil,
		"Secrets the pods logbench creates pull their images with, comma-separated; each must exist in the "+
			"benchmarks' namespaces")
	flags.DurationVar(&clusterReadyTimeout, "cluster-ready-timeout", 10*time.Minute,
		"how long a destination's cluster may take to become ready before the destination fails")
	flags.StringSliceVar(&watchNamespaces, "watch-namespaces", nil,
		"namespaces whose benchmarks the operator reconciles, comma-separated; all when empty")
	// The admission policy's allowlists, checked again before a benchmark creates anything,
	// so that they hold where the policy is missing; unset, they allow no image but the
	// defaults and no placement.
	flags.StringSliceVar(&allowed.ImagePrefixes, "allowed-image-prefixes", nil,
		"prefixes of the images a benchmark may name, comma-separated, each ending in /, : or @")
	flags.StringVar(&allowedTolerations, "allowed-tolerations", "",
		`tolerations a benchmark may give its pods, a JSON list of {"key", "operator", "value", "effect"}; `+
			"a field left out allows any")
	flags.StringSliceVar(&allowed.NodeLabels, "allowed-node-selectors", nil,
		"node labels key=value a benchmark may select nodes by, comma-separated")
	flags.StringSliceVar(&allowed.StorageClasses, "allowed-storage-classes", nil,
		"storage classes a benchmark may name, comma-separated; any when empty")
	// The peers the NetworkPolicy of a benchmark's instance pods admits besides the
	// benchmark's own pods.
	cloudNativePG := builders.DefaultCloudNativePGOperator()
	flags.StringVar(&networkPeers.CloudNativePG.Namespace, "cloudnative-pg-namespace", cloudNativePG.Namespace,
		"namespace of CloudNativePG's operator, whose pods the instance pods admit to PostgreSQL and the instance manager")
	flags.StringVar(&cloudNativePGLabels, "cloudnative-pg-pod-labels", labels.Set(cloudNativePG.Labels).String(),
		"labels key=value of the pods of CloudNativePG's operator, comma-separated; every pod of the namespace when empty")
	flags.StringVar(&networkPeers.MetricsScraper.Namespace, "instance-metrics-scraper-namespace", "",
		"namespace of the pods the instance pods admit to their metrics exporter (9187), such as Prometheus's; "+
			"none when empty")
	flags.StringVar(&scraperLabels, "instance-metrics-scraper-pod-labels", "",
		"labels key=value of those pods, comma-separated; every pod of the namespace when empty")
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOptions.BindFlags(zapFlags)
	flags.AddGoFlagSet(zapFlags)
	return cmd
}

// metricsOptions serves the metrics as kubebuilder's scaffold does: with secure, over
// HTTPS with a self-signed certificate, to clients whose token the API server accepts
// (TokenReview) and who may get /metrics (SubjectAccessReview), as Prometheus's
// ServiceAccount may with the chart's metrics-reader ClusterRole.
func metricsOptions(address string, secure bool) metricsserver.Options {
	options := metricsserver.Options{BindAddress: address, SecureServing: secure}
	if secure {
		options.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return options
}

// localObjectReferences references the Secrets of the benchmark's namespace by name.
func localObjectReferences(names []string) []corev1.LocalObjectReference {
	references := make([]corev1.LocalObjectReference, 0, len(names))
	for _, name := range names {
		references = append(references, corev1.LocalObjectReference{Name: name})
	}
	return references
}
