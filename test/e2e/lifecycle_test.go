//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// The lifecycle specs do what users do to benchmarks: get a configuration PostgreSQL
// refuses, delete a benchmark and apply its file again at once, delete one mid-run; and
// check that logbench says why, runs again cleanly, and leaves nothing behind.
var _ = Describe("lifecycle", Label("lifecycle"), func() {
	It("fails a destination whose server refuses its configuration without waiting, with the server's message",
		func(ctx SpecContext) {
			refused := newBenchmark("refused")
			refused.Spec.Baseline.Enabled = false
			refused.Spec.Destinations = []benchv1alpha1.Destination{{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog}}
			// CloudNativePG takes any value of work_mem; PostgreSQL refuses this one when the
			// initdb Job starts it, every time the Job retries.
			refused.Spec.Postgres.Parameters = map[string]benchv1alpha1.ParameterValue{"work_mem": "lots"}
			refused.Spec.Workload.Clients = []int32{1}
			refused.Spec.ClusterReadyTimeout = &metav1.Duration{Duration: benchmarkTimeout}
			refused.Spec.Cleanup = benchv1alpha1.CleanupAlways
			created := time.Now()
			createForThisSpec(ctx, refused)
			DeferCleanup(func() {
				if CurrentSpecReport().Failed() {
					printDiagnostics(refused, []string{"-n", benchmarkNamespace, "logs", "-l",
						"cnpg.io/cluster=refused-csvlog", "--prefix", "--tail=30", "--all-containers"})
				}
			})

			waitForPhase(ctx, refused, benchv1alpha1.PhaseFailed)
			_, _ = fmt.Fprintf(GinkgoWriter, "failed %s after its creation\n", time.Since(created).Round(time.Second))
			Expect(refused.Status.Destinations).To(HaveLen(1))
			destination := refused.Status.Destinations[0]
			Expect(destination.State).To(Equal(benchv1alpha1.DestinationFailed))
			Expect(destination.Message).To(HavePrefix("cluster refused-csvlog: pod refused-csvlog-1-initdb-"))
			Expect(destination.Message).To(ContainSubstring(`LOG: invalid value for parameter "work_mem": "lots"`))
			Expect(destination.Message).To(ContainSubstring(`FATAL: configuration file`))
			Expect(destination.Message).NotTo(ContainSubstring("not ready within"), "no wait for the ready timeout")

			By("saying it in kubectl get and in an event")
			Expect(kubectl(ctx, "-n", benchmarkNamespace, "get", "lbench", refused.Name)).
				To(ContainSubstring(`invalid value for parameter "work_mem"`))
			events, err := clientset.CoreV1().Events(benchmarkNamespace).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.name=" + refused.Name + ",reason=" + controllers.EventClusterFailed,
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(events.Items).To(ContainElement(HaveField("Message", destination.Message)))

			By("leaving nothing of the failed benchmark once deleted")
			deleteAndExpectNothingLeft(ctx, refused)
		})

	It("runs a benchmark deleted and applied again at once from one file to Complete; deleting it leaves nothing",
		func(ctx SpecContext) {
			reapplied := newBenchmark("reapply")
			// A file destination and a Stdout one beside the baseline: fewer clusters to
			// start twice than the suite's benchmark has.
			reapplied.Spec.Destinations = []benchv1alpha1.Destination{
				{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog},
				{Name: "stdout", Type: benchv1alpha1.DestinationStdout},
			}
			reapplied.Spec.Workload.Clients = []int32{1}
			reapplied.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
			file := writeManifest(reapplied)
			DeferCleanup(func(ctx SpecContext) {
				if CurrentSpecReport().Failed() {
					printDiagnostics(reapplied)
				}
				kubectl(ctx, "delete", "--ignore-not-found", "--wait=false", "-f", file)
			})
			kubectl(ctx, "apply", "-f", file)

			By("waiting for every cluster to be up, its volume bound")
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(reapplied), reapplied)).To(Succeed())
				g.Expect(reapplied.Status.Destinations).To(HaveLen(len(reapplied.Spec.EffectiveDestinations())))
				for _, destination := range reapplied.Status.Destinations {
					if destination.State == benchv1alpha1.DestinationFailed {
						StopTrying(fmt.Sprintf("destination %s failed: %s %s", destination.Name, destination.Message,
							nodeTrouble(ctx))).Now()
					}
					g.Expect(destination.State).To(Equal(benchv1alpha1.DestinationReady), destination.Name)
				}
			}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(5 * time.Second).Should(Succeed())
			first := reapplied.UID

			By("kubectl delete -f, then kubectl apply -f of the same file at once")
			kubectl(ctx, "delete", "-f", file)
			kubectl(ctx, "apply", "-f", file)
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(reapplied), reapplied)).To(Succeed())
			Expect(reapplied.UID).NotTo(Equal(first), "a new benchmark")
			waitWithKubectl(ctx, reapplied)
			for _, destination := range reapplied.Status.Destinations {
				Expect(destination.State).NotTo(Equal(benchv1alpha1.DestinationFailed), destination.Message)
				cluster := &metav1.PartialObjectMetadata{}
				cluster.SetGroupVersionKind(cloudnativepg.ClusterGVK)
				Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: benchmarkNamespace,
					Name: destination.ClusterName}, cluster)).To(Succeed())
				Expect(metav1.IsControlledBy(cluster, reapplied)).To(BeTrue(), "cluster %s is the new benchmark's",
					destination.ClusterName)
			}

			By("leaving nothing of the finished benchmark once deleted with kubectl delete -f")
			clusters := clusterNamesOf(reapplied)
			kubectl(ctx, "delete", "-f", file)
			expectNothingLeft(ctx, reapplied.Name, reapplied.UID, clusters)
		})

	It("leaves nothing of a benchmark deleted mid-run: clusters, volume claims, runners, syslog receiver, policies",
		func(ctx SpecContext) {
			midRun := newBenchmark("midrun")
			midRun.Spec.Baseline.Enabled = false
			midRun.Spec.Destinations = []benchv1alpha1.Destination{
				{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog},
				{Name: "udp", Type: benchv1alpha1.DestinationSyslog, Syslog: &benchv1alpha1.SyslogSpec{
					Transport: benchv1alpha1.SyslogUDP,
				}, Shipper: &benchv1alpha1.ShipperSpec{
					Kind: benchv1alpha1.ShipperFluentBit, Image: shipping.fluentBitImage, Output: benchv1alpha1.OutputNull,
				}},
			}
			midRun.Spec.Workload.Clients = []int32{1}
			midRun.Spec.Workload.Duration = metav1.Duration{Duration: 30 * time.Second}
			createForThisSpec(ctx, midRun)
			DeferCleanup(func() {
				if CurrentSpecReport().Failed() {
					printDiagnostics(midRun)
				}
			})

			By("deleting it while a run runs")
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(midRun), midRun)).To(Succeed())
				g.Expect(midRun.Status.Phase).To(Equal(benchv1alpha1.PhaseRunning))
				g.Expect(midRun.Status.Progress.RunsDone).To(BeZero(), "the first run still runs")
			}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(2 * time.Second).Should(Succeed())
			deleteAndExpectNothingLeft(ctx, midRun)
		})
})

// kubectl runs kubectl against the cluster under test, as a user does, and returns its
// output; it fails the spec when kubectl fails.
func kubectl(ctx context.Context, args ...string) string {
	GinkgoHelper()
	args = append(slices.Clone(kubectlArgs), args...)
	output, err := exec.CommandContext(ctx, "kubectl", args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), output)
	_, _ = fmt.Fprintf(GinkgoWriter, "kubectl %s\n%s", strings.Join(args, " "), output)
	return string(output)
}

// writeManifest writes benchmark as a user's file for kubectl apply -f and returns its
// path.
func writeManifest(benchmark *benchv1alpha1.LoggingBenchmark) string {
	GinkgoHelper()
	object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(benchmark)
	Expect(err).NotTo(HaveOccurred())
	delete(object, "status")
	object["apiVersion"] = benchv1alpha1.GroupVersion.String()
	object["kind"] = "LoggingBenchmark"
	object["metadata"] = map[string]any{"name": benchmark.Name, "namespace": benchmark.Namespace}
	manifest, err := yaml.Marshal(object)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), benchmark.Name+".yaml")
	Expect(os.WriteFile(path, manifest, 0o600)).To(Succeed())
	return path
}

// clusterNamesOf are the names of the benchmark's clusters.
func clusterNamesOf(benchmark *benchv1alpha1.LoggingBenchmark) []string {
	destinations := benchmark.Spec.EffectiveDestinations()
	names := make([]string, 0, len(destinations))
	for _, destination := range destinations {
		names = append(names, benchmark.Name+"-"+destination.Name)
	}
	return names
}

// deleteAndExpectNothingLeft deletes the benchmark, as read last, and checks that nothing
// of it remains.
func deleteAndExpectNothingLeft(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), benchmark)).To(Succeed())
	uid, clusters := benchmark.UID, clusterNamesOf(benchmark)
	Expect(k8sClient.Delete(ctx, benchmark)).To(Succeed())
	expectNothingLeft(ctx, benchmark.Name, uid, clusters)
}

// leftoverKinds are every kind logbench creates for a benchmark (Clusters, shipper and
// receiver ConfigMaps, NetworkPolicies, the runners' and receivers' Deployments, the
// receivers' Services, the agent's ServiceAccount and RoleBindings) and that CloudNativePG or Kubernetes create for
// those (volume claims, pods, ReplicaSets, Secrets, Services, Roles and RoleBindings,
// PodDisruptionBudgets), with the cluster-scoped bindings, which nothing may hold.
var leftoverKinds = []schema.GroupVersionKind{
	cloudnativepg.ClusterGVK,
	{Version: "v1", Kind: "PersistentVolumeClaim"}, {Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "ServiceAccount"},
	{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
}

// expectNothingLeft waits for every object of the deleted benchmark named name with uid,
// whose clusters were clusters, to be gone: owned by it, labelled as its own or as one of
// its clusters', or named after one of its clusters. The agent's ServiceAccount and
// RoleBinding, which the benchmarks of the namespace share, may stay for the others, but
// without the deleted benchmark among their owners.
func expectNothingLeft(ctx context.Context, name string, uid types.UID, clusters []string) {
	GinkgoHelper()
	ofBenchmark := func(object *metav1.PartialObjectMetadata) string {
		for _, owner := range object.OwnerReferences {
			if owner.UID == uid {
				return "owned by it"
			}
		}
		if object.Labels[builders.LabelBenchmark] == name {
			return "labelled as its own"
		}
		for _, cluster := range clusters {
			if object.Labels["cnpg.io/cluster"] == cluster {
				return "labelled as its cluster " + cluster + "'s"
			}
			if object.Name == cluster || strings.HasPrefix(object.Name, cluster+"-") {
				return "named after its cluster " + cluster
			}
		}
		return ""
	}
	start := time.Now()
	Eventually(func(g Gomega) {
		var left []string
		for _, kind := range leftoverKinds {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
			options := []client.ListOption{client.InNamespace(benchmarkNamespace)}
			if kind.Kind == "ClusterRoleBinding" {
				options = nil
			}
			g.Expect(k8sClient.List(ctx, list, options...)).To(Succeed(), kind.Kind)
			for i := range list.Items {
				if why := ofBenchmark(&list.Items[i]); why != "" {
					left = append(left, fmt.Sprintf("%s %s (%s)", kind.Kind, list.Items[i].Name, why))
				}
			}
		}
		g.Expect(left).To(BeEmpty(), "left of benchmark %s", name)
	}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	_, _ = fmt.Fprintf(GinkgoWriter, "nothing of benchmark %s left %s after its deletion\n", name,
		time.Since(start).Round(time.Second))
}
