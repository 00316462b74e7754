//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers"
	"github.com/logbench/logbench/internal/meter"
)

// expectClosedPorts checks the NetworkPolicy of each of benchmark's clusters against the
// pods that ran: it selects the cluster's instance pods, admits to the meter's port (and
// a shipper's metrics port) only the pods of the destination's run Jobs, and leaves
// PostgreSQL's port open. Then it connects, as the network enforces the policies (the
// local cluster with kube-router's network policy controller, kind with kindnet's): from
// a pod outside the runs, every closed port of every instance refuses while PostgreSQL's
// answers; from a pod labelled as one destination's run pods, its closed ports answer.
func expectClosedPorts(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	outside := map[string]int{}
	var runTargets map[string]int
	var runLabels map[string]string
	for _, destination := range benchmark.Status.Destinations {
		what := "the NetworkPolicy of cluster " + destination.ClusterName
		policy := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmark.Namespace, Name: destination.ClusterName + "-logbench"},
			policy)).To(Succeed(), what)
		Expect(policy.OwnerReferences).To(ContainElement(HaveField("UID", benchmark.UID)), what)
		Expect(policy.Spec.Ingress).To(HaveLen(2), what)
		open, closed := policy.Spec.Ingress[0], policy.Spec.Ingress[1]
		Expect(open.From).To(BeEmpty(), what)
		Expect(open.Ports).To(ContainElement(HaveField("Port.IntVal", int32(5432))), what)
		Expect(closed.Ports).To(ContainElement(HaveField("Port.IntVal", int32(meter.Port))), what)
		Expect(closed.Ports).NotTo(ContainElement(HaveField("Port.IntVal", int32(5432))), what)

		selected, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		Expect(closed.From).To(HaveLen(1), what)
		admitted, err := metav1.LabelSelectorAsSelector(closed.From[0].PodSelector)
		Expect(err).NotTo(HaveOccurred())

		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmark.Namespace))).To(Succeed())
		var instances, runs int
		var instanceIP string
		for _, pod := range pods.Items {
			podLabels := labels.Set(pod.Labels)
			isInstance := pod.Labels[cnpgClusterLabel] == destination.ClusterName
			isRun := pod.Labels[controllers.LabelBenchmark] == benchmark.Name &&
				pod.Labels[controllers.LabelDestination] == destination.Name && pod.Labels["batch.kubernetes.io/job-name"] != ""
			Expect(selected.Matches(podLabels)).To(Equal(isInstance), "%s selects pod %s", what, pod.Name)
			Expect(admitted.Matches(podLabels)).To(Equal(isRun), "%s admits pod %s", what, pod.Name)
			if isInstance {
				instances++
				if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
					instanceIP = pod.Status.PodIP
				}
			}
			if isRun {
				runs++
			}
		}
		Expect(instances).To(BeNumerically(">", 0), fmt.Sprintf("%s: no instance pod to check", what))
		Expect(runs).To(BeNumerically(">", 0), fmt.Sprintf("%s: no run pod to check", what))

		Expect(instanceIP).NotTo(BeEmpty(), "%s: no running instance pod to connect to", what)
		// PostgreSQL answering shows that the network reaches the pod; a minute allows
		// for a probe pod whose network is not ready yet.
		outside[net.JoinHostPort(instanceIP, "5432")] = 60
		closedTargets := map[string]int{}
		for _, port := range closed.Ports {
			target := net.JoinHostPort(instanceIP, fmt.Sprint(port.Port.IntVal))
			outside[target] = 1
			// The network admits a new pod once it has programmed its address.
			closedTargets[target] = 30
		}
		// One destination's run pods are enough: the one with the most closed ports.
		if len(closedTargets) > len(runTargets) {
			runTargets, runLabels = closedTargets, maps.Clone(closed.From[0].PodSelector.MatchLabels)
			runLabels[batchv1.JobNameLabel] = "networkpolicy-probe"
		}
	}

	By("connecting to every instance's ports from a pod outside the runs")
	for target, result := range probeConnections(ctx, "networkpolicy-outside", nil, outside) {
		if strings.HasSuffix(target, ":5432") {
			Expect(result).To(Equal("open"), "PostgreSQL at %s from a pod outside the runs", target)
		} else {
			Expect(result).To(Equal("closed"), "%s from a pod outside the runs: the NetworkPolicy must refuse it", target)
		}
	}
	By("connecting to one destination's closed ports from a pod labelled as its run pods")
	for target, result := range probeConnections(ctx, "networkpolicy-run", runLabels, runTargets) {
		Expect(result).To(Equal("open"), "%s from a pod labelled as the destination's run pods", target)
	}
}

// probeScript connects to each HOST:PORT=ATTEMPTS argument until it answers, at most
// ATTEMPTS times a second apart, and prints "HOST:PORT open" or "HOST:PORT closed".
const probeScript = `
for argument in "$@"; do
  target=${argument%=*} attempts=${argument##*=} result=closed
  until timeout 1 bash -c "exec 3<>/dev/tcp/${target%:*}/${target##*:}" 2>/dev/null && result=open; do
    attempts=$((attempts - 1))
    [ "$attempts" -gt 0 ] || break
    sleep 1
  done
  echo "$target $result"
done`

// probeConnections runs a pod with podLabels in the benchmark namespace that connects to
// each target (host:port, with its attempts) and returns "open" or "closed" for each.
func probeConnections(ctx context.Context, name string, podLabels map[string]string,
	targets map[string]int) map[string]string {
	args := make([]string, 0, 3+len(targets))
	args = append(args, "-c", probeScript, "probe")
	for target, attempts := range targets {
		args = append(args, fmt.Sprintf("%s=%d", target, attempts))
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchmarkNamespace, Labels: podLabels},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: new(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(26)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: postgresImage, Command: []string{"bash"}, Args: args,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, pod))).To(Succeed())
	})
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded), "probe pod %s", name)
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	log, err := clientset.CoreV1().Pods(benchmarkNamespace).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	_, _ = fmt.Fprintf(GinkgoWriter, "probe pod %s:\n%s", name, log)
	results := map[string]string{}
	for line := range strings.Lines(string(log)) {
		if target, result, found := strings.Cut(strings.TrimSpace(line), " "); found {
			results[target] = result
		}
	}
	Expect(results).To(HaveLen(len(targets)), "probe pod %s printed a result for each target", name)
	return results
}
