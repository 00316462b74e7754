package controllers

// The envtest control plane runs neither kubelet, nor the Deployment controller, nor
// CloudNativePG, nor the runners: these helpers play their parts.

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/results"
)

const (
	testClusterImage = "ghcr.io/cloudnative-pg/postgresql:17.6"
	timeout          = 30 * time.Second
	// serverNode runs every primary pod the tests play; clientNode every runner pod.
	serverNode = "node-server"
	clientNode = "node-client"
)

// newNamespace creates a namespace that enforces the restricted Pod Security Standard,
// as a hardened cluster's do.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "bench-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	Expect(k8sClient.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// getCluster waits for the Cluster to exist and returns it.
func getCluster(namespace, name string) *unstructured.Unstructured {
	cluster := cloudnativepg.NewCluster()
	Eventually(func() error {
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, cluster)
	}, timeout).Should(Succeed())
	return cluster
}

// markClusterReady plays CloudNativePG reporting a healthy cluster, and its primary pod
// on serverNode.
func markClusterReady(namespace, name string) {
	primary := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-1", Labels: cloudnativepg.PrimaryPodLabels(name)},
		Spec: corev1.PodSpec{
			NodeName: serverNode,
			// As restricted as CloudNativePG's instance pods, which the namespace requires.
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   new(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "postgres", Image: testClusterImage, SecurityContext: builders.RestrictedContainerSecurityContext(),
			}},
		},
	}
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(context.Background(), primary))).To(Succeed())
	Eventually(func(g Gomega) {
		cluster := getCluster(namespace, name)
		instances, _, _ := unstructured.NestedInt64(cluster.Object, "spec", "instances")
		cluster.Object["status"] = map[string]any{
			"phase":          cloudnativepg.PhaseHealthy,
			"instances":      instances,
			"readyInstances": instances,
			"image":          testClusterImage,
		}
		g.Expect(k8sClient.Status().Update(context.Background(), cluster)).To(Succeed())
	}, timeout).Should(Succeed())
}

func clusterExists(namespace, name string) func() bool {
	return func() bool {
		return k8sClient.Get(
			context.Background(),
			types.NamespacedName{Namespace: namespace, Name: name},
			cloudnativepg.NewCluster(),
		) == nil
	}
}

// getRunner waits for the runner Deployment to exist and returns it.
func getRunner(namespace, name string) *appsv1.Deployment {
	runner := &appsv1.Deployment{}
	Eventually(func() error {
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, runner)
	}, timeout).Should(Succeed())
	return runner
}

// listRunners lists the runner Deployments of the namespace.
func listRunners(namespace string) []appsv1.Deployment {
	var runners appsv1.DeploymentList
	Expect(k8sClient.List(context.Background(), &runners, client.InNamespace(namespace),
		client.HasLabels{builders.LabelComponent})).To(Succeed())
	var only []appsv1.Deployment
	for _, deployment := range runners.Items {
		if deployment.Labels[builders.LabelComponent] == "runner" {
			only = append(only, deployment)
		}
	}
	return only
}

// listRecords lists the run records of the namespace.
func listRecords(namespace string) []v1alpha1.LoggingBenchmarkRun {
	var records v1alpha1.LoggingBenchmarkRunList
	Expect(k8sClient.List(context.Background(), &records, client.InNamespace(namespace))).To(Succeed())
	return records.Items
}

// resultMessage is the result of an agent that measured the given TPS, as JSON.
func resultMessage(tps float64) string {
	encoded, err := json.Marshal(v1alpha1.RepeatResult{
		TPS:          tps,
		LatencyAvgMs: 1000 / tps,
		Transactions: int64(tps * 10),
		Records:      v1alpha1.Records{Expected: int64(tps * 10), Delivered: int64(tps * 10), Dropped: ptr.To[int64](0)},
		DrainSeconds: 0.5,
	})
	Expect(err).NotTo(HaveOccurred())
	return string(encoded)
}

// assignedRun waits for the status of a benchmark to assign a run whose record is not
// among played, the records of the runs already played, and returns it.
func assignedRun(namespace, benchmark string, played []string) results.RunKey {
	var assigned results.RunKey
	Eventually(func(g Gomega) {
		status := getBenchmark(g, namespace, benchmark).Status
		g.Expect(status.Phase).To(Equal(v1alpha1.PhaseRunning))
		g.Expect(status.Progress.CurrentSince).NotTo(BeNil())
		var err error
		assigned, err = results.ParseRunKey(status.Progress.Current)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(played).NotTo(ContainElement(builders.RunRecordName(benchmark, assigned)))
	}, timeout).Should(Succeed())
	return assigned
}

// finishRun plays the runner of the run's destination: it records the run with the
// result message holds, or, unless succeeded, failed with message as the error, on
// clientNode against the primary on serverNode.
func finishRun(namespace, benchmark string, run results.RunKey, message string, succeeded bool) {
	ctx := context.Background()
	owner := getBenchmark(Default, namespace, benchmark)
	var result v1alpha1.RepeatResult
	if succeeded {
		Expect(json.Unmarshal([]byte(message), &result)).To(Succeed())
	} else {
		result.Error = message
	}
	result.ClientNode, result.ServerNode = clientNode, serverNode
	record := builders.RunRecord(owner, run, result)
	record.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "LoggingBenchmark", Name: owner.Name, UID: owner.UID,
		Controller: new(true),
	}}
	Expect(k8sClient.Create(ctx, record)).To(Succeed())
}

// getBenchmark reads a benchmark into a fresh object.
func getBenchmark(g Gomega, namespace, name string) *v1alpha1.LoggingBenchmark {
	benchmark := &v1alpha1.LoggingBenchmark{}
	g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, benchmark)).
		To(Succeed())
	return benchmark
}
