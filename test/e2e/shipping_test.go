//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
)

// shippingSetup is what the shipping spec runs with on the cluster under test.
type shippingSetup struct {
	shipper      benchv1alpha1.ShipperKind
	shipperImage string // "" for logbench's pinned default
	lokiImage    string
}

// The Loki of testdata/loki.yaml, in the benchmark namespace, and its tenants.
const (
	lokiURL           = "http://loki." + benchmarkNamespace + ".svc:3100"
	lokiTenantOpen    = "open"
	lokiTenantLimited = "limited"
)

// destinations are the shipping spec's: Loki through the provider's shipper, once to a
// tenant that takes everything and once to one whose ingestion rate the runs exceed, and
// where Fluent Bit runs, a Fluent Bit sidecar that discards what it reads.
func (s shippingSetup) destinations() []benchv1alpha1.Destination {
	toLoki := func(name, tenant string) benchv1alpha1.Destination {
		return benchv1alpha1.Destination{
			Name:    name,
			Type:    benchv1alpha1.DestinationLoki,
			Shipper: &benchv1alpha1.ShipperSpec{Kind: s.shipper, Image: s.shipperImage},
			Loki:    &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: tenant},
		}
	}
	destinations := []benchv1alpha1.Destination{toLoki("loki", lokiTenantOpen), toLoki("loki-limited", lokiTenantLimited)}
	if s.shipper == benchv1alpha1.ShipperFluentBit {
		destinations = append(destinations, benchv1alpha1.Destination{
			Name:    "fluent-null",
			Type:    benchv1alpha1.DestinationFluentBitSidecar,
			Shipper: &benchv1alpha1.ShipperSpec{Image: s.shipperImage, Output: benchv1alpha1.OutputNull},
		})
	}
	return destinations
}

var _ = Describe("shipping", Ordered, func() {
	var benchmark *benchv1alpha1.LoggingBenchmark

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			printDiagnostics(benchmark,
				[]string{"-n", benchmarkNamespace, "logs", "deployment/loki", "--tail=100"},
				[]string{"-n", benchmarkNamespace, "logs", "-l", "cnpg.io/podRole=instance", "-c", "logbench-shipper", "--prefix", "--tail=50"})
		}
	})

	It("ships every record to a real Loki, and reports a rate-limited tenant's losses with their reason", func(ctx SpecContext) {
		Expect(shipping.lokiImage).NotTo(BeEmpty(), "E2E_LOKI_IMAGE names the Loki image; make test-e2e-local and make test-e2e set it")
		deployLoki(ctx)

		benchmark = newBenchmark("shipping")
		benchmark.Spec.Destinations = shipping.destinations()
		benchmark.Spec.Cleanup = benchv1alpha1.CleanupAlways
		// The shipper reads the file at its own pace beside a busy server.
		benchmark.Spec.DrainTimeout = metav1.Duration{Duration: 2 * time.Minute}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		waitForPhase(ctx, benchmark, benchv1alpha1.PhaseSucceeded)

		Expect(benchmark.Status.Results).To(HaveLen(int(benchmark.Status.Progress.RunsTotal)))
		for _, row := range benchmark.Status.Results {
			what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
			records := row.Records
			Expect(row.TPS).To(BeNumerically(">", 0), what)
			Expect(records.AccountingError).To(BeEmpty(), what)
			switch row.Destination {
			case "loki", "fluent-null":
				Expect(records.Expected).To(BeNumerically(">", 0), what)
				Expect(records.Delivered).To(Equal(records.Expected), "%s: every record arrives", what)
			case "loki-limited":
				Expect(records.Dropped).NotTo(BeNil(), what)
				Expect(*records.Dropped).To(BeNumerically(">", 0), "%s: Loki refuses records past the tenant's rate", what)
				Expect(records.DropReason).To(ContainSubstring("rate"), what)
			}
		}
	})
})

// deployLoki applies testdata/loki.yaml with the provider's Loki image and waits until
// Loki is ready.
func deployLoki(ctx context.Context) {
	manifest, err := os.ReadFile("testdata/loki.yaml")
	Expect(err).NotTo(HaveOccurred())
	manifest = bytes.ReplaceAll(manifest, []byte("@LOKI_IMAGE@"), []byte(shipping.lokiImage))
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		object := &unstructured.Unstructured{}
		if err := decoder.Decode(&object.Object); errors.Is(err, io.EOF) {
			break
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		object.SetNamespace(benchmarkNamespace)
		Expect(k8sClient.Patch(ctx, object, client.Apply, client.FieldOwner("logbench-e2e"), client.ForceOwnership)).To(Succeed())
	}
	Eventually(func(g Gomega) {
		deployment := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmarkNamespace, Name: "loki"}, deployment)).To(Succeed())
		g.Expect(deployment.Status.ReadyReplicas).To(BeNumerically(">=", 1), "Loki not ready")
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}
