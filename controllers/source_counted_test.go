package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
)

// The CRD admits the logging settings only a count at the source accounts for, since
// logbench run --local reads the same CRD and loads the counter; in a cluster they need
// spec.postgres.counter, which the operator checks again behind the admission policy.
var _ = Describe("LoggingBenchmark reconciler's settings counted at the source", func() {
	ctx := context.Background()

	It("fails a benchmark that samples statements, naming the extension, before creating anything", func() {
		namespace := newNamespace()
		created := newBenchmark(namespace, "sampled", v1alpha1.CleanupNever)
		zero, tenth := int32(0), 0.1
		created.Spec.Logging.MinDurationSample, created.Spec.Logging.StatementSampleRate = &zero, &tenth
		Expect(k8sClient.Create(ctx, created)).To(Succeed())

		reconciler := &LoggingBenchmarkReconciler{Client: k8sClient, Scheme: scheme,
			Recorder: record.NewFakeRecorder(100), AgentImage: testAgentImage, ClusterReadyTimeout: time.Minute}
		_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{
			Namespace: namespace, Name: "sampled"}})
		Expect(err).NotTo(HaveOccurred())

		benchmark := getBenchmark(Default, namespace, "sampled")
		Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded).NotTo(BeNil())
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonInvalidSpec))
		Expect(degraded.Message).To(And(
			ContainSubstring("spec.logging.minDurationSample, spec.logging.statementSampleRate"),
			ContainSubstring("logbench_counter extension"),
			ContainSubstring("spec.postgres.counter"),
		))
		Expect(clusterExists(namespace, "sampled-baseline")()).To(BeFalse())
		Expect(listRunners(namespace)).To(BeEmpty())
	})

	It("runs a sampled benchmark with the counter: every cluster preloads it and the agent counts", func() {
		DeferCleanup(startOperator(time.Minute, allowLogbenchImages))
		namespace := newNamespace()
		counted := newBenchmark(namespace, "counted", v1alpha1.CleanupNever)
		zero, tenth := int32(0), 0.1
		counted.Spec.Logging.MinDurationSample, counted.Spec.Logging.StatementSampleRate = &zero, &tenth
		counted.Spec.Postgres.ImageName = "ghcr.io/logbench/postgresql:17-standard-bookworm-counter"
		counted.Spec.Postgres.Counter = &v1alpha1.CounterSpec{Source: v1alpha1.CounterInOperandImage}
		counted.Spec.Workload.Seed = seedRunningFirst(&counted.Spec, "baseline")
		Expect(k8sClient.Create(ctx, counted)).To(Succeed())

		for _, name := range []string{"counted-baseline", "counted-csv"} {
			libraries, _, _ := unstructured.NestedStringSlice(getCluster(namespace, name).Object,
				"spec", "postgresql", "shared_preload_libraries")
			Expect(libraries).To(Equal([]string{v1alpha1.CounterExtension}), name)
			markClusterReady(namespace, name)
		}
		runner := getRunner(namespace, builders.RunnerName("counted", "baseline"))
		env := map[string]corev1.EnvVar{}
		for _, variable := range runner.Spec.Template.Spec.Containers[0].Env {
			env[variable.Name] = variable
		}
		Expect(runnerRequest(env).Counter).To(Equal(counted.Spec.Postgres.Counter))
		Expect(getBenchmark(Default, namespace, "counted").Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed))
	})
})

// allowLogbenchImages lets the operator run logbench's operand images, which have the
// counter installed.
func allowLogbenchImages(reconciler *LoggingBenchmarkReconciler) {
	reconciler.Allowed.ImagePrefixes = []string{"ghcr.io/logbench/"}
}
