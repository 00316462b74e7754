package controllers

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// createdKinds are the kinds of the objects logbench creates for a benchmark and labels
// builders.LabelBenchmark; the agent's ServiceAccount and RoleBinding, shared by the benchmarks of
// a namespace, are named, not labelled.
var createdKinds = []schema.GroupVersionKind{
	cloudnativepg.ClusterGVK, batchv1.SchemeGroupVersion.WithKind("Job"), corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), appsv1.SchemeGroupVersion.WithKind("Deployment"),
	corev1.SchemeGroupVersion.WithKind("Service"),
}

// createdObjects lists the metadata of every object logbench created for the benchmark,
// by kind and name.
func createdObjects(g Gomega, benchmark *v1alpha1.LoggingBenchmark) map[string]metav1.PartialObjectMetadata {
	objects := map[string]metav1.PartialObjectMetadata{}
	for _, kind := range createdKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
		g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(benchmark.Namespace),
			client.MatchingLabels{builders.LabelBenchmark: benchmark.Name})).To(Succeed())
		for _, object := range list.Items {
			object.SetGroupVersionKind(kind)
			objects[kind.Kind+"/"+object.Name] = object
		}
	}
	for kind, name := range map[schema.GroupVersionKind]string{
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"): builders.AgentServiceAccountName,
		rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):    builders.AgentRoleBindingName,
	} {
		object := metav1.PartialObjectMetadata{}
		object.SetGroupVersionKind(kind)
		err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: benchmark.Namespace, Name: name},
			&object)
		if apierrors.IsNotFound(err) {
			continue
		}
		g.Expect(err).NotTo(HaveOccurred())
		objects[kind.Kind+"/"+name] = object
	}
	return objects
}

var _ = Describe("LoggingBenchmark reconciler with objects deleted mid-benchmark", func() {
	var (
		ctx       = context.Background()
		namespace string
	)

	BeforeEach(func() {
		namespace = newNamespace()
	})

	It("creates again what it created, owned by the benchmark, so that deleting the benchmark leaves nothing", func() {
		benchmark := newBenchmark(namespace, "keep", v1alpha1.CleanupNever)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Workload.Clients = []int32{1}
		benchmark.Spec.Destinations = []v1alpha1.Destination{
			{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar,
				Shipper: &v1alpha1.ShipperSpec{Output: v1alpha1.OutputStdout}},
			{Name: "sys", Type: v1alpha1.DestinationSyslog, Syslog: &v1alpha1.SyslogSpec{Transport: v1alpha1.SyslogUDP}},
		}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		DeferCleanup(startOperator(time.Minute))
		markClusterReady(namespace, "keep-fluent")
		markClusterReady(namespace, "keep-sys")
		markSyslogReceiverReady(namespace, builders.SyslogReceiverName("keep", "sys"))
		running := assignedRun(namespace, "keep", nil)

		var before map[string]metav1.PartialObjectMetadata
		Eventually(func(g Gomega) {
			before = createdObjects(g, benchmark)
			g.Expect(before).To(HaveKey("ServiceAccount/" + builders.AgentServiceAccountName))
		}, timeout).Should(Succeed())
		receiver := builders.SyslogReceiverName("keep", "sys")
		kept := []string{"ConfigMap/keep-fluent-shipper", "Deployment/" + receiver, "Service/" + receiver,
			"ConfigMap/" + receiver, "ServiceAccount/" + builders.AgentServiceAccountName, "RoleBinding/" + builders.AgentRoleBindingName}
		Expect(before).To(HaveKey("Cluster/keep-fluent"))
		Expect(before).To(HaveKey("Deployment/" + builders.RunnerName("keep", running.Destination)))
		for _, key := range kept {
			Expect(before).To(HaveKey(key))
		}
		policies := 0
		for key := range before {
			if strings.HasPrefix(key, "NetworkPolicy/") {
				kept = append(kept, key)
				policies++
			}
		}
		Expect(policies).To(Equal(3), "one per cluster and the receiver's")

		By("deleting them, the runner of the run among them, while the run runs")
		kept = append(kept, "Deployment/"+builders.RunnerName("keep", running.Destination))
		for _, key := range kept {
			object := before[key]
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &object))).To(Succeed(), key)
		}
		Eventually(func(g Gomega) {
			after := createdObjects(g, benchmark)
			for _, key := range kept {
				g.Expect(after).To(HaveKey(key))
				g.Expect(after[key].UID).NotTo(Equal(before[key].UID), "%s created again", key)
			}
		}, timeout).Should(Succeed())
		Expect(assignedRun(namespace, "keep", nil)).To(Equal(running), "the run still runs")

		By("owning everything it created, so that the garbage collector deletes it with the benchmark")
		Eventually(func(g Gomega) {
			created := getBenchmark(g, namespace, "keep")
			for key, object := range createdObjects(g, created) {
				g.Expect(object.OwnerReferences).To(ContainElement(SatisfyAll(
					HaveField("UID", created.UID), HaveField("Kind", "LoggingBenchmark"))), key)
			}
		}, timeout).Should(Succeed())
	})
})
