package controllers

// The envtest control plane runs neither kubelet, nor the Job controller, nor
// CloudNativePG: these helpers play their parts.

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

const (
	testClusterImage = "ghcr.io/cloudnative-pg/postgresql:17.6"
	timeout          = 30 * time.Second
	// serverNode runs every primary pod the tests play; clientNode every agent pod.
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

// getJob waits for the Job to exist and returns it.
func getJob(namespace, name string) *batchv1.Job {
	job := &batchv1.Job{}
	Eventually(func() error {
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, job)
	}, timeout).Should(Succeed())
	return job
}

func listJobs(namespace string) []batchv1.Job {
	var jobs batchv1.JobList
	Expect(k8sClient.List(context.Background(), &jobs, client.InNamespace(namespace))).To(Succeed())
	return jobs.Items
}

// resultMessage is the termination message of an agent that measured the given TPS.
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

// finishJob plays kubelet and the Job controller: the Job's pod terminates with the
// message, and the Job completes, or fails when succeeded is false.
func finishJob(namespace, name, message string, succeeded bool) {
	ctx := context.Background()
	job := getJob(namespace, name)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name + "-pod",
			Labels:    map[string]string{batchv1.JobNameLabel: name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: new(true),
			}},
		},
		Spec: job.Spec.Template.Spec,
	}
	pod.Spec.NodeName = clientNode
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	exitCode := int32(0)
	if !succeeded {
		exitCode = 1
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodSucceeded
	if !succeeded {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  builders.AgentContainer,
		Image: testClusterImage,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Message: message, StartedAt: now, FinishedAt: now,
		}},
	}}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())

	Eventually(func(g Gomega) {
		job := getJob(namespace, name)
		job.Status.StartTime = &now
		if succeeded {
			job.Status.Succeeded = 1
			job.Status.CompletionTime = &now
			job.Status.Conditions = []batchv1.JobCondition{
				jobCondition(batchv1.JobSuccessCriteriaMet, "CompletionsReached", ""),
				jobCondition(batchv1.JobComplete, "CompletionsReached", ""),
			}
		} else {
			job.Status.Failed = 1
			job.Status.Conditions = []batchv1.JobCondition{
				jobCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, backoffLimitReached),
				jobCondition(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, backoffLimitReached),
			}
		}
		g.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
	}, timeout).Should(Succeed())
}

func jobCondition(conditionType batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
	return batchv1.JobCondition{
		Type: conditionType, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}
}

// getBenchmark reads a benchmark into a fresh object.
func getBenchmark(g Gomega, namespace, name string) *v1alpha1.LoggingBenchmark {
	benchmark := &v1alpha1.LoggingBenchmark{}
	g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, benchmark)).
		To(Succeed())
	return benchmark
}

// backoffLimitReached is the message of the Job controller's Failed condition.
const backoffLimitReached = "Job has reached the specified backoff limit"
