package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// Neither admission nor the operator can see that a Secret a benchmark names is missing
// (the operator holds no right on Secrets): the kubelet is the first to know, and the
// operator passes on its words from the instance pod.
var _ = Describe("LoggingBenchmark reconciler and a missing Secret", func() {
	ctx := context.Background()

	// createBenchmark creates a benchmark of one Loki destination whose bearer token's
	// Secret does not exist, and plays the kubelet, which cannot find it for the instance
	// pod's shipper.
	createBenchmark := func(namespace string, podStartTimeout *metav1.Duration) {
		benchmark := newBenchmark(namespace, "nosecret", v1alpha1.CleanupNever)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.PodStartTimeout = podStartTimeout
		benchmark.Spec.Destinations = []v1alpha1.Destination{{Name: "loki", Type: v1alpha1.DestinationLoki,
			Loki: &v1alpha1.LokiSpec{URL: "http://loki.monitoring:3100", Auth: &v1alpha1.LokiAuth{
				BearerToken: &v1alpha1.SecretKeyRef{SecretName: "loki-token", Key: "token"},
			}}}}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		cluster := getCluster(namespace, "nosecret-loki")

		By("playing the kubelet, which cannot find the Secret for the instance pod's shipper")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "nosecret-loki-1",
				Labels: map[string]string{cloudnativepg.ClusterLabel: cluster.GetName()},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: cloudnativepg.ClusterGVK.GroupVersion().String(),
					Kind: cloudnativepg.ClusterGVK.Kind, Name: cluster.GetName(), UID: cluster.GetUID(), Controller: new(true)}},
			},
			Spec: corev1.PodSpec{
				// The namespace enforces the restricted Pod Security Standard.
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{Name: "shipper", Image: "cr.fluentbit.io/fluent/fluent-bit",
					SecurityContext: builders.RestrictedContainerSecurityContext()}},
			},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "shipper", Image: "cr.fluentbit.io/fluent/fluent-bit", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
					Message: `secret "loki-token" not found`},
			},
		}}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	}

	It("names a Secret the shipper cannot find in its destination's status", func() {
		namespace := newNamespace()
		DeferCleanup(startOperator(time.Hour))
		createBenchmark(namespace, nil)
		Eventually(func(g Gomega) {
			destinations := getBenchmark(g, namespace, "nosecret").Status.Destinations
			g.Expect(destinations).To(HaveLen(1))
			g.Expect(destinations[0].State).To(Equal(v1alpha1.DestinationProvisioning),
				"within the default podStartTimeout of 2m")
			g.Expect(destinations[0].Message).To(SatisfyAll(ContainSubstring("nosecret-loki-1"),
				ContainSubstring(`CreateContainerConfigError: secret "loki-token" not found`)))
		}, timeout).Should(Succeed())
	})

	It("fails the destination with the kubelet's words once spec.podStartTimeout has passed", func() {
		namespace := newNamespace()
		DeferCleanup(startOperator(time.Hour))
		createBenchmark(namespace, &metav1.Duration{Duration: 3 * time.Second})
		Eventually(func(g Gomega) {
			destinations := getBenchmark(g, namespace, "nosecret").Status.Destinations
			g.Expect(destinations).To(HaveLen(1))
			g.Expect(destinations[0].State).To(Equal(v1alpha1.DestinationFailed))
			g.Expect(destinations[0].Message).To(SatisfyAll(ContainSubstring("nosecret-loki-1"),
				ContainSubstring(`CreateContainerConfigError: secret "loki-token" not found`)))
		}, timeout).Should(Succeed())
	})
})
