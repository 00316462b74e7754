//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/meter"
)

// expectClosedPorts checks the NetworkPolicy of each of benchmark's clusters against the
// pods that ran: it selects the cluster's instance pods, which carry logbench's label
// through the Cluster's inheritedMetadata, admits the destination's runner to
// PostgreSQL, the meter and a shipper's metrics, and opens no port to every peer. Then
// it connects, as the network enforces the policies (the local cluster and kind's
// offline node with kube-router's network policy controller, kind's own node with
// kindnetd's): from a pod outside the runs, labelled as CloudNativePG's operator but in
// the benchmark's namespace, every port of every instance refuses, PostgreSQL's, the
// instance manager's and the metrics exporter's included; from a pod labelled as one
// destination's runner, PostgreSQL and its closed ports answer, the instance manager
// and the exporter refuse. CloudNativePG's operator reaching the instance manager shows
// in every cluster becoming ready.
func expectClosedPorts(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	apiServer := &corev1.Service{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, apiServer)).To(Succeed())
	// The API server answering shows that the probe pod's network is up, so that a
	// refusal is the policy's; a minute allows for a pod whose network is not ready yet.
	reachable := net.JoinHostPort(apiServer.Spec.ClusterIP, "443")
	outside := map[string]int{reachable: 60}
	var runTargets map[string]int
	var runLabels map[string]string
	var runInstanceIP string
	for _, destination := range benchmark.Status.Destinations {
		what := "the NetworkPolicy of cluster " + destination.ClusterName
		policy := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmark.Namespace, Name: destination.ClusterName + "-logbench"},
			policy)).To(Succeed(), what)
		Expect(policy.OwnerReferences).To(ContainElement(HaveField("UID", benchmark.UID)), what)
		Expect(policy.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue(builders.LabelCluster, destination.ClusterName), what)
		var runRule *networkingv1.NetworkPolicyIngressRule
		for i, rule := range policy.Spec.Ingress {
			Expect(rule.From).NotTo(BeEmpty(), "%s: rule %d admits every peer", what, i)
			if slices.ContainsFunc(rule.Ports, func(port networkingv1.NetworkPolicyPort) bool {
				return port.Port.IntVal == meter.Port
			}) {
				runRule = &policy.Spec.Ingress[i]
			}
		}
		Expect(runRule).NotTo(BeNil(), "%s: no rule admits to the meter", what)
		Expect(runRule.Ports).To(ContainElement(HaveField("Port.IntVal", int32(5432))), what)

		selected, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		// The runner, and the pods of an older operator's Jobs still running at an upgrade.
		admitted := peersSelector(runRule.From)

		runner := labels.SelectorFromSet(builders.RunnerLabels(benchmark.Name, destination.Name))
		Expect(admitted(labels.Set(builders.RunnerLabels(benchmark.Name, destination.Name)))).To(BeTrue(),
			"%s admits the destination's runner", what)
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmark.Namespace))).To(Succeed())
		var instances int
		var instanceIP string
		for _, pod := range pods.Items {
			podLabels := labels.Set(pod.Labels)
			isInstance := pod.Labels[cloudnativepg.ClusterLabel] == destination.ClusterName
			Expect(selected.Matches(podLabels)).To(Equal(isInstance), "%s selects pod %s", what, pod.Name)
			Expect(admitted(podLabels)).To(Equal(runner.Matches(podLabels)), "%s admits pod %s", what, pod.Name)
			if isInstance {
				instances++
				if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
					instanceIP = pod.Status.PodIP
				}
			}
		}
		Expect(instances).To(BeNumerically(">", 0), fmt.Sprintf("%s: no instance pod to check", what))

		Expect(instanceIP).NotTo(BeEmpty(), "%s: no running instance pod to connect to", what)
		// The network admits a new pod once it has programmed its address: a minute for
		// PostgreSQL, which the runner's pod reaches first.
		runPorts := map[string]int{net.JoinHostPort(instanceIP, "5432"): 60}
		for _, port := range []int32{5432, 8000, 9187} {
			outside[net.JoinHostPort(instanceIP, fmt.Sprint(port))] = 1
		}
		for _, port := range runRule.Ports {
			target := net.JoinHostPort(instanceIP, fmt.Sprint(port.Port.IntVal))
			outside[target] = 1
			if port.Port.IntVal != 5432 {
				runPorts[target] = 30
			}
		}
		// One destination's runner is enough: the one with the most ports.
		if len(runPorts) > len(runTargets) {
			runTargets, runLabels, runInstanceIP = runPorts, builders.RunnerLabels(benchmark.Name, destination.Name), instanceIP
		}
	}
	// The runners need neither the instance manager nor the metrics exporter.
	for _, port := range []string{"8000", "9187"} {
		runTargets[net.JoinHostPort(runInstanceIP, port)] = 1
	}

	By("connecting to every instance's ports from a pod outside the runs, labelled as CloudNativePG's operator")
	for target, result := range probeConnections(ctx, "networkpolicy-outside", cloudNativePGOperatorLabels, outside) {
		if target == reachable {
			Expect(result).To(Equal("open"), "the API server at %s from the probe pod: its network is not up", target)
		} else {
			Expect(result).To(Equal("closed"), "%s from a pod outside the runs: the NetworkPolicy must refuse it. "+
				"A cluster whose network enforces no NetworkPolicy (no policy controller beside its CNI) answers: "+
				"logbench's policies then isolate nothing, and the benchmark's isolation rests on the cluster alone", target)
		}
	}
	By("connecting to one destination's instance from a pod labelled as its runner's, once the runners are gone")
	// A runner's ReplicaSet would adopt the probe, which carries its labels.
	Eventually(func(g Gomega) {
		runners := &appsv1.DeploymentList{}
		g.Expect(k8sClient.List(ctx, runners, client.InNamespace(benchmark.Namespace),
			client.MatchingLabels(builders.BenchmarkRunnerLabels(benchmark.Name)))).To(Succeed())
		g.Expect(runners.Items).To(BeEmpty(), "the finished benchmark's runners")
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	for target, result := range probeConnections(ctx, "networkpolicy-run", runLabels, runTargets) {
		port := target[strings.LastIndex(target, ":")+1:]
		if port == "8000" || port == "9187" {
			Expect(result).To(Equal("closed"), "%s from a pod labelled as the destination's runner", target)
		} else {
			Expect(result).To(Equal("open"), "%s from a pod labelled as the destination's runner", target)
		}
	}
}

// peersSelector tells whether a pod of the policy's namespace with the given labels is
// among peers, each of which selects pods of that namespace.
func peersSelector(peers []networkingv1.NetworkPolicyPeer) func(labels.Set) bool {
	GinkgoHelper()
	selectors := make([]labels.Selector, 0, len(peers))
	for _, peer := range peers {
		Expect(peer.NamespaceSelector).To(BeNil(), "a peer of another namespace")
		Expect(peer.PodSelector).NotTo(BeNil(), "a peer that is not a pod")
		selector, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		selectors = append(selectors, selector)
	}
	return func(podLabels labels.Set) bool {
		return slices.ContainsFunc(selectors, func(selector labels.Selector) bool { return selector.Matches(podLabels) })
	}
}

// cloudNativePGOperatorLabels are the labels of CloudNativePG's operator pods, which the
// instance pods admit from CloudNativePG's namespace only.
var cloudNativePGOperatorLabels = builders.DefaultCloudNativePGOperator().Labels

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
// each target (host:port, with its attempts) and returns "open" or "closed" for each. The
// targets with the most attempts, those that show the pod's network up, go first, so
// that no other is tried before the network admits the pod.
func probeConnections(ctx context.Context, name string, podLabels map[string]string,
	targets map[string]int) map[string]string {
	args := make([]string, 0, 3+len(targets))
	args = append(args, "-c", probeScript, "probe")
	ordered := slices.SortedFunc(maps.Keys(targets), func(a, b string) int {
		return cmp.Or(cmp.Compare(targets[b], targets[a]), strings.Compare(a, b))
	})
	for _, target := range ordered {
		args = append(args, fmt.Sprintf("%s=%d", target, targets[target]))
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
