package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/logbench/logbench/api/v1alpha1"
)

// The CRD admits the logging settings only a count at the source accounts for, since
// logbench run --local reads the same CRD and loads the counter; the clusters' PostgreSQL
// images do not have it, so the operator refuses them.
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
			ContainSubstring("logbench_counter extension in the PostgreSQL image"),
			ContainSubstring("not yet supported in clusters"),
		))
		Expect(clusterExists(namespace, "sampled-baseline")()).To(BeFalse())
		Expect(listJobs(namespace)).To(BeEmpty())
	})
})
