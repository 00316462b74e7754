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
	"github.com/logbench/logbench/internal/testenv"
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
	testEnv, err = testenv.NewEnvironment()
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

// startOperator runs the reconciler in a manager of its own, as the operator command
// does, until the returned function stops it; specs restart it to play operator restarts.
func startOperator(clusterReadyTimeout time.Duration) (stop func()) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Client:                 ClientOptions(),
		Cache:                  CacheOptions(nil),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every spec starts a manager of its own with the same controller.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	reconciler := &LoggingBenchmarkReconciler{
		Client:              mgr.GetClient(),
		Scheme:              mgr.GetScheme(),
		Recorder:            mgr.GetEventRecorderFor("logbench"),
		AgentImage:          testAgentImage,
		ImagePullSecrets:    testPullSecrets,
		ClusterReadyTimeout: clusterReadyTimeout,
	}
	Expect(reconciler.SetupWithManager(mgr)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() {
		cancel()
		Eventually(done, 30*time.Second).Should(BeClosed())
	}
}
