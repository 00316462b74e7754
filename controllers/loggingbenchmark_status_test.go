package controllers

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/logbench/logbench/api/v1alpha1"
)

var _ = Describe("LoggingBenchmark status write", func() {
	ctx := context.Background()

	// passOver reads the benchmark as a pass does, and returns that read with a copy whose
	// status is the one the pass computed: pending, no run done of two.
	passOver := func(benchmark *v1alpha1.LoggingBenchmark) (before, computed *v1alpha1.LoggingBenchmark) {
		before = &v1alpha1.LoggingBenchmark{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), before)).To(Succeed())
		computed = before.DeepCopy()
		computed.Status.Phase = v1alpha1.PhasePending
		computed.Status.Progress = v1alpha1.Progress{RunsDone: 0, RunsTotal: 2, Text: "0/2"}
		return before, computed
	}

	// statusWriter is a reconciler whose status patches go through patches, which calls
	// the API server with the patch it is given.
	statusWriter := func(
		patches func(ctx context.Context, c client.Client, object client.Object, patch client.Patch) error,
	) *LoggingBenchmarkReconciler {
		withWatch, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		return &LoggingBenchmarkReconciler{APIReader: k8sClient, Client: interceptor.NewClient(withWatch, interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, object client.Object,
				patch client.Patch, opts ...client.SubResourcePatchOption,
			) error {
				Expect(subResource).To(Equal("status"))
				Expect(opts).To(BeEmpty())
				return patches(ctx, c, object, patch)
			},
		})}
	}
	passThrough := func(ctx context.Context, c client.Client, object client.Object, patch client.Patch) error {
		return c.Status().Patch(ctx, object, patch)
	}

	It("writes a first status whose progress holds zero counters", func() {
		benchmark := newBenchmark(newNamespace(), "first", v1alpha1.CleanupNever)
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		before, computed := passOver(benchmark)
		Expect(before.Status.Progress).To(BeZero())

		Expect(statusWriter(passThrough).patchStatus(ctx, before, computed)).To(Succeed())
		written := getBenchmark(Default, benchmark.Namespace, benchmark.Name)
		Expect(written.Status.Phase).To(Equal(v1alpha1.PhasePending))
		Expect(written.Status.Progress).To(Equal(computed.Status.Progress))
	})

	It("retries a write that another writer of the benchmark beat to the API server", func() {
		benchmark := newBenchmark(newNamespace(), "raced", v1alpha1.CleanupNever)
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		before, computed := passOver(benchmark)

		attempts := 0
		writer := statusWriter(func(ctx context.Context, c client.Client, object client.Object, patch client.Patch) error {
			attempts++
			if attempts == 1 {
				// The other writer labels the benchmark between this attempt's read and its patch.
				labelled := &v1alpha1.LoggingBenchmark{}
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(object), labelled)).To(Succeed())
				labelled.Labels = map[string]string{"team": "db"}
				Expect(k8sClient.Update(ctx, labelled)).To(Succeed())
			}
			err := c.Status().Patch(ctx, object, patch)
			if attempts == 1 {
				Expect(apierrors.IsConflict(err)).To(BeTrue(), "the first attempt's optimistic lock fails: %v", err)
			}
			return err
		})
		Expect(writer.patchStatus(ctx, before, computed)).To(Succeed())
		Expect(attempts).To(Equal(2))
		written := getBenchmark(Default, benchmark.Namespace, benchmark.Name)
		Expect(written.Labels).To(HaveKeyWithValue("team", "db"))
		Expect(written.Status.Progress).To(Equal(computed.Status.Progress))
	})

	It("leaves a newer status than the one the pass computed from", func() {
		benchmark := newBenchmark(newNamespace(), "stale", v1alpha1.CleanupNever)
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		before, computed := passOver(benchmark)
		newer := computed.DeepCopy()
		newer.Status.Phase = v1alpha1.PhaseProvisioning
		Expect(k8sClient.Status().Update(ctx, newer)).To(Succeed())

		writer := statusWriter(func(context.Context, client.Client, client.Object, client.Patch) error {
			Fail("a status computed from an older one is not written")
			return nil
		})
		Expect(writer.patchStatus(ctx, before, computed)).To(MatchError(errStaleStatus))
		Expect(getBenchmark(Default, benchmark.Namespace, benchmark.Name).Status.Phase).
			To(Equal(v1alpha1.PhaseProvisioning))
	})
})
