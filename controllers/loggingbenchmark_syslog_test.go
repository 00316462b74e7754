package controllers

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
)

// markSyslogReceiverReady plays the Deployment controller and the kubelet: the receiver's
// replica is ready.
func markSyslogReceiverReady(namespace, name string) {
	Eventually(func(g Gomega) {
		deployment := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, deployment)).
			To(Succeed())
		deployment.Status = appsv1.DeploymentStatus{
			ObservedGeneration: deployment.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		}
		g.Expect(k8sClient.Status().Update(context.Background(), deployment)).To(Succeed())
	}, timeout).Should(Succeed())
}

var _ = Describe("LoggingBenchmark reconciler with a forwarding Syslog destination", func() {
	var (
		ctx       = context.Background()
		namespace string
	)

	BeforeEach(func() {
		namespace = newNamespace()
	})

	newSyslogBenchmark := func(name string) *v1alpha1.LoggingBenchmark {
		benchmark := newBenchmark(namespace, name, v1alpha1.CleanupAlways)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Workload.Clients = []int32{1}
		benchmark.Spec.Destinations = []v1alpha1.Destination{{Name: "sys", Type: v1alpha1.DestinationSyslog,
			Syslog: &v1alpha1.SyslogSpec{Transport: v1alpha1.SyslogUDP}}}
		return benchmark
	}

	It("deploys the receiver before the cluster, runs once it is ready, and deletes it on cleanup", func() {
		benchmark := newSyslogBenchmark("fwd")
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		DeferCleanup(startOperator(time.Minute))

		cluster := getCluster(namespace, "fwd-sys")
		key := client.ObjectKey{Namespace: namespace, Name: "fwd-sys-syslog"}
		deployment, service := &appsv1.Deployment{}, &corev1.Service{}
		configMap, policy := &corev1.ConfigMap{}, &networkingv1.NetworkPolicy{}
		for _, object := range []client.Object{deployment, service, configMap, policy} {
			Expect(k8sClient.Get(ctx, key, object)).To(Succeed(), "%T %s", object, key)
			Expect(metav1.IsControlledBy(object, benchmark)).To(BeTrue(), "%T %s", object, key)
			revision, err := strconv.ParseInt(object.GetResourceVersion(), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			clusterRevision, err := strconv.ParseInt(cluster.GetResourceVersion(), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			Expect(revision).To(BeNumerically("<", clusterRevision), "%T %s is written before the cluster", object, key)
		}
		target := shipping.Target{Namespace: namespace, Benchmark: "fwd", Destination: benchmark.Spec.Destinations[0],
			Cluster: "fwd-sys"}
		receiverConfig, err := shipping.SyslogReceiverConfig(target)
		Expect(err).NotTo(HaveOccurred())
		Expect(configMap.Data).To(Equal(map[string]string{shipping.ConfigKey: string(receiverConfig)}))
		Expect(service.Spec.Ports).To(ContainElement(SatisfyAll(
			HaveField("Name", shipping.SyslogPortName), HaveField("Protocol", corev1.ProtocolUDP))))

		By("forwarding from the cluster's sidecar to the receiver Service")
		sidecar := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fwd-sys-shipper"}, sidecar)).To(Succeed())
		Expect(sidecar.Data[shipping.ConfigKey]).To(ContainSubstring("host: fwd-sys-syslog." + namespace + ".svc"))

		By("waiting for the receiver after the cluster is ready")
		markClusterReady(namespace, "fwd-sys")
		Consistently(func(g Gomega) {
			g.Expect(listRunners(namespace)).To(BeEmpty())
			fresh := getBenchmark(g, namespace, "fwd")
			g.Expect(fresh.Status.Phase).To(Equal(v1alpha1.PhaseProvisioning))
			g.Expect(fresh.Status.Destinations).To(ContainElement(SatisfyAll(
				HaveField("Name", "sys"), HaveField("State", v1alpha1.DestinationProvisioning))))
		}, 3*time.Second).Should(Succeed())

		markSyslogReceiverReady(namespace, key.Name)
		playRuns(namespace, "fwd", []string{"sys"}, runTPS{"sys": {1: 800}}, nil)
		expectPhase(namespace, "fwd", v1alpha1.PhaseSucceeded)

		By("deleting the receiver with the cluster under Always")
		for _, object := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}} {
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, key, object))
			}, timeout).Should(BeTrue(), "%T %s is deleted", object, key)
		}
	})

	It("starts the run when the receiver becomes ready, woken by its Deployment's watch", func() {
		DeferCleanup(startOperator(time.Hour))
		Expect(k8sClient.Create(ctx, newSyslogBenchmark("woken"))).To(Succeed())
		markClusterReady(namespace, "woken-sys")
		Eventually(func(g Gomega) {
			g.Expect(destinationOf(g, namespace, "woken", "sys").Message).
				To(ContainSubstring("syslog receiver woken-sys-syslog: starting"))
		}, timeout).Should(Succeed())
		// Once the passes that the status writes bring are over, the last asked to look
		// again notReadyRecheck later: a run that starts well before then was started by
		// the pass the Deployment's status change brought.
		Eventually(func(g Gomega) {
			written := getBenchmark(g, namespace, "woken").ResourceVersion
			time.Sleep(time.Second)
			g.Expect(getBenchmark(g, namespace, "woken").ResourceVersion).To(Equal(written))
		}, timeout).Should(Succeed())
		markSyslogReceiverReady(namespace, "woken-sys-syslog")
		Eventually(func() []appsv1.Deployment { return listRunners(namespace) }, notReadyRecheck/3).ShouldNot(BeEmpty())
	})

	It("fails the destination whose receiver is not ready in time, saying so", func() {
		DeferCleanup(startOperator(4 * time.Second))
		Expect(k8sClient.Create(ctx, newSyslogBenchmark("late"))).To(Succeed())
		markClusterReady(namespace, "late-sys")

		benchmark := expectPhase(namespace, "late", v1alpha1.PhaseFailed)
		Expect(benchmark.Status.Destinations).To(ContainElement(SatisfyAll(
			HaveField("State", v1alpha1.DestinationFailed),
			HaveField("Message", ContainSubstring("syslog receiver late-sys-syslog not ready within 4s")))))
		Expect(listRunners(namespace)).To(BeEmpty())
	})

	It("fails, without taking it over, when a Service in the receiver's name exists", func() {
		foreign := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "taken-sys-syslog"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 514}}},
		}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		Expect(k8sClient.Create(ctx, newSyslogBenchmark("taken"))).To(Succeed())
		DeferCleanup(startOperator(time.Minute))

		benchmark := expectPhase(namespace, "taken", v1alpha1.PhaseFailed)
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonForeignObject))
		Expect(degraded.Message).To(ContainSubstring("Service " + namespace + "/taken-sys-syslog"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
		Expect(foreign.OwnerReferences).To(BeEmpty())
		Expect(clusterExists(namespace, "taken-sys")()).To(BeFalse())
	})
})
