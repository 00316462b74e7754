package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
)

// The CRD refuses what would break a server's or a shipper's configuration; the operator
// refuses it again, for a benchmark admitted under an older CRD. The API server here
// holds the current CRD, so the reconciler reads the benchmark through a client that
// hands it such a spec.
var _ = Describe("LoggingBenchmark reconciler's configuration input", func() {
	ctx := context.Background()

	It("fails a benchmark whose spec the CRD would refuse, before creating anything", func() {
		namespace := newNamespace()
		created := newBenchmark(namespace, "escaped", v1alpha1.CleanupNever)
		created.Spec.Destinations = append(created.Spec.Destinations,
			v1alpha1.Destination{Name: "fb", Type: v1alpha1.DestinationFluentBitSidecar})
		Expect(k8sClient.Create(ctx, created)).To(Succeed())

		withWatch, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		underOlderCRD := interceptor.NewClient(withWatch, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
				opts ...client.GetOption,
			) error {
				if err := c.Get(ctx, key, obj, opts...); err != nil {
					return err
				}
				if benchmark, ok := obj.(*v1alpha1.LoggingBenchmark); ok {
					benchmark.Spec.Postgres.Parameters = map[string]v1alpha1.ParameterValue{"archive_command ": "sh -c id"}
					// Refusals that, each naming its value, would make a condition's message
					// longer than the API server takes.
					for i := range 40 {
						benchmark.Spec.Postgres.Parameters[fmt.Sprintf("work_mem_%02d", i)] =
							v1alpha1.ParameterValue("64MB\n" + strings.Repeat("x", 1000))
					}
					benchmark.Spec.Logging.LinePrefix = "%a\nlog_directory = '/tmp'"
				}
				return nil
			},
		})
		reconciler := &LoggingBenchmarkReconciler{Client: underOlderCRD, Scheme: scheme,
			Recorder: record.NewFakeRecorder(100), AgentImage: testAgentImage, ClusterReadyTimeout: time.Minute}
		_, err = reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{
			Namespace: namespace, Name: "escaped"}})
		Expect(err).NotTo(HaveOccurred())

		benchmark := getBenchmark(Default, namespace, "escaped")
		Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded).NotTo(BeNil())
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonInvalidSpec))
		Expect(degraded.Message).To(And(
			ContainSubstring("spec.postgres.parameters[archive_command ]"),
			ContainSubstring("not a PostgreSQL parameter name"),
			ContainSubstring("spec.postgres.parameters[work_mem_00]"),
		))
		Expect(len(degraded.Message)).To(BeNumerically("<=", v1alpha1.MaxMessageLength+len("…")))

		By("creating nothing for it")
		for _, destination := range []string{"baseline", "csv", "fb"} {
			Expect(clusterExists(namespace, "escaped-"+destination)()).To(BeFalse(), destination)
		}
		Expect(listRunners(namespace)).To(BeEmpty())
		var configMaps corev1.ConfigMapList
		Expect(k8sClient.List(ctx, &configMaps, client.InNamespace(namespace),
			client.MatchingLabels(builders.BenchmarkLabels("escaped")))).To(Succeed())
		Expect(configMaps.Items).To(BeEmpty())
		var policies networkingv1.NetworkPolicyList
		Expect(k8sClient.List(ctx, &policies, client.InNamespace(namespace))).To(Succeed())
		Expect(policies.Items).To(BeEmpty())
		var accounts corev1.ServiceAccountList
		Expect(k8sClient.List(ctx, &accounts, client.InNamespace(namespace))).To(Succeed())
		for _, account := range accounts.Items {
			Expect(account.Name).NotTo(Equal(builders.AgentServiceAccountName))
		}
	})
})
