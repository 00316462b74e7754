package controllers

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/logbench/logbench/api/v1alpha1"
)

var _ = Describe("Objects a benchmark owns", func() {
	ctx := context.Background()
	var (
		namespace  string
		benchmark  *v1alpha1.LoggingBenchmark
		reconciler *LoggingBenchmarkReconciler
	)

	BeforeEach(func() {
		namespace = newNamespace()
		benchmark = newBenchmark(namespace, "owner", v1alpha1.CleanupNever)
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		reconciler = &LoggingBenchmarkReconciler{Client: k8sClient, APIReader: k8sClient, Scheme: scheme}
	})

	configMap := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "config", Labels: map[string]string{"owned": "yes"}},
			Data:       map[string]string{"config": data},
		}
	}
	keepData := func(existing, desired *corev1.ConfigMap) { existing.Data = desired.Data }
	read := func(object client.Object) client.Object {
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(object), object)).To(Succeed())
		return object
	}

	It("creates an object controlled by the benchmark, then changes only the fields it keeps", func() {
		created, err := ensureOwned(ctx, reconciler, benchmark, configMap("first"), controlledBy, keepData)
		Expect(err).NotTo(HaveOccurred())
		Expect(created).To(BeTrue())
		written := read(configMap("")).(*corev1.ConfigMap)
		Expect(metav1.IsControlledBy(written, benchmark)).To(BeTrue())

		By("keeping what another writer set")
		written.Labels["team"] = "db"
		written.Annotations = map[string]string{"note": "kept"}
		Expect(k8sClient.Update(ctx, written)).To(Succeed())
		created, err = ensureOwned(ctx, reconciler, benchmark, configMap("second"), controlledBy, keepData)
		Expect(err).NotTo(HaveOccurred())
		Expect(created).To(BeFalse())
		written = read(configMap("")).(*corev1.ConfigMap)
		Expect(written.Data).To(Equal(map[string]string{"config": "second"}))
		Expect(written.Labels).To(Equal(map[string]string{"owned": "yes", "team": "db"}))
		Expect(written.Annotations).To(Equal(map[string]string{"note": "kept"}))
		Expect(written.OwnerReferences).To(HaveLen(1))

		By("leaving an object that it does not keep as it is")
		_, err = ensureOwned(ctx, reconciler, benchmark, configMap("third"), controlledBy, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(read(configMap("")).(*corev1.ConfigMap).Data).To(Equal(map[string]string{"config": "second"}))
	})

	It("refuses an object of the name that the benchmark does not control, leaving it as it is", func() {
		foreign := configMap("foreign")
		foreign.Labels = nil
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		_, err := ensureOwned(ctx, reconciler, benchmark, configMap("mine"), controlledBy, keepData)
		Expect(err).To(MatchError(&foreignObjectError{kind: "ConfigMap", namespace: namespace, name: "config"}))
		Expect(err.Error()).To(ContainSubstring("exists and no LoggingBenchmark owns it"))
		left := read(configMap("")).(*corev1.ConfigMap)
		Expect(left.OwnerReferences).To(BeEmpty())
		Expect(left.Labels).To(BeEmpty())
		Expect(left.Data).To(Equal(map[string]string{"config": "foreign"}))
	})

	It("refuses an object its read missed, found when the create finds the name taken", func() {
		Expect(k8sClient.Create(ctx, configMap("foreign"))).To(Succeed())
		withWatch, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		// A cache that has not seen the object yet.
		unseen := interceptor.NewClient(withWatch, interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "config")
			},
		})
		reconciler.Client = unseen
		_, err = ensureOwned(ctx, reconciler, benchmark, configMap("mine"), controlledBy, keepData)
		Expect(err).To(MatchError(&foreignObjectError{kind: "ConfigMap", namespace: namespace, name: "config"}))
		Expect(read(configMap("")).(*corev1.ConfigMap).Data).To(Equal(map[string]string{"config": "foreign"}))

		By("taking one of its own for created before")
		Expect(k8sClient.Delete(ctx, configMap(""))).To(Succeed())
		reconciler.Client = k8sClient
		_, err = ensureOwned(ctx, reconciler, benchmark, configMap("mine"), controlledBy, keepData)
		Expect(err).NotTo(HaveOccurred())
		reconciler.Client = unseen
		created, err := ensureOwned(ctx, reconciler, benchmark, configMap("mine"), controlledBy, keepData)
		Expect(err).NotTo(HaveOccurred())
		Expect(created).To(BeFalse())
	})

	It("shares an object among the benchmarks of the namespace, each one of its owners", func() {
		other := newBenchmark(namespace, "other", v1alpha1.CleanupNever)
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		for _, owner := range []*v1alpha1.LoggingBenchmark{benchmark, other, benchmark} {
			account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "shared"}}
			_, err := ensureOwned(ctx, reconciler, owner, account, sharedBy, nil)
			Expect(err).NotTo(HaveOccurred())
		}
		account := read(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "shared"}})
		Expect(account.GetOwnerReferences()).To(ConsistOf(
			SatisfyAll(HaveField("UID", benchmark.UID), HaveField("Controller", BeNil())),
			SatisfyAll(HaveField("UID", other.UID), HaveField("Controller", BeNil()))))
	})
})
