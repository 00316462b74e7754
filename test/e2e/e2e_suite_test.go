//go:build e2e

// Package e2e runs logbench against a real cluster with CloudNativePG: the local
// cluster of hack/local-cluster (E2E_PROVIDER=local, two nodes in make e2e-up) or kind
// (E2E_PROVIDER=kind, KIND_NODES nodes). The provider's up script installs CloudNativePG and logbench; the
// suite only checks and exercises them.
package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
)

// provider is what differs between the clusters the suite runs on.
type provider struct {
	// kubeconfig is used when KUBECONFIG is unset.
	kubeconfig string
	// postgresImage is the operand image of PostgreSQL 15 the clusters run unless a spec
	// says otherwise; like every operand image, it must hold pgbench.
	postgresImage string
	// postgres18Image is the operand image of PostgreSQL 18, the major version users get
	// when they leave imageName empty.
	postgres18Image string
}

var providers = map[string]provider{
	"local": {
		kubeconfig:      "bin/local-cluster/kubeconfig",
		postgresImage:   "logbench.local/postgresql:15-pgaudit-counter-bookworm",
		postgres18Image: "logbench.local/postgresql:18.6-counter-bookworm",
	},
	"kind": {
		kubeconfig:      "",
		postgresImage:   "ghcr.io/cloudnative-pg/postgresql:15",
		postgres18Image: "ghcr.io/cloudnative-pg/postgresql:18",
	},
}

const operatorNamespace = "logbench-system"

// podSecurityEnforce is the namespace label of the Pod Security Standard admission enforces.
const podSecurityEnforce = "pod-security.kubernetes.io/enforce"

var (
	k8sClient client.Client
	// restConfig is the suite's, a cluster administrator's: specs impersonate users with it.
	restConfig      *rest.Config
	clientset       *kubernetes.Clientset
	postgresImage   string
	postgres18Image string
	shipping        shippingSetup
	// kubectlArgs make every kubectl the suite runs talk to the cluster under test.
	kubectlArgs []string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "logbench e2e suite")
}

var _ = BeforeSuite(func() {
	name := os.Getenv("E2E_PROVIDER")
	if name == "" {
		name = "local"
	}
	chosen, known := providers[name]
	Expect(known).To(BeTrue(), "E2E_PROVIDER=%q: use local or kind", name)

	postgresImage = cmp.Or(os.Getenv("E2E_POSTGRES_IMAGE"), chosen.postgresImage)
	postgres18Image = cmp.Or(os.Getenv("E2E_POSTGRES18_IMAGE"), chosen.postgres18Image)
	// The Makefile names these images from the versions it pins; an empty shipper image
	// is logbench's pinned upstream default.
	shipping = shippingSetup{
		fluentBitImage: os.Getenv("E2E_FLUENT_BIT_IMAGE"),
		collectorImage: os.Getenv("E2E_COLLECTOR_IMAGE"),
		lokiImage:      os.Getenv("E2E_LOKI_IMAGE"),
	}

	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" && chosen.kubeconfig != "" {
		// go test runs in the package folder; the kubeconfig path is the repository's.
		kubeconfig = filepath.Join("..", "..", chosen.kubeconfig)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
		kubectlArgs = []string{"--kubeconfig", kubeconfig}
	}
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	Expect(err).NotTo(HaveOccurred(), "no cluster to test: bring one up with make local-cluster-up (or kind) first")

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	Expect(benchv1alpha1.AddToScheme(scheme)).To(Succeed())
	restConfig = config
	k8sClient, err = client.New(config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(config)
	Expect(err).NotTo(HaveOccurred())
	_, _ = fmt.Fprintf(GinkgoWriter, "provider %s, operand images %s and %s\n", name, postgresImage, postgres18Image)

	// The benchmarks run where the restricted Pod Security Standard is enforced, as in a
	// hardened cluster: every pod logbench creates or patches (CloudNativePG instances
	// with their shipper sidecar, runners) must be admitted there.
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchmarkNamespace}}
	_, err = controllerutil.CreateOrUpdate(context.Background(), k8sClient, namespace, func() error {
		if namespace.Labels == nil {
			namespace.Labels = map[string]string{}
		}
		namespace.Labels[podSecurityEnforce] = "restricted"
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
})
