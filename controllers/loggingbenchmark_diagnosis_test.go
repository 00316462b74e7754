package controllers

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/results"
)

// containerLogs plays the kubelet's logs: each container's, by name, whatever its pod.
type containerLogs map[string]string

func (logs containerLogs) TailLog(_ context.Context, _ string, container containerRef) (string, error) {
	if log, found := logs[container.Container]; found {
		return log, nil
	}
	return "", errors.New("no log")
}

// createClusterPod plays CloudNativePG and the kubelet: a pod of the cluster (an instance,
// or the pod of its Job when job is set) whose status says what setStatus writes.
func createClusterPod(namespace, cluster, name, job string, setStatus func(*corev1.PodStatus)) {
	ctx := context.Background()
	labels := map[string]string{cloudnativepg.ClusterLabel: cluster}
	if job != "" {
		labels[batchv1.JobNameLabel] = job
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   new(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "postgres", Image: testClusterImage, SecurityContext: builders.RestrictedContainerSecurityContext(),
			}},
		},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	setStatus(&pod.Status)
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
}

// setClusterPhase plays CloudNativePG reporting phase and its reason.
func setClusterPhase(namespace, name, phase, reason string) {
	Eventually(func(g Gomega) {
		cluster := getCluster(namespace, name)
		cluster.Object["status"] = map[string]any{"phase": phase, "phaseReason": reason}
		g.Expect(k8sClient.Status().Update(context.Background(), cluster)).To(Succeed())
	}, timeout).Should(Succeed())
}

// destinationOf reads a destination's status.
func destinationOf(g Gomega, namespace, benchmark, destination string) v1alpha1.DestinationStatus {
	for _, dest := range getBenchmark(g, namespace, benchmark).Status.Destinations {
		if dest.Name == destination {
			return dest
		}
	}
	g.Expect(destination).To(BeEmpty(), "no status of destination %s", destination)
	return v1alpha1.DestinationStatus{}
}

// eventMessages are the messages of the events of reason about objects of the namespace.
func eventMessages(g Gomega, namespace, reason string) []string {
	var events corev1.EventList
	g.Expect(k8sClient.List(context.Background(), &events, client.InNamespace(namespace))).To(Succeed())
	var messages []string
	for _, event := range events.Items {
		if event.Reason == reason {
			messages = append(messages, event.Message)
		}
	}
	return messages
}

var _ = Describe("LoggingBenchmark reconciler with a destination whose cluster is not ready", func() {
	var (
		ctx       = context.Background()
		namespace string
	)

	BeforeEach(func() {
		namespace = newNamespace()
	})

	// newDestinationsBenchmark is a benchmark of CSVLog destinations of these names, one
	// run each, that waits an hour for a cluster: a destination that fails sooner says
	// why it did at once.
	newDestinationsBenchmark := func(name string, destinations ...string) *v1alpha1.LoggingBenchmark {
		benchmark := newBenchmark(namespace, name, v1alpha1.CleanupNever)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Workload.Clients = []int32{1}
		benchmark.Spec.Destinations = nil
		for _, destination := range destinations {
			benchmark.Spec.Destinations = append(benchmark.Spec.Destinations,
				v1alpha1.Destination{Name: destination, Type: v1alpha1.DestinationCSVLog})
		}
		return benchmark
	}

	It("fails a destination at once whose image does not exist, saying so in its status, kubectl get and an event",
		func() {
			DeferCleanup(startOperator(time.Hour))
			Expect(k8sClient.Create(ctx, newDestinationsBenchmark("typo", "csv", "json"))).To(Succeed())
			getCluster(namespace, "typo-csv")
			createClusterPod(namespace, "typo-csv", "typo-csv-1", "", func(status *corev1.PodStatus) {
				status.Phase = corev1.PodPending
				status.ContainerStatuses = []corev1.ContainerStatus{{Name: "fluent-bit", State: corev1.ContainerState{
					Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: missingImage},
				}}}
			})

			want := "cluster typo-csv: pod typo-csv-1: container fluent-bit: ImagePullBackOff: " + missingImage
			Eventually(func(g Gomega) {
				dest := destinationOf(g, namespace, "typo", "csv")
				g.Expect(dest.State).To(Equal(v1alpha1.DestinationFailed))
				g.Expect(dest.Message).To(Equal(want))
			}, timeout).Should(Succeed())
			Eventually(func(g Gomega) {
				benchmark := getBenchmark(g, namespace, "typo")
				g.Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhaseProvisioning), "the other destination goes on")
				ready := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Message).To(ContainSubstring("destination csv failed: " + want))
				g.Expect(eventMessages(g, namespace, EventClusterFailed)).To(ContainElement(want))
			}, timeout).Should(Succeed())
			record := &v1alpha1.LoggingBenchmarkRun{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: builders.RunRecordName("typo",
				results.RunKey{Destination: "csv", Clients: 1, Repeat: 1})}, record)).To(Succeed())
			reason, failed := builders.DestinationFailure(record)
			Expect(failed).To(BeTrue(), "the run's record holds the failure")
			Expect(reason).To(Equal(want))
		})

	// A pass that fails a destination records its runs before it writes the status, which
	// it leaves out when a newer status was written meanwhile: the next pass, which finds
	// the destination's runs finished and diagnoses it no more, reads its failure from them.
	It("fails a destination whose failure only its runs' records hold", func() {
		benchmark := newDestinationsBenchmark("lost", "csv", "json")
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		want := "cluster lost-csv: pod lost-csv-1: container postgres: ImagePullBackOff: " + missingImage
		failedWithDestination := builders.RunRecord(benchmark, results.RunKey{Destination: "csv", Clients: 1, Repeat: 1},
			v1alpha1.RepeatResult{Error: want})
		builders.FailedWithDestination(failedWithDestination)
		failedByRunner := builders.RunRecord(benchmark, results.RunKey{Destination: "json", Clients: 1, Repeat: 1},
			v1alpha1.RepeatResult{Error: "pgbench: connection refused"})
		for _, record := range []*v1alpha1.LoggingBenchmarkRun{failedWithDestination, failedByRunner} {
			Expect(controllerutil.SetControllerReference(benchmark, record, scheme)).To(Succeed())
			Expect(k8sClient.Create(ctx, record)).To(Succeed())
		}

		DeferCleanup(startOperator(time.Hour))
		finished := expectPhase(namespace, "lost", v1alpha1.PhaseFailed)
		Expect(finished.Status.Destinations).To(ConsistOf(
			SatisfyAll(HaveField("Name", "csv"), HaveField("State", v1alpha1.DestinationFailed),
				HaveField("Message", want)),
			SatisfyAll(HaveField("Name", "json"), HaveField("State", v1alpha1.DestinationPending),
				HaveField("Message", BeEmpty())),
		), "a run its runner failed leaves its destination as it was")
		Eventually(func(g Gomega) {
			g.Expect(eventMessages(g, namespace, EventClusterFailed)).To(ConsistOf(want))
		}, timeout).Should(Succeed())
	})

	It("says why a cluster is not ready: a pod without a node, a pending volume claim, CloudNativePG's phase", func() {
		DeferCleanup(startOperator(time.Hour))
		Expect(k8sClient.Create(ctx, newDestinationsBenchmark("why", "sched", "claim", "phase"))).To(Succeed())
		getCluster(namespace, "why-phase")
		createClusterPod(namespace, "why-sched", "why-sched-1", "", func(status *corev1.PodStatus) {
			status.Phase = corev1.PodPending
			status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient memory."}}
		})
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "why-claim-1",
				Labels: map[string]string{cloudnativepg.ClusterLabel: "why-claim"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				},
			},
		}
		Expect(k8sClient.Create(ctx, claim)).To(Succeed())
		claim.Status.Phase = corev1.ClaimPending
		Expect(k8sClient.Status().Update(ctx, claim)).To(Succeed())
		Expect(k8sClient.Create(ctx, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "why-claim-1.provisioning"},
			InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace,
				Name: claim.Name, UID: claim.UID},
			Type: corev1.EventTypeWarning, Reason: "ProvisioningFailed",
			Message: `storageclass.storage.k8s.io "fast" not found`, LastTimestamp: metav1.Now(),
		})).To(Succeed())
		setClusterPhase(namespace, "why-phase", "Setting up primary", "Creating primary instance why-phase-1")

		wants := map[string]string{
			"sched": "cluster why-sched: pod why-sched-1: not scheduled: 0/1 nodes are available: 1 Insufficient memory.",
			"claim": `cluster why-claim: PersistentVolumeClaim why-claim-1 is pending: ProvisioningFailed: ` +
				`storageclass.storage.k8s.io "fast" not found`,
			"phase": `cluster why-phase: CloudNativePG phase "Setting up primary": Creating primary instance why-phase-1`,
		}
		Eventually(func(g Gomega) {
			for destination, want := range wants {
				dest := destinationOf(g, namespace, "why", destination)
				g.Expect(dest.State).To(Equal(v1alpha1.DestinationProvisioning), destination)
				g.Expect(dest.Message).To(Equal(want), destination)
			}
			g.Expect(eventMessages(g, namespace, EventClusterNotReady)).To(
				ContainElements(wants["sched"], wants["claim"]), "what is wrong is announced")
			g.Expect(eventMessages(g, namespace, EventClusterNotReady)).NotTo(
				ContainElement(wants["phase"]), "CloudNativePG at work is not")
		}, timeout).Should(Succeed())

		By("failing at once the destination whose cluster CloudNativePG gives up on")
		unrecoverable := "Cluster is unrecoverable and needs manual intervention"
		setClusterPhase(namespace, "why-phase", unrecoverable, "No pods are active, the cluster needs manual intervention ")
		Eventually(func(g Gomega) {
			dest := destinationOf(g, namespace, "why", "phase")
			g.Expect(dest.State).To(Equal(v1alpha1.DestinationFailed))
			g.Expect(dest.Message).To(Equal(`cluster why-phase: CloudNativePG phase "` + unrecoverable +
				`": No pods are active, the cluster needs manual intervention `))
			g.Expect(destinationOf(g, namespace, "why", "sched").State).To(Equal(v1alpha1.DestinationProvisioning))
		}, timeout).Should(Succeed())
	})

	It("fails a destination whose initdb refuses the configuration twice, with the server's message", func() {
		DeferCleanup(startOperator(time.Hour, func(reconciler *LoggingBenchmarkReconciler) {
			reconciler.podLogs = containerLogs{"initdb": initdbRefusedLog}
		}))
		Expect(k8sClient.Create(ctx, newDestinationsBenchmark("conf", "csv"))).To(Succeed())
		getCluster(namespace, "conf-csv")
		failed := func(status *corev1.PodStatus) {
			status.Phase = corev1.PodFailed
			status.ContainerStatuses = []corev1.ContainerStatus{{Name: "initdb", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"},
			}}}
		}
		createClusterPod(namespace, "conf-csv", "conf-csv-1-initdb-a", "conf-csv-1-initdb", failed)

		By("waiting after the first refusal, which the Job retries")
		first := "cluster conf-csv: pod conf-csv-1-initdb-a: container initdb exited with code 1: " + refusedWorkMem
		Eventually(func(g Gomega) {
			dest := destinationOf(g, namespace, "conf", "csv")
			g.Expect(dest.State).To(Equal(v1alpha1.DestinationProvisioning))
			g.Expect(dest.Message).To(Equal(first))
		}, timeout).Should(Succeed())

		createClusterPod(namespace, "conf-csv", "conf-csv-1-initdb-b", "conf-csv-1-initdb", failed)
		Eventually(func(g Gomega) {
			dest := destinationOf(g, namespace, "conf", "csv")
			g.Expect(dest.State).To(Equal(v1alpha1.DestinationFailed))
			// Either pod is the newest when both were created within the same second.
			g.Expect(dest.Message).To(MatchRegexp(`^cluster conf-csv: pod conf-csv-1-initdb-[ab] \(2 failures\): `))
			g.Expect(dest.Message).To(HaveSuffix("container initdb exited with code 1: " + refusedWorkMem))
		}, timeout).Should(Succeed())
		expectPhase(namespace, "conf", v1alpha1.PhaseFailed)
	})
})
