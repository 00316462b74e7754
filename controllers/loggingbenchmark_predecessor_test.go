package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// pvcProtection is the finalizer with which Kubernetes keeps a volume claim until no pod
// uses it.
const pvcProtection = "kubernetes.io/pvc-protection"

var _ = Describe("LoggingBenchmark reconciler with a benchmark deleted and created again at once", func() {
	var (
		ctx       = context.Background()
		namespace string
	)

	BeforeEach(func() {
		namespace = newNamespace()
	})

	newAgain := func() *v1alpha1.LoggingBenchmark {
		benchmark := newBenchmark(namespace, "again", v1alpha1.CleanupNever)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Workload.Clients = []int32{1}
		return benchmark
	}
	expectWaitingFor := func(pattern string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			benchmark := getBenchmark(g, namespace, "again")
			g.Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhaseProvisioning))
			g.Expect(benchmark.Status.Destinations).To(HaveLen(1))
			g.Expect(benchmark.Status.Destinations[0].State).To(Equal(v1alpha1.DestinationPending))
			g.Expect(benchmark.Status.Destinations[0].Message).To(MatchRegexp(pattern))
			g.Expect(eventMessages(g, namespace, EventWaitingForPredecessor)).To(ContainElement(MatchRegexp(pattern)))
		}, timeout).Should(Succeed())
	}

	It("creates nothing until the previous benchmark's cluster, volume claim and policy are gone", func() {
		DeferCleanup(startOperator(time.Hour))
		first := newAgain()
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		old := getCluster(namespace, "again-csv")
		By("playing CloudNativePG's volume claim of the cluster, which a pod still uses")
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: "again-csv-1", Labels: map[string]string{cloudnativepg.ClusterLabel: "again-csv"},
				Finalizers: []string{pvcProtection},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: cloudnativepg.ClusterGVK.GroupVersion().String(),
					Kind: cloudnativepg.ClusterGVK.Kind, Name: old.GetName(), UID: old.GetUID(), Controller: new(true)}},
			},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				},
			},
		}
		Expect(k8sClient.Create(ctx, claim)).To(Succeed())
		var policies networkingv1.NetworkPolicyList
		Expect(k8sClient.List(ctx, &policies, client.InNamespace(namespace),
			client.MatchingLabels{builders.LabelBenchmark: "again"})).To(Succeed())
		Expect(policies.Items).To(HaveLen(1))

		By("deleting the benchmark and creating it again at once: envtest runs no garbage collector")
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(first), &v1alpha1.LoggingBenchmark{}))
		}, timeout).Should(BeTrue())
		Expect(k8sClient.Create(ctx, newAgain())).To(Succeed())
		expectWaitingFor(`^waiting for the previous benchmark's Cluster again-csv to be deleted$`)
		Consistently(func() metav1.Object { return getCluster(namespace, "again-csv") }, 2*time.Second).
			Should(HaveField("GetUID()", old.GetUID()), "the old cluster is left to the garbage collector")

		By("waiting for the volume claim the garbage collector deletes with the old cluster")
		Expect(k8sClient.Delete(ctx, old)).To(Succeed())
		expectWaitingFor(`^waiting for the previous cluster again-csv's PersistentVolumeClaim again-csv-1 to be deleted$`)
		Expect(k8sClient.Delete(ctx, claim)).To(Succeed())
		Consistently(clusterExists(namespace, "again-csv"), 2*time.Second).Should(BeFalse(),
			"a volume claim being released is waited for too")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		claim.Finalizers = nil
		Expect(k8sClient.Update(ctx, claim)).To(Succeed())

		By("waiting for the old NetworkPolicy, then creating the new benchmark's cluster")
		expectWaitingFor(`^waiting for the previous benchmark's NetworkPolicy \S+ to be deleted$`)
		Expect(k8sClient.Delete(ctx, &policies.Items[0])).To(Succeed())
		Eventually(func(g Gomega) {
			second := getBenchmark(g, namespace, "again")
			cluster := getCluster(namespace, "again-csv")
			g.Expect(metav1.IsControlledBy(cluster, second)).To(BeTrue())
			g.Expect(second.Status.Destinations).To(HaveLen(1))
			g.Expect(second.Status.Destinations[0].State).To(Equal(v1alpha1.DestinationProvisioning))
		}, timeout).Should(Succeed())
	})
})
