package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/allowlist"
)

// The operator checks the admission policy's allowlists again before it creates anything:
// envtest runs no policy here, as a cluster where it is missing.
var _ = Describe("LoggingBenchmark reconciler's allowlists", func() {
	ctx := context.Background()

	It("refuses an image or a placement the allowlists do not hold, before creating anything", func() {
		namespace := newNamespace()
		productionPool := allowlist.Rules{
			ImagePrefixes: []string{"ghcr.io/cloudnative-pg/"},
			Tolerations:   []allowlist.Toleration{{Key: "dedicated", Value: "databases", Effect: "NoSchedule"}},
			NodeLabels:    []string{"node-pool=databases"},
		}
		cancel, stopped := runOperator(cfg, &LoggingBenchmarkReconciler{
			ClusterReadyTimeout: time.Minute, Allowed: productionPool,
		}, "0")
		DeferCleanup(func() {
			cancel()
			Eventually(stopped, 30*time.Second).Should(Receive(BeNil()))
		})

		image := newBenchmark(namespace, "image", v1alpha1.CleanupNever)
		image.Spec.Postgres.ImageName = "registry.example/postgresql:18"
		toleration := newBenchmark(namespace, "toleration", v1alpha1.CleanupNever)
		toleration.Spec.Postgres.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane",
			Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		nodeSelector := newBenchmark(namespace, "selector", v1alpha1.CleanupNever)
		nodeSelector.Spec.Postgres.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		pool := newBenchmark(namespace, "pool", v1alpha1.CleanupNever)
		pool.Spec.Postgres.ImageName = "ghcr.io/cloudnative-pg/postgresql:18"
		pool.Spec.Postgres.NodeSelector = map[string]string{"node-pool": "databases"}
		pool.Spec.Postgres.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual,
			Value: "databases", Effect: corev1.TaintEffectNoSchedule}}
		for _, benchmark := range []*v1alpha1.LoggingBenchmark{image, toleration, nodeSelector, pool} {
			Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		}

		refusals := map[string][]string{
			"image":      {"registry.example/postgresql:18", "one of ghcr.io/cloudnative-pg/", "allowedImages"},
			"toleration": {"node-role.kubernetes.io/control-plane", "placement.allowedTolerations"},
			"selector":   {"node-role.kubernetes.io/control-plane=", "placement.allowedNodeSelectors"},
		}
		for name, want := range refusals {
			benchmark := expectPhase(namespace, name, v1alpha1.PhaseFailed)
			degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
			Expect(degraded).NotTo(BeNil())
			Expect(degraded.Reason).To(Equal(v1alpha1.ReasonNotAllowed), name)
			for _, part := range want {
				Expect(degraded.Message).To(ContainSubstring(part), name)
			}
		}

		By("creating the clusters of the benchmark that stays within the allowed pool")
		getCluster(namespace, "pool-baseline")
		for name := range refusals {
			Expect(clusterExists(namespace, name+"-baseline")()).To(BeFalse(), name)
			Expect(clusterExists(namespace, name+"-csv")()).To(BeFalse(), name)
		}
		Expect(listRunners(namespace)).To(BeEmpty())
	})
})
