package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/testenv/controlplane"
)

const testAgentImage = "ghcr.io/logbench/logbench:test"

// testPullSecrets are the operator's --image-pull-secrets in the specs.
var testPullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	scheme    = runtime.NewScheme()
	k8sClient client.Client
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())

	var err error
	testEnv, err = controlplane.New()
	Expect(err).NotTo(HaveOccurred())
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// startOperator runs the reconciler, as configure changes it, in a manager of its own, as
// the operator command does, until the returned function stops it; specs restart it to
// play operator restarts.
func startOperator(clusterReadyTimeout time.Duration, configure ...func(*LoggingBenchmarkReconciler)) (stop func()) {
	reconciler := &LoggingBenchmarkReconciler{ClusterReadyTimeout: clusterReadyTimeout}
	for _, change := range configure {
		change(reconciler)
	}
	cancel, stopped := runOperator(cfg, reconciler, "0")
	return func() {
		cancel()
		Eventually(stopped, 30*time.Second).Should(Receive(BeNil()))
	}
}

// runOperator runs reconciler, completed with the manager's client, in a manager of its
// own against the API server at restConfig, as the operator command does; its probes listen
// at probeAddress ("0": none). cancel stops it, and stopped receives what it returned.
func runOperator(
	restConfig *rest.Config, reconciler *LoggingBenchmarkReconciler, probeAddress string,
) (cancel func(), stopped <-chan error) {
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Client:                 ClientOptions(),
		Cache:                  CacheOptions(nil, reconciler.CloudNativePGUnavailable == ""),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probeAddress,
		// Every spec starts a manager of its own with the same controller.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	reconciler.Client = mgr.GetClient()
	reconciler.Scheme = mgr.GetScheme()
	reconciler.Recorder = mgr.GetEventRecorderFor("logbench")
	reconciler.AgentImage = testAgentImage
	reconciler.ImagePullSecrets = testPullSecrets
	Expect(reconciler.SetupWithManager(mgr)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return cancel, done
}
