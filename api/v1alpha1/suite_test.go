package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/testenv/controlplane"
)

// The suite runs the API server's admission of LoggingBenchmarks (schema, defaults, CEL
// rules) against the generated CRD, with no controller.
var (
	ctx       = context.Background()
	testEnv   *envtest.Environment
	k8sClient client.Client
)

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "LoggingBenchmark admission suite")
}

var _ = BeforeSuite(func() {
	var err error
	testEnv, err = controlplane.New()
	Expect(err).NotTo(HaveOccurred())
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
