package controllers

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/testenv/controlplane"
)

// A control plane of its own: the suite's serves CloudNativePG's CRDs.
var _ = Describe("An operator on a cluster without CloudNativePG", Ordered, func() {
	var (
		ctx       = context.Background()
		apiServer *rest.Config
		apiClient client.Client
		namespace string
		// unavailable is what cloudnativepg.Check said at the start of the operator that
		// runs without CloudNativePG, probes its probe address, and stopped receives what
		// its manager returned.
		unavailable string
		probes      string
		stopped     <-chan error
	)

	BeforeAll(func() {
		env, err := controlplane.NewWithoutCloudNativePG()
		Expect(err).NotTo(HaveOccurred())
		apiServer, err = env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		apiClient, err = client.New(apiServer, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
		Expect(apiClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name

		unavailable, err = cloudnativepg.Check(apiServer)
		Expect(err).NotTo(HaveOccurred())
		probes = freeLoopbackAddress()
		var cancel func()
		cancel, stopped = runOperator(apiServer, &LoggingBenchmarkReconciler{
			CloudNativePGUnavailable: unavailable,
			ClusterReadyTimeout:      time.Minute,
			cloudNativePGRecheck:     200 * time.Millisecond,
		}, probes)
		// The second spec installs CloudNativePG, which stops this operator.
		DeferCleanup(cancel)
	})

	It("reports not ready with the reason, and tells each benchmark why it cannot run", func() {
		Expect(unavailable).To(ContainSubstring("CloudNativePG is not installed: the API server serves no " +
			"postgresql.cnpg.io/v1 (CRD clusters.postgresql.cnpg.io)"))

		By("failing the readiness probe, with the reason at the check's own endpoint")
		Eventually(func(g Gomega) {
			code, _ := httpGet(g, "http://"+probes+"/readyz")
			g.Expect(code).To(Equal(http.StatusInternalServerError))
			code, body := httpGet(g, "http://"+probes+"/readyz/cloudnativepg")
			g.Expect(code).To(Equal(http.StatusInternalServerError))
			g.Expect(body).To(ContainSubstring(unavailable))
		}, timeout).Should(Succeed())

		By("saying why in the conditions and a Warning event of a benchmark")
		benchmark := newBenchmark(namespace, "blocked", v1alpha1.CleanupNever)
		benchmark.Spec.Baseline.Enabled = false
		Expect(apiClient.Create(ctx, benchmark)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apiClient.Get(ctx, client.ObjectKeyFromObject(benchmark), benchmark)).To(Succeed())
			g.Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhasePending))
			degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(degraded).To(HaveValue(SatisfyAll(
				HaveField("Status", metav1.ConditionTrue),
				HaveField("Reason", v1alpha1.ReasonCloudNativePGUnavailable),
				HaveField("Message", unavailable))))
			g.Expect(meta.IsStatusConditionFalse(benchmark.Status.Conditions, v1alpha1.ConditionProgressing)).To(BeTrue())
		}, timeout).Should(Succeed())
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(apiClient.List(ctx, &events, client.InNamespace(namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("InvolvedObject.Name", "blocked"),
				HaveField("Type", corev1.EventTypeWarning),
				HaveField("Reason", v1alpha1.ReasonCloudNativePGUnavailable),
				HaveField("Message", unavailable))))
		}, timeout).Should(Succeed())
	})

	It("restarts once CloudNativePG is served, and fails a cluster an older CloudNativePG would prune", func() {
		Consistently(stopped).ShouldNot(Receive(), "the operator without CloudNativePG stays up")
		By("installing a CloudNativePG whose Cluster lacks spec.postgresql.enableAlterSystem, as releases before 1.22")
		Expect(envtest.InstallCRDs(apiServer, envtest.CRDInstallOptions{
			CRDs: []*apiextensionsv1.CustomResourceDefinition{clusterCRDWithout("spec", "postgresql", "enableAlterSystem")},
		})).Error().NotTo(HaveOccurred())
		Eventually(stopped, timeout).Should(Receive(MatchError(errCloudNativePGInstalled)))

		By("refusing the cluster of the CSVLog destination, which sets the field, in the benchmark's status")
		unavailable, err := cloudnativepg.Check(apiServer)
		Expect(err).NotTo(HaveOccurred())
		Expect(unavailable).To(BeEmpty())
		cancel, restarted := runOperator(apiServer, &LoggingBenchmarkReconciler{ClusterReadyTimeout: time.Minute}, "0")
		DeferCleanup(func() {
			cancel()
			Eventually(restarted, timeout).Should(Receive(BeNil()))
		})
		benchmark := &v1alpha1.LoggingBenchmark{}
		Eventually(func(g Gomega) {
			g.Expect(apiClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "blocked"}, benchmark)).To(Succeed())
			g.Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		}, timeout).Should(Succeed())
		Expect(benchmark.Status.Destinations).To(ConsistOf(SatisfyAll(
			HaveField("State", v1alpha1.DestinationFailed),
			HaveField("Message", SatisfyAll(
				ContainSubstring(`unknown field "spec.postgresql.enableAlterSystem"`),
				ContainSubstring("this CloudNativePG lacks a field logbench sets"))))))
		failed := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionFailed)
		Expect(failed).To(HaveValue(SatisfyAll(HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", ContainSubstring("enableAlterSystem")))))
		Expect(meta.IsStatusConditionFalse(benchmark.Status.Conditions, v1alpha1.ConditionComplete)).To(BeTrue())
	})
})

// clusterCRDWithout returns CloudNativePG's Cluster CRD of testenv without the property
// at path in any version's schema.
func clusterCRDWithout(path ...string) *apiextensionsv1.CustomResourceDefinition {
	crds, err := testenv.CloudNativePGCRDs()
	Expect(err).NotTo(HaveOccurred())
	file, err := os.Open(crds)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = file.Close() }() // read only: closing loses nothing
	reader := utilyaml.NewYAMLReader(bufio.NewReader(file))
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(yaml.Unmarshal(document, crd)).To(Succeed())
		if crd.Name != "clusters.postgresql.cnpg.io" {
			continue
		}
		for _, version := range crd.Spec.Versions {
			parents := make([]*apiextensionsv1.JSONSchemaProps, 0, len(path))
			parents = append(parents, version.Schema.OpenAPIV3Schema)
			for _, name := range path[:len(path)-1] {
				child := parents[len(parents)-1].Properties[name]
				parents = append(parents, &child)
			}
			Expect(parents[len(parents)-1].Properties).To(HaveKey(path[len(path)-1]))
			delete(parents[len(parents)-1].Properties, path[len(path)-1])
			// The properties are values: put each modified child back into its parent.
			for i := len(parents) - 1; i > 0; i-- {
				parents[i-1].Properties[path[i-1]] = *parents[i]
			}
		}
		return crd
	}
	Fail(crds + " holds no clusters.postgresql.cnpg.io")
	return nil
}

// freeLoopbackAddress returns a loopback address whose port was free a moment ago.
func freeLoopbackAddress() string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	address := listener.Addr().String()
	Expect(listener.Close()).To(Succeed())
	return address
}

func httpGet(g Gomega, url string) (int, string) {
	response, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = response.Body.Close() }()
	body, err := io.ReadAll(response.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return response.StatusCode, string(body)
}
